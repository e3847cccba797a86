"""The sm_90a FP64 family: configurations render kernels that name their parameters and that NVRTC
compiles for sm_90a without spilling (CI, no GPU needed); malformed ones are refused; on an H100 the
kernels agree with float64 and complex128 products computed on the host (over more tiles of K than stages, blocks that
compute several blocks of C in turn, and M, N and K that are not multiples of the block)."""

from __future__ import annotations

import ctypes
from dataclasses import replace

import numpy as np
import pytest
from ptxas_report import REPORTED

from autogemm.blas.cuda_gemm import layer_arguments, shared_k_arguments
from autogemm.codelets.dmma import DmmaParams, render, space
from autogemm.codelets.dmma.params import DTYPES, GROUPS, MMA_K, STAGES
from autogemm.runtime.cuda import compile_cuda, cuda_missing
from autogemm.runtime.cuda.context import Complex128

# every dtype and warp layout at the default depth, group and instruction, every instruction of each dtype, and
# every depth and group of the default
DEFAULT = (DmmaParams.stages, DmmaParams.group, 1, DmmaParams.mma_k, False)
CONFIGS = [space(dtype).config(point) for dtype in DTYPES for point in space(dtype).points()]
CONFIGS = [c for c in CONFIGS if (c.stages, c.group, c.cluster, c.mma_k, c.reads_mn_major) == DEFAULT]
CONFIGS += [c for c in (DmmaParams(dtype, warp_m=32, warp_n=32, mma_k=k) for dtype in DTYPES for k in MMA_K)
            if c.mma_k != DmmaParams.mma_k and c.malformed() is None]
CONFIGS += [c for c in (DmmaParams(stages=s) for s in STAGES if s != DmmaParams.stages) if c.malformed() is None]
CONFIGS += [DmmaParams(group=g) for g in GROUPS if g != DmmaParams.group]
CONFIGS += [DmmaParams("d", cluster=2), DmmaParams("z", warp_m=32, warp_n=32, cluster=2, mma_k=4)]
# groups of one row of clusters, in the largest warp tiles: ptxas spilled 4 bytes where the divisions by
# the group's rows were left to it
CONFIGS += [DmmaParams("d", 2, 2, 32, 64, 4, 1, cluster=2, mma_k=4), DmmaParams("z", 2, 1, 64, 16, 4, 1, cluster=2)]


def test_the_spaces_hold_every_well_formed_configuration_and_no_other():
    for dtype, count in (("d", 1950), ("z", 1002)):
        configs = [space(dtype).config(p) for p in space(dtype).points()]
        laying_out = [c for c in configs if not c.reads_mn_major]
        assert len(laying_out) == count        # and those reading MN-major where B's boxes are shared evenly
        assert [replace(c, reads_mn_major=False) for c in configs if c.reads_mn_major] == [
            c for c in laying_out if replace(c, reads_mn_major=True).malformed() is None]
    assert all(space("z").config(p).malformed() is None for p in space("z").points())
    with pytest.raises(ValueError, match="dtype 's'"):
        space("s")


def test_malformed_configurations_are_refused():
    assert len(CONFIGS) == 54
    assert "accumulators" in DmmaParams(warp_m=64, warp_n=64).malformed()
    assert "256 rows" in DmmaParams(consumers=2, warps_m=1, warp_m=32, warp_n=64, mma_k=4).malformed()
    assert "stages" in DmmaParams(stages=5).malformed()
    assert "shared memory of a block" in DmmaParams(stages=8).malformed()          # 8 x 64 KiB of tiles
    assert "group" in DmmaParams(group=4).malformed()
    assert DmmaParams().block_k == 16 and DmmaParams().threads == 384 and DmmaParams("z").block_k == 8
    assert "accumulators" in DmmaParams("z", warp_m=64, warp_n=32).malformed()     # real and imaginary parts
    assert "dtype" in DmmaParams("s").malformed()
    assert "over 88" in DmmaParams(warp_m=32, warp_n=64, mma_k=16).malformed()         # ptxas would spill
    # float64 holds the next instruction's fragments too: 64 + 2 x 24 at k16
    assert DmmaParams(warp_m=64, warp_n=32, mma_k=16).held == 112 and DmmaParams("z", warp_m=32, warp_n=32).held == 88
    assert "over 84" in DmmaParams(warp_m=64, warp_n=32, mma_k=8, cluster=2).malformed()
    assert "k16" in DmmaParams("z", warp_m=32, warp_n=32, mma_k=16).malformed()


