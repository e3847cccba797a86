"""Options that make NVRTC return ptxas's report of a kernel's registers and spills."""

#: ptxas's report (-v) of a kernel compiled anew: where a CUDA driver is installed, NVRTC (12.9 on) takes a
#: kernel it compiled before from the driver's cache of compiled kernels, which comes with no report.
REPORTED = ["--ptxas-options=-v", "--no-cache"]
