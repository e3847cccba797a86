"""The kernels spelled for NVIDIA's compiler (inline PTX: tensor-core instructions, asynchronous copies,
warp shuffles, the device-wide fence of kernels that add their K slices up) built for NVPTX by clang's
OpenCL compiler where the machine has one: the code around the PTX, which only NVIDIA's OpenCL
compiles otherwise, is checked on any machine with clang (skipped without it)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import pytest

from autogemm.codelets.gemv import GemvParams
from autogemm.codelets.gemv import render as render_gemv
from autogemm.codelets.nvidia_mma import MmaParams
from autogemm.codelets.registry import render
from autogemm.codelets.subgroup import SubgroupParams
from autogemm.codelets.writer import NVIDIA_FENCE_OPTIONS
from autogemm.dtypes import DTYPES

CLANG = next((path for name in ("clang", "clang-18", "clang-17", "clang-16", "clang-15")
              if (path := shutil.which(name))), None)

MMA = MmaParams(layout="NT", shape="m16n8k8", warps_m=2, warps_n=2, tiles_m=2, tiles_n=4, tile_k=32, stages=3,
                vector_width=4, mma="ptx", copy="async")
REGISTERS = dataclasses.replace(MMA, copy="registers", stages=2)
CASES = [  # (configuration, dtype, guarded, summed, stream, what the PTX must hold)
    (MMA, "s.3xtf32", False, False, False, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    (MMA.in_layout("TN", DTYPES["s.3xtf32"]), "s.3xtf32", True, True, False, "membar.gl"),
    (dataclasses.replace(REGISTERS, vector_width=1, complex_method="3m"), "c.3xtf32", True, False, True, "mma.sync"),
    (dataclasses.replace(REGISTERS, shape="m16n8k4", tile_k=16, vector_width=2), "d", False, True, False, "membar.gl"),
    (dataclasses.replace(MMA, layout="TN", shape="m16n8k4", tile_k=16, vector_width=2), "d", True, False, False,
     "cp.async.ca.shared.global"),
    (dataclasses.replace(REGISTERS, shape="m16n8k4", tile_k=16, vector_width=1), "z", True, True, False, "atom"),
    (SubgroupParams(layout="NN", shuffle="ptx"), "s", True, True, False, "shfl.sync"),
]


@pytest.mark.skipif(CLANG is None, reason="no clang on this machine")
@pytest.mark.parametrize("params,key,guarded,summed,stream,holds", CASES,
                         ids=[f"{c[1]}-{c[0].describe().split()[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_nvidia_spelling_builds_for_nvptx(tmp_path, params, key, guarded, summed, stream, holds):
    source = render(params, key, guarded=guarded, summed=summed, stream=stream)
    ptx = _built(tmp_path, source.source, [*source.options, *(NVIDIA_FENCE_OPTIONS if summed else ())])
    assert holds in ptx


@pytest.mark.skipif(CLANG is None, reason="no clang on this machine")
@pytest.mark.parametrize("key", ["d", "s.tf32"])
def test_a_kernel_that_reads_its_slices_for_a_merge_builds_for_nvptx(tmp_path, key):
    """The guarded kernel of a split it does not add up finds its slice's depth and needs no fence."""
    params = dataclasses.replace(MMA, layout="TN", shape="m16n8k4", tile_k=16, vector_width=2) if key == "d" else MMA
    source = render(params, key, guarded=True, sliced=True)
    ptx = _built(tmp_path, source.source, list(source.options))
    assert "cp.async" in ptx and "membar.gl" not in ptx and "const int depth" in source.source


@pytest.mark.skipif(CLANG is None, reason="no clang on this machine")
@pytest.mark.parametrize("layout", ["N", "T"])
def test_the_gemv_kernels_sum_of_slices_builds_for_nvptx(tmp_path, layout):
    """GEMV adds the slices of a split reduction up in its kernel, behind the same device-wide fence."""
    source = render_gemv(GemvParams(layout, 32, 4, 2, 2, 8, vectors=4), DTYPES["z"], vectors=4)
    ptx = _built(tmp_path, source.source, [*source.options, *NVIDIA_FENCE_OPTIONS])
    assert "membar.gl" in ptx and "atom" in ptx


def _built(tmp_path, source: str, options: list[str]) -> str:
    """The PTX clang builds ``source`` into, with the ``-D`` of ``options``."""
    (tmp_path / "kernel.cl").write_text(source)
    # (OpenCL C has no asm keyword of its own: NVIDIA's compiler takes GNU's, which clang spells __asm__)
    built = subprocess.run([CLANG, "-x", "cl", "-cl-std=CL1.2", "-O2", "-S", "-Dasm=__asm__", "-Xclang",
                            "-finclude-default-header", "-target", "nvptx64-nvidia-nvcl",
                            *(o for o in options if o.startswith("-D")), "-o", str(tmp_path / "kernel.ptx"),
                            str(tmp_path / "kernel.cl")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[:2000]
    return (tmp_path / "kernel.ptx").read_text()