@pytest.mark.parametrize("params", CONFIGS, ids=[c.describe() for c in CONFIGS])
def test_every_configuration_compiles_for_sm_90a_without_spilling(params):
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    rendered = render(params)
    assert f"#define WARP_N {params.warp_n}" in rendered.source and rendered.name in rendered.source
    cubin = compile_cuda(rendered.source, rendered.name, options=REPORTED)
    assert "0 bytes stack frame, 0 bytes spill stores" in cubin.log and "warning" not in cubin.log
    assert "Performance Loss" not in cubin.log
    assert rendered.tensor_boxes == ((params.block_m, 16), (params.block_n // params.cluster, 16))
    assert rendered.tensor_shape(5, 32) == (5, 32 * params.element_bytes // 8)


MN_CONFIGS = [DmmaParams("d", mma_k=8), DmmaParams("d", warp_m=32, warp_n=32, mma_k=4),
              DmmaParams("d", cluster=2), DmmaParams("z", warp_m=32, warp_n=32),
              DmmaParams("z", warp_m=32, warp_n=16, cluster=2, mma_k=4)]
MN_CONFIGS = [replace(c, reads_mn_major=True) for c in MN_CONFIGS]
LAYOUTS = [(False, True), (True, False), (True, True)]
NAMES = {(False, True): "dmma_nn_", (True, False): "dmma_tt_", (True, True): "dmma_tn_"}    # op(A) op(B), C = A B^T


@pytest.mark.parametrize("params", MN_CONFIGS, ids=[c.describe() for c in MN_CONFIGS])
def test_operands_are_read_mn_major_too(params):
    """A stored K x M, B stored K x N, or both, read by TMA in boxes of 128 bytes of M (N) by the tile's K,
    without spilling; not B's tile shared by a cluster in part of a box."""
    for mn_major in LAYOUTS:
        rendered = render(params, mn_major)
        assert rendered.mn_major == mn_major and rendered.name.startswith(NAMES[mn_major])
        assert f"#define B_MN {str(mn_major[1]).lower()}" in rendered.source
        # an MN-major box: the tile's K by 128 bytes of M (N), 16 float64 (8 complex128); its shape in float64
        rows = (params.block_m, params.block_n // params.cluster)
        assert rendered.tensor_boxes == tuple((params.block_k, 16) if mn else (count, 16)
                                              for mn, count in zip(mn_major, rows))
        assert rendered.tensor_shape(100, 72, True) == (72, 100 * params.element_bytes // 8)
        if not cuda_missing():
            cubin = compile_cuda(rendered.source, rendered.name, options=REPORTED)
            assert "0 bytes stack frame, 0 bytes spill stores" in cubin.log, (mn_major, cubin.log)
    one_box = DmmaParams("d", 1, 4, 32, 16, cluster=2, reads_mn_major=True)         # B's 16 columns: one box
    assert "not shared evenly" in one_box.mn_major_problem((False, True))
    assert one_box.mn_major_problem((True, False)) is None and one_box.mn_major_problem((False, False)) is None
    assert DmmaParams().mn_major_problem((False, False)) is None
    assert "lays operands stored MN-major out" in DmmaParams().mn_major_problem((True, False))
    with pytest.raises(ValueError, match="K-major first"):
        render(DmmaParams(), (False, True))


def _swizzled(row: int, k: int, mn: bool, block_k: int, element_bytes: int) -> int:
    """Where element (row, k) of a staged tile lies (the kernel's ``offset``): rows of 128 bytes of K, or
    boxes of block_k rows (128 bytes of M or N) by K, 16-byte chunk c of each line at c XOR line mod 8."""
    line, at = (k, row % block_k * element_bytes) if mn else (row, k * element_bytes)
    return (row // block_k * block_k * 128 if mn else 0) + line * 128 + ((at & ~15) ^ ((line & 7) << 4)) + (at & 15)


@pytest.mark.parametrize("dtype", DTYPES)
def test_each_thread_finds_where_its_reads_lie_once_and_rows_16_apart_lie_a_constant_distance_apart(dtype):
    """The loop over tiles of K reads at offsets found before it (the compiler had found every read's
    swizzled offset again in every tile: 345 instructions for 32 DMMA a tile of float64, 191 since); a
    warp tile's rows 16 apart are reached by adding one constant, in both layouts of a tile."""
    params = DmmaParams(dtype)
    for mn_major in LAYOUTS + [(False, False)]:
        if params.mn_major_problem(mn_major) or replace(params, reads_mn_major=True).mn_major_problem(mn_major):
            continue
        source = render(replace(params, reads_mn_major=any(mn_major)), mn_major).source
        loop = source.rindex("for (int t = 0; t < k_count; ++t)")        # the consumers'
        assert source.count("offset<") == 2 and source.index("offset<") < loop
    rows_16 = {False: 16 * 128, True: 16 // params.block_k * params.block_k * 128}
    for mn in (False, True):
        for row in range(16):
            for k in range(params.block_k):
                at = [_swizzled(row + 16 * i, k, mn, params.block_k, params.element_bytes) for i in range(8)]
                assert all(at[i] == at[0] + i * rows_16[mn] for i in range(8))


@pytest.mark.parametrize("mma_k", MMA_K)
def test_half_a_warps_reads_of_a_float64_tile_fall_in_distinct_banks_in_either_layout(mma_k):
    """16 reads of 8 bytes (half a warp, read at once: 4 rows) hit each of the 32 banks once, for every
    register of every instruction of a tile, from a K-major tile and from an MN-major one alike: the
    kernel's own choice of K indices (``K_INDEX`` of quarter step * MMA_K / 4 + q, as ``READS`` asks it),
    evaluated here for each member of the warp; every K index of the tile read once."""
    params = DmmaParams("d", warp_m=32, warp_n=32, mma_k=mma_k, reads_mn_major=True)
    source = render(params, (False, True)).source
    assert "K_INDEX(step * MMA_K / 4 + q)" in source
    expression = next(line for line in source.splitlines() if "define K_INDEX" in line).split("K_INDEX(j)", 1)[1]
    quarters = [step * mma_k // 4 + q for step in range(params.block_k // mma_k) for q in range(params.span)]
    k_index = [[eval(expression, {"j": j, "member": member}) for member in range(4)] for j in quarters]
    assert sorted(sum(k_index, [])) == list(range(params.block_k))
    for mn in (False, True):
        for at_k in k_index:
            for first_row in range(0, 32, 4):
                hits = np.zeros(32, int)
                for lane in range(16):
                    at = _swizzled(first_row + lane // 4, at_k[lane % 4], mn, params.block_k, 8)
                    hits[[at // 4 % 32, at // 4 % 32 + 1]] += 1
                assert (hits == 1).all(), (mn, at_k, first_row, hits)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", MN_CONFIGS, ids=[c.describe() for c in MN_CONFIGS])
def test_mn_major_operands_agree_with_float64_on_hopper(hopper, params):
    """Every layout of A and B at shapes with edges on every side (M, N and K even: an operand's rows
    16-byte aligned), against float64, over a NaN C."""
    m, n, k = 2 * params.block_m - 2, 3 * params.block_n - 6, (2 * params.stages + 1) * params.block_k - 6
    for mn_major in LAYOUTS:
        got, want = _run(hopper, params, m, n, k, 1.0, 0.0, multiprocessors=4, mn_major=mn_major)
        assert np.isfinite(got).all(), mn_major
        assert np.abs(got - want).max() <= 1e-14 * np.sqrt(k) * np.abs(want).max(), mn_major


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", CONFIGS, ids=[c.describe() for c in CONFIGS])
def test_the_kernel_agrees_with_float64_on_hopper(hopper, params):
    """alpha 1 and beta 0 over a NaN-filled C (beta 0 must not read it)."""
    m, n, k = 2 * params.block_m - 3, 3 * params.block_n - 5, (2 * params.stages + 1) * params.block_k - 6
    got, want = _run(hopper, params, m, n, k, 1.0, 0.0, multiprocessors=4)      # some blocks take two of C
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() <= 1e-14 * np.sqrt(k) * np.abs(want).max()


SHARED_K = [p.sharing(True) for p in (
    DmmaParams("d", warp_m=32, warp_n=32), DmmaParams("d", warps_m=4, warp_m=32, warp_n=32, mma_k=4),
    DmmaParams("d", warp_m=32, warp_n=16, cluster=2), DmmaParams("z", warp_m=32, warp_n=16),
    DmmaParams("z", warp_m=32, warp_n=16, mma_k=4, reads_mn_major=True),
    DmmaParams("d", warp_m=64, warp_n=16, mma_k=16), DmmaParams("d", consumers=1, warps_m=2, warp_m=32, warp_n=32))]


def test_warp_tiles_that_leave_registers_share_k_and_compile_without_spilling():
    """Stream-K where a consumer thread holds at most ``SHARES_K_MAX_HELD`` float64: the kernel takes
    ``whole``, the partial sums and their counters; the largest warp tiles do not (they spilled), and the
    space refuses them sharing. A configuration not sharing has no stream-K in its kernel."""
    largest = (DmmaParams("d"), DmmaParams("d", warp_m=32, warp_n=32, mma_k=16))
    assert not any(p.sharing(True).shares_k for p in largest)
    assert all("stream-K" in replace(p, shares_k=True).malformed() for p in largest)
    assert all(p.shares_k and p.malformed() is None and "stream-K" in p.describe() for p in SHARED_K)
    for params in SHARED_K:
        unshared = render(params.sharing(False))
        assert "int whole" not in unshared.source and not unshared.name.endswith("_sk")
        rendered = render(params)
        assert "int whole, double* __restrict__ partials" in rendered.source and rendered.name.endswith("_sk")
        if not cuda_missing():
            log = compile_cuda(rendered.source, rendered.name, options=REPORTED).log
            assert "0 bytes stack frame, 0 bytes spill stores" in log, log


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", SHARED_K, ids=[c.describe() for c in SHARED_K])
def test_blocks_that_share_the_k_of_blocks_of_c_agree_with_float64_on_hopper(hopper, params, monkeypatch):
    """Over 4 blocks sharing the K of all 6 blocks of C (stream-K, parts of two blocks each, their sums
    added up a tree), edges on every side, beta 0 over a NaN C and alpha and beta reading C."""
    from autogemm.codelets import hopper as hopper_module

    monkeypatch.setattr(hopper_module, "shared_out", lambda tiles, clusters, k_tiles, *_: (0, clusters))
    m, n, k = 2 * params.block_m * params.cluster - 3, 3 * params.block_n - 5, 9 * params.block_k - 6
    for alpha, beta in ((1.0, 0.0), (0.5, -2.0)):
        got, want = _run(hopper, params, m, n, k, alpha, beta, multiprocessors=4 * params.cluster)
        assert np.isfinite(got).all() and np.abs(got - want).max() <= 1e-14 * np.sqrt(k) * np.abs(want).max()


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", [DmmaParams("d"), DmmaParams("d", mma_k=4), DmmaParams("z", warp_m=32, warp_n=32)],
                         ids=lambda p: p.describe())
def test_one_tile_of_k_and_blocks_of_c_in_turn_agree_with_float64_on_hopper(hopper, params):
    """K within one tile (float64 reads no next stage ahead) while each block computes several blocks of
    C in turn (its first tiles read anew for each)."""
    for k in (2, params.block_k):
        got, want = _run(hopper, params, 3 * params.block_m - 1, 2 * params.block_n + 3, k, 1.0, 0.0, multiprocessors=2)
        assert np.isfinite(got).all() and np.abs(got - want).max() <= 1e-14 * np.abs(want).max(), k


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", [DmmaParams("d"), DmmaParams("d", warp_m=32, warp_n=32, mma_k=16),
                                    DmmaParams("z", warp_m=32, warp_n=32),
                                    DmmaParams("z", warp_m=32, warp_n=32, cluster=2, mma_k=4)],
                         ids=lambda p: p.describe())
def test_alpha_and_beta_scale_the_product_and_c(hopper, params):
    """Three rows of blocks of C: in clusters of two, one block of the second cluster computes nothing."""
    alpha, beta = (0.5, -2.0) if params.dtype == "d" else (0.5 - 1.5j, -2.0 + 0.25j)
    got, want = _run(hopper, params, 2 * params.block_m + 7, params.block_n + 1, 3 * params.block_k, alpha, beta)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


def _run(twin, params, m, n, k, alpha, beta, multiprocessors=132, mn_major=(False, False)):
    """C = alpha A B^T + beta C on the GPU for random operands (C NaN where beta is 0), A and B stored
    transposed where ``mn_major`` says: the result, and float64's (complex128's)."""
    from autogemm.runtime.cuda import CudaContext

    rng = np.random.default_rng(7)
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (n, k))
    c = np.full((m, n), np.nan) if beta == 0 else rng.uniform(-1, 1, (m, n))
    if params.dtype == "z":
        a, b = a + 1j * rng.uniform(-1, 1, (m, k)), b + 1j * rng.uniform(-1, 1, (n, k))
        c = c + 1j * rng.uniform(-1, 1, (m, n))
    want = alpha * (a @ b.T) + (beta * c if beta != 0 else 0)
    ctx = CudaContext(twin)
    rendered = render(params, mn_major)
    function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
    da, db, dc = ctx.allocate(a.nbytes), ctx.allocate(b.nbytes), ctx.allocate(c.nbytes)
    for memory, x in ((da, np.ascontiguousarray(a.T) if mn_major[0] else a),
                      (db, np.ascontiguousarray(b.T) if mn_major[1] else b), (dc, c)):
        ctx.upload(memory, x)
    scalars = ([(Complex128(x.real, x.imag), None) for x in (complex(alpha), complex(beta))] if params.dtype == "z"
               else [(float(x), ctypes.c_double) for x in (alpha, beta)])
    box_a, box_b = rendered.tensor_boxes
    schedule, work = rendered.schedule(m, n, k, multiprocessors), []
    shared, counters = shared_k_arguments(ctx, schedule, ctx.stream, work)
    if counters is not None:
        ctx.zero(counters, counters.nbytes)
    ctx.launch(function, schedule.grid, rendered.block,
               [(ctx.tensor_map(da, rendered.tensor_shape(m, k, mn_major[0]), rendered.tensor_type, box_a), None),
                (ctx.tensor_map(db, rendered.tensor_shape(n, k, mn_major[1]), rendered.tensor_type, box_b), None),
                (dc, None), (m, ctypes.c_int), (n, ctypes.c_int), (k, ctypes.c_int),
                *layer_arguments(1, False, False), *scalars, *shared],
               rendered.shared_bytes)
    got = np.empty_like(c)
    ctx.download(got, dc)
    for memory in (da, db, dc, *work):
        memory.release()
    return got, want


def test_show_kernel_prints_a_dmma_configuration_without_a_device():
    """The CUDA path's default for the dtype, changed by --set of its integer and true/false fields."""
    from click.testing import CliRunner

    from autogemm.cli import main

    out = CliRunner().invoke(main, ["show-kernel", "--family", "dmma", "--dtype", "z", "--set", "stages=6",
                                    "--set", "reads_mn_major=false"])
    assert out.exit_code == 0 and "#define STAGES 6" in out.output and "#define ELEMENT double2" in out.output
    assert "reads MN-major" not in out.output.splitlines()[0]
    out = CliRunner().invoke(main, ["show-kernel", "--family", "dmma", "--dtype", "d", "--config", '{"mma_k": 4}'])
    assert out.exit_code == 0 and "#define MMA_K 4" in out.output       # a --config naming no family: dmma's
    for args, why in ((["--dtype", "s"], "multiplies d, z, not s"),
                      (["--dtype", "d", "--set", "dtype=3"], "is not one of"),
                      (["--dtype", "z", "--config", '{"family": "wgmma"}'], "does not compute z"),
                      (["--dtype", "d", "--set", "warp_n=64"], "a warp tile of 64 x 64")):
        out = CliRunner().invoke(main, ["show-kernel", "--family", "dmma", *args])
        assert out.exit_code != 0 and why in out.output and "Traceback" not in out.output, out.output
