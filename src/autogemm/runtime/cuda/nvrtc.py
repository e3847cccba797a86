"""``compile_cuda``: CUDA C++ to a cubin for one architecture with NVRTC (NVIDIA's runtime compiler, a
library: it needs no GPU, so CI checks that sources compile). ptxas runs inside it, so an instruction the
architecture lacks (wgmma outside sm_90a) fails here, with the compiler's log."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import BuildError

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


def compile_cuda(source: str, name: str, arch: str = HOPPER, options: Sequence[str] = ()) -> Cubin:
    """``source`` compiled for ``arch`` (e.g. sm_90a) with ``options`` besides C++17; ``BuildError`` with
    NVRTC's log when it does not compile, or where NVRTC is missing."""
    missing = cuda_missing()
    if missing:
        raise BuildError(f"cannot compile {name}: {missing}")
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
