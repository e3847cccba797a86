"""The routes a GEMM call runs on, each resolved once per call signature and run by binding a call's
memory, scalars and events: one OpenCL device (``opencl``), several targets or a streamed share
(``targets``), numpy operands on the CUDA path (``cuda_host``) and CUDA tensors where they lie
(``cuda_tensors``)."""
