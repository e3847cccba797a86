#!/usr/bin/env bash
# Usage: tools/ensure-opencl-driver.sh [PYTHON]
#
# Makes sure that autogemm, as PYTHON (default: python3) imports it, finds a device whose OpenCL compiler
# builds kernels. PoCL from PyPI (pyopencl[pocl]) is built on LLVM 14, which cannot target CPUs newer than
# itself (AMD's Zen 5 among them): every build fails with "unknown target CPU"; on a Zen 4 it builds
# small kernels but not 512-bit vector multiply-adds, which the check also builds. Where no device builds and
# this is a Debian or Ubuntu machine on which we are root, Debian's PoCL (pocl-opencl-icd) is installed:
# it chooses its target by the CPU's features, not by its model, and autogemm prefers a CPU driver that
# builds. Anywhere else it says what is missing and fails.
set -euo pipefail
python=${1:-python3}
check() { "$python" -m autogemm.cli devices --check; }

check && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's PoCL (pocl-opencl-icd), whose compiler knows this CPU" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pocl-opencl-icd >/dev/null
    check && exit 0
fi
echo "no OpenCL device here builds kernels: install a driver whose compiler knows this CPU" \
     "(Debian's or Ubuntu's pocl-opencl-icd, Intel's CPU runtime) or a GPU's driver" >&2
exit 1
