"""``compile_cuda``: CUDA C++ to a cubin for one architecture with NVRTC (NVIDIA's runtime compiler, a
library: it needs no GPU, so CI checks that sources compile). ptxas runs inside it, so an instruction the
architecture lacks (wgmma outside sm_90a) fails here, with the compiler's log.

NVRTC runs in a child process of its own (``compile_worker``, kept for the process's life): loaded
into a process that builds OpenCL programs with NVIDIA's driver, it makes every later build fail (on
the H100: "Don't understand command line argument sm_90"), whereas a cubin compiled elsewhere loads
beside OpenCL without harm. The child is ``python -m``, not a multiprocessing one, so a caller's script
needs no ``if __name__ == "__main__"``."""

from __future__ import annotations

import atexit
import base64
import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import BuildError
from ..child import Child, ChildGone

#: Hopper with its architecture-specific instructions (wgmma, setmaxnreg): what the CUDA path targets.
HOPPER = "sm_90a"


@dataclass(frozen=True)
class Cubin:
    """A compiled module: its machine code for ``arch`` and NVRTC's log (warnings)."""

    name: str
    arch: str
    image: bytes
    log: str


@functools.lru_cache(maxsize=1)
def cuda_missing() -> str | None:
    """Why CUDA sources cannot be compiled here (the bindings or NVRTC absent), or None."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return "the CUDA bindings are not installed: pip install 'autogemm[cuda]'"
    try:
        result, *_ = nvrtc.nvrtcVersion()
    except Exception as exc:   # noqa: BLE001 - a library that cannot be loaded, whatever it raises
        return f"NVRTC cannot be loaded: {exc}"
    return None if result == nvrtc.nvrtcResult.NVRTC_SUCCESS else f"NVRTC answers {result.name}"


#: Seconds the compiler's process may take to start, and to compile one source.
START_SECONDS, COMPILE_SECONDS = 60.0, 300.0

_compiler: Child | None = None
_compiler_lock = threading.Lock()


def compile_cuda(source: str, name: str, arch: str = HOPPER, options: Sequence[str] = ()) -> Cubin:
    """``source`` compiled for ``arch`` (e.g. sm_90a) with ``options`` besides C++17, in the compiler's
    process; ``BuildError`` with NVRTC's log when it does not compile, or where NVRTC is missing."""
    global _compiler
    missing = cuda_missing()
    if missing:
        raise BuildError(f"cannot compile {name}: {missing}")
    with _compiler_lock:           # one compile at a time: the child answers in order
        if _compiler is None:
            _compiler = Child("autogemm.runtime.cuda.compile_worker", {"hello": True}, START_SECONDS)
            atexit.register(_compiler.close)
        try:
            _compiler.send({"source": source, "name": name, "arch": arch, "options": list(options)})
            reply = _compiler.expect("image", COMPILE_SECONDS)
        except ChildGone as gone:
            raise BuildError(f"the CUDA compiler's process failed compiling {name}: {gone}") from None
    if reply["image"] is None:
        raise BuildError(reply["log"])
    return Cubin(name, arch, base64.b64decode(reply["image"]), reply["log"])


def compile_here(source: str, name: str, arch: str, options: Sequence[str]) -> Cubin:
    """``compile_cuda`` in this process (the compiler's)."""
    from cuda.bindings import nvrtc

    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    result, program = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    if result != ok:
        raise BuildError(f"NVRTC could not take {name}: {result.name}")
    try:
        flags = [f"-arch={arch}".encode(), b"-std=c++17", *(o.encode() for o in options)]
        (compiled,) = nvrtc.nvrtcCompileProgram(program, len(flags), flags)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        text = log.rstrip(b"\0 ").decode(errors="replace")
        if compiled != ok:
            raise BuildError(f"NVRTC could not compile {name} for {arch}:\n{text}")
        _, size = nvrtc.nvrtcGetCUBINSize(program)
        image = b" " * size
        nvrtc.nvrtcGetCUBIN(program, image)
        return Cubin(name, arch, image, text)
    finally:
        nvrtc.nvrtcDestroyProgram(program)
