"""The sm_90a family: every configuration (f16, bf16, tf32) renders a kernel that names its parameters
and that NVRTC compiles for sm_90a without spilling (CI, no GPU needed); malformed ones are refused; on an
H100 the kernel's products agree with float64, over more tiles of K than stages (every barrier goes
through both parities), with blocks that each compute several blocks of C in turn, and with M, N and K
that are not multiples of the block."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from ptxas_report import REPORTED

from autogemm.blas.cuda_gemm import layer_arguments, shared_k_arguments
from autogemm.blas.defaults import CUDA_DEFAULTS
from autogemm.codelets import float32_product
from autogemm.codelets import hopper as hopper_module
from autogemm.codelets.wgmma import WgmmaParams, render, space
from autogemm.codelets.wgmma.params import GROUPS, OPERANDS, PING_PONG_RATES
from autogemm.codelets.wgmma.render import SPLIT_THREADS, split
from autogemm.runtime.cuda import compile_cuda, cuda_missing

# every tile shape and depth in the middle group, in clusters of two at the default depth, and every group
# of one of them
CONFIGS = [space(operand).config(point) for operand in OPERANDS for point in space(operand).points()]
CONFIGS = [c for c in CONFIGS if c.group == WgmmaParams.group and (c.cluster == 1 or c.stages == WgmmaParams.stages)]
CONFIGS += [WgmmaParams(group=group) for group in GROUPS if group != WgmmaParams.group]
# the tiles that run two blocks a multiprocessor, as the tile model makes them of each dtype's default
TWO_A_MULTIPROCESSOR = [tiled for key in ("h", "hs", "b", "s.tf32") for tiled, _ in CUDA_DEFAULTS[key].tilings()
                        if tiled.per_multiprocessor == 2]
CONFIGS += TWO_A_MULTIPROCESSOR
# narrow blocks of C (few columns), C stored from the registers
NARROW = [WgmmaParams("f16", 16, 1, 8, 16, out="f16"), WgmmaParams("bf16", 32, 2, 8, 16),
          WgmmaParams("tf32", 16, 1, 8, 16), WgmmaParams("3xtf32", 32, 1, 4, 8),
          WgmmaParams("f16", 32, 1, 6, 16, out="f16")]
CONFIGS += NARROW
# each dtype's default as the CUDA path runs it (3xTF32's: two stages, clusters of two)
CONFIGS += [p for p in CUDA_DEFAULTS.values() if isinstance(p, WgmmaParams) and p not in CONFIGS]


def test_the_spaces_hold_every_well_formed_configuration_and_no_other():
    assert [len(space(operand)) for operand in OPERANDS] == [198, 198, 198, 78]
    assert all(space("3xtf32").config(p).block_n <= 128 for p in space("3xtf32").points())
    with pytest.raises(ValueError, match="operand 'f32'"):
        space("f32")


def test_malformed_configurations_are_refused():
    assert len(CONFIGS) == 134 + 2 + 4 + 5 + 6  # (+ 6 defaults; 5 to 8 stages of 128 x 256: over shared memory)
    assert len(TWO_A_MULTIPROCESSOR) == 4 and all(c.malformed() is None for c in TWO_A_MULTIPROCESSOR)
    assert "shared memory a multiprocessor" in WgmmaParams("f16", 128, 1, 4, per_multiprocessor=2).malformed()
    assert "one consumer each" in WgmmaParams("f16", 64, 2, 3, per_multiprocessor=2).malformed()
    assert "128 registers a thread" in WgmmaParams("f16", 256, 1, 2, per_multiprocessor=2).malformed()
    assert "shared memory of a block" in WgmmaParams("f16", 256, 2, 5).malformed()
    assert WgmmaParams("tf32", 256, 2, 4).malformed() is None and WgmmaParams("tf32").block_k == 32
    assert "shared memory of a block" in WgmmaParams("3xtf32", 128, 2, 4).malformed()     # two planes a stage
    assert "two sets of accumulators" in WgmmaParams("3xtf32", 256, 1, 2).malformed()
    assert "stages" in WgmmaParams(stages=1).malformed()
    assert "operand" in WgmmaParams("f32").malformed()
    assert "block_n" in WgmmaParams(block_n=96).malformed()
    assert "consumers" in WgmmaParams(consumers=3).malformed()
    assert "group" in WgmmaParams(group=4).malformed()
    assert "cluster" in WgmmaParams(cluster=4).malformed()


@pytest.mark.parametrize("params", CONFIGS, ids=[c.describe() for c in CONFIGS])
def test_every_configuration_compiles_for_sm_90a_without_spilling(params):
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    rendered = render(params)
    assert f"#define BLOCK_N {params.block_n}" in rendered.source and rendered.name in rendered.source
    cubin = compile_cuda(rendered.source, rendered.name, options=REPORTED)
    # the accumulators stay in registers (no stack), and wgmma runs asynchronously (ptxas serializes it
    # where other instructions touch the accumulators in flight, and says so)
    assert "0 bytes stack frame, 0 bytes spill stores" in cubin.log and "warning" not in cubin.log
    assert "Performance Loss" not in cubin.log
    assert rendered.block == (128 * (1 + params.consumers),)


@pytest.mark.parametrize("params", TWO_A_MULTIPROCESSOR, ids=[c.describe() for c in TWO_A_MULTIPROCESSOR])
def test_two_blocks_a_multiprocessor_fit_its_registers_in_every_way_they_read(params):
    """Two blocks of one consumer share a multiprocessor's registers (128 a thread): their kernels for
    operands read MN-major and C stored transposed do not spill either."""
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    assert "__launch_bounds__(THREADS, 2)" in render(params).source and params.consumers == 1
    readings = [(True, False)] if params.operand == "tf32" else [(True, True)]
    for mn_major in readings:
        for c_transposed in (False, True):
            rendered = render(params, mn_major, c_transposed)
            log = compile_cuda(rendered.source, rendered.name, options=REPORTED).log
            assert "0 bytes stack frame, 0 bytes spill stores" in log, (mn_major, c_transposed, log)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", CONFIGS, ids=[c.describe() for c in CONFIGS])
def test_the_kernel_agrees_with_float64_on_hopper(hopper, params, monkeypatch):
    """Over 4 blocks, which share the K of all 6 blocks of C (stream-K with parts of two blocks each)."""
    monkeypatch.setattr(hopper_module, "shared_out", lambda tiles, clusters, k_tiles, *_: (0, clusters))
    import ml_dtypes

    from autogemm.runtime.cuda import CudaContext

    numpy_type = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32, "3xtf32": np.float32,
                  "f32": np.float32}
    out = numpy_type[params.out]                            # C in the kernel's output type, 16 bits too
    # edges on every side: M and N not multiples of the block, nor K of the tile (K a multiple of 8: TMA);
    # N odd (C written element by element), even, or a multiple of 8 (C's rows 16-byte aligned: by TMA)
    ctx = CudaContext(hopper)
    rendered = render(params)
    function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
    for n in (3 * params.block_n - 5 - params.stages % 2, 3 * params.block_n - 8):
        m, k = 2 * params.block_m - 3, (2 * params.stages + 1) * params.block_k - 8
        rng = np.random.default_rng(5)
        a = rng.uniform(-1, 1, (m, k)).astype(numpy_type[params.operand])
        b = rng.uniform(-1, 1, (n, k)).astype(numpy_type[params.operand])
        want = a.astype(np.float64) @ b.astype(np.float64).T
        bits = np.uint16 if a.itemsize == 2 else np.uint32
        operands = []
        for x in (a, b):                    # on the device, 3xtf32's split into its two planes there
            memory = ctx.allocate(x.nbytes)
            ctx.upload(memory, x.view(bits))
            operands.append(_split(ctx, memory, x.size) if params.planes == 2 else memory)
        dc = ctx.allocate(m * n * np.dtype(out).itemsize)
        ctx.upload(dc, np.full((m, n), np.nan, out))              # an unwritten element fails
        _launch(ctx, function, rendered, operands, dc, (m, n, k), 4, 1.0, 0.0)  # beta 0: NaN C unread;
        got = np.empty((m, n), out)                                             # 4 blocks: some take two of C
        ctx.download(got, dc)
        got = got.astype(np.float32)
        for memory in (*operands, dc):
            memory.release()
        assert np.isfinite(got).all()
        # 16-bit inputs are exact, only float32 sums err; tf32 drops 13 bits of each float32 input; 3xtf32
        # keeps float32's accuracy (cuBLAS's SGEMM: 5e-7 of the largest element at K = 4096); a 16-bit C
        # rounds each element once more
        scale = {"tf32": 5e-4 * np.sqrt(k), "3xtf32": 2e-7 * np.sqrt(k)}.get(params.operand, 1e-5 * k)
        scale = {"f16": max(scale, 2e-3), "bf16": max(scale, 4e-3)}.get(params.out, scale)
        assert np.abs(got - want).max() <= scale * np.abs(want).max()


MN_CONFIGS = [WgmmaParams("f16", 256, 2, 4, out="f16"), WgmmaParams("bf16", 128, 2, 3, cluster=2),
              WgmmaParams("f16", 64, 1, 2, group=1)]
LAYOUTS = [(False, True), (True, False), (True, True)]


@pytest.mark.parametrize("params", MN_CONFIGS, ids=[c.describe() for c in MN_CONFIGS])
def test_16_bit_operands_are_read_mn_major_too(params):
    """A stored K x M, B stored K x N, or both, read by TMA in boxes of 128 bytes of M (N) and taken by
    wgmma through its transpose flags; tf32 and 3xtf32 cannot be (wgmma transposes 16-bit types alone),
    nor B's tile shared by a cluster in part of a box."""
    for mn_major in LAYOUTS:
        rendered = render(params, mn_major)
        assert rendered.mn_major == mn_major and f", {int(mn_major[0])}, {int(mn_major[1])};" in rendered.source
        # an MN-major box: 64 rows of K by 64 of M (N), 128 bytes; a K-major one: the tile's rows by 64 of K
        rows = (params.block_m, params.block_n // params.cluster)
        assert rendered.tensor_boxes == tuple((64, 64) if mn else (count, 64) for mn, count in zip(mn_major, rows))
        assert rendered.tensor_shape(100, 72, True) == (72, 100)
        if not cuda_missing():
            cubin = compile_cuda(rendered.source, rendered.name, options=REPORTED)
            assert "0 bytes stack frame, 0 bytes spill stores" in cubin.log and "Performance Loss" not in cubin.log
    assert "K-major alone" in WgmmaParams("tf32").mn_major_problem((False, True))
    assert "boxes" in WgmmaParams("f16", 64, 1, 2, cluster=2).mn_major_problem((False, True))
    with pytest.raises(ValueError, match="K-major alone"):
        render(WgmmaParams("3xtf32", 128, 2, 3), (True, False))


TF32_CONFIGS = [WgmmaParams("tf32", 256, 2, 4, 16), WgmmaParams("tf32", 128, 2, 3, cluster=2),
                WgmmaParams("tf32", 64, 1, 2, group=1)]


@pytest.mark.parametrize("params", TF32_CONFIGS, ids=[c.describe() for c in TF32_CONFIGS])
def test_tf32_reads_an_mn_major_a_through_the_registers(params):
    """wgmma cannot transpose tf32: an A stored K x M is read from its tiles into each thread's fragments
    (four a step of K), none left in flight while the next tile's are read; B only K-major. Given B^T and
    A^T for A and B, the kernel stores C transposed, from the registers."""
    for c_transposed in (False, True):
        rendered = render(params, (True, False), c_transposed)
        kernel = rendered.source.split('extern "C"')[1]
        assert rendered.mn_major == (True, False) and rendered.c_transposed == c_transposed
        assert '"r"(a_fragments[4 * step + 3])' in kernel and "a_start0" not in kernel
        assert "wait_group.sync.aligned 1" not in kernel
        assert rendered.tensor_boxes[0] == (32, 32)          # 32 rows of K by 32 of M: 128 bytes
        assert rendered.name.endswith("_ct") == c_transposed
        assert ("C[col * M + r]" in kernel) == c_transposed and ("tile_store(&map_c" in kernel) != c_transposed
        if not cuda_missing():
            cubin = compile_cuda(rendered.source, rendered.name, options=REPORTED)
            assert "0 bytes stack frame, 0 bytes spill stores" in cubin.log and "Performance Loss" not in cubin.log
            assert "warning" not in cubin.log
    assert "K-major alone" in params.mn_major_problem((True, True))
    assert not params.reads_a_from_registers((False, False))
    assert not WgmmaParams("f16").reads_a_from_registers((True, False))


def test_tf32_fragments_are_read_where_tma_swizzled_them_and_cover_the_instructions_a():
    """The byte offsets each consumer thread reads its fragments of A at (the kernel's own expression,
    evaluated here) are where TMA's 128-byte swizzle puts element (m, k) of an MN-major box (the 16-byte
    chunk bits of a 1024-byte-aligned address XORed with its 128-byte row's index within 8), and the 128
    threads' four fragments of a consumer are its 64 rows by 8 of K once each (wgmma's register layout of
    a tf32 A: warp w rows 16w to 16w + 15, lane l row l / 4 and + 8, K l % 4 and + 4)."""
    import re

    from autogemm.codelets.wgmma.render import A_READS

    expression = re.search(r"a_reads\[j\] = (.*);", A_READS).group(1).replace("/", "//")
    mn_box, row_bytes = 32, 128                     # a box: 32 floats of M (128 bytes) by the tile's K
    for row0 in (0, 64):                            # the first and the second consumer
        seen = set()
        for thread in range(128):
            warp, lane = thread // 32, thread % 32
            for j in range(4):
                m = row0 + warp * 16 + lane // 4 + 8 * (j % 2)
                k = lane % 4 + 4 * (j // 2)
                at = eval(expression, {"m": m, "k": k, "MN_BOX": mn_box, "MN_BOX_BYTES": mn_box * row_bytes,
                                       "ROW_BYTES": row_bytes})
                linear = m // mn_box * mn_box * row_bytes + k * row_bytes + m % mn_box * 4
                assert at == linear ^ ((linear >> 7) & 7) << 4, (thread, j)
                seen.add((m - row0, k))
        assert seen == {(m, k) for m in range(64) for k in range(8)}


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", TF32_CONFIGS, ids=[c.describe() for c in TF32_CONFIGS])
def test_tf32_mn_major_a_and_c_transposed_agree_with_float64_on_hopper(hopper, params, monkeypatch):
    """A stored K x M, read through the registers, C stored as it is and transposed, at shapes with
    edges on every side, against float64 over a NaN C; the blocks share the K of every block of C."""
    monkeypatch.setattr(hopper_module, "shared_out", lambda tiles, clusters, k_tiles, *_: (0, clusters))
    from autogemm.runtime.cuda import CudaContext

    ctx = CudaContext(hopper)
    # M and N multiples of 4 (A's rows 16-byte aligned), not of the block; K not of the tile
    m, n, k = 2 * params.block_m - 12, 3 * params.block_n - 20, (2 * params.stages + 1) * params.block_k - 4
    rng = np.random.default_rng(10)
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (n, k)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    for c_transposed in (False, True):
        rendered = render(params, (True, False), c_transposed)
        function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
        operands = []
        for stored in (np.ascontiguousarray(a.T), b):
            memory = ctx.allocate(stored.nbytes)
            ctx.upload(memory, stored)
            operands.append(memory)
        dc = ctx.allocate(m * n * 4)
        ctx.upload(dc, np.full((m, n), np.nan, np.float32))
        _launch(ctx, function, rendered, operands, dc, (m, n, k), 4, 1.0, 0.0)
        got = np.empty((n, m) if c_transposed else (m, n), np.float32)
        ctx.download(got, dc)
        for memory in (*operands, dc):
            memory.release()
        got = got.T if c_transposed else got
        assert np.isfinite(got).all(), c_transposed
        assert np.abs(got - want).max() <= 5e-4 * np.sqrt(k) * np.abs(want).max(), c_transposed


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", MN_CONFIGS, ids=[c.describe() for c in MN_CONFIGS])
def test_mn_major_operands_agree_with_float64_on_hopper(hopper, params, monkeypatch):
    """Every layout of A and B at shapes with edges on every side, against float64, over a NaN C; the
    blocks share the K of every block of C (stream-K), one cluster fewer than the GPU runs at once."""
    monkeypatch.setattr(hopper_module, "shared_out", lambda tiles, clusters, k_tiles, *_: (0, max(1, clusters - 1)))
    import ml_dtypes

    from autogemm.runtime.cuda import CudaContext

    ctx = CudaContext(hopper)
    # M and N multiples of 8 (an MN-major operand's rows 16-byte aligned), not of the block; K not of the tile
    m, n, k = 2 * params.block_m - 24, 3 * params.block_n - 40, (2 * params.stages + 1) * params.block_k - 8
    rng = np.random.default_rng(8)
    operand = np.float16 if params.operand == "f16" else ml_dtypes.bfloat16
    a, b = rng.uniform(-1, 1, (m, k)).astype(operand), rng.uniform(-1, 1, (n, k)).astype(operand)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    out = {"f32": np.float32, "f16": np.float16}[params.out]
    # clusters one fewer than the blocks allow, each over a share of K that splits a block of C between two
    blocks = 5 if params.cluster == 1 else 6
    tiles = -(-m // (params.block_m * params.cluster)) * -(-n // params.block_n)
    working, k_tiles = blocks // params.cluster - 1, -(-k // params.block_k)
    assert any(tiles * k_tiles * c // working % k_tiles for c in range(1, working))
    for mn_major in LAYOUTS:
        rendered = render(params, mn_major)
        function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
        operands = []
        for x, mn in zip((a, b), mn_major):
            stored = np.ascontiguousarray(x.T if mn else x)
            memory = ctx.allocate(stored.nbytes)
            ctx.upload(memory, stored.view(np.uint16))
            operands.append(memory)
        dc = ctx.allocate(m * n * np.dtype(out).itemsize)
        ctx.upload(dc, np.full((m, n), np.nan, out))
        _launch(ctx, function, rendered, operands, dc, (m, n, k), blocks, 1.0, 0.0)
        got = np.empty((m, n), out)
        ctx.download(got, dc)
        for memory in (*operands, dc):
            memory.release()
        assert np.isfinite(got).all(), mn_major
        bound = 1e-5 * k if params.out == "f32" else 2e-3
        assert np.abs(got - want).max() <= bound * np.abs(want).max(), mn_major


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", MN_CONFIGS[1:], ids=[c.describe() for c in MN_CONFIGS[1:]])
def test_many_clusters_sum_the_k_of_few_blocks_of_c_in_pairs_the_same_bits_every_run(hopper, params, monkeypatch):
    """A deep product of 2 blocks of C whose K 13 clusters share (78 tiles of K, 6 a cluster: each block of
    C's K in 7 pieces, a tree of pairs with a right half missing, cluster 6 in both), against float64, over
    a NaN C; a second launch gives the same bits."""
    monkeypatch.setattr(hopper_module, "shared_out", lambda tiles, clusters, k_tiles, *_: (0, clusters))
    import ml_dtypes

    from autogemm.runtime.cuda import CudaContext

    ctx = CudaContext(hopper)
    m, n, k = params.block_m * params.cluster - 5, params.block_n + 3, 39 * params.block_k - 8
    rng = np.random.default_rng(13)
    operand = np.float16 if params.operand == "f16" else ml_dtypes.bfloat16
    a, b = rng.uniform(-1, 1, (m, k)).astype(operand), rng.uniform(-1, 1, (n, k)).astype(operand)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    out = {"f32": np.float32, "f16": np.float16}[params.out]
    rendered = render(params)
    assert rendered.schedule(m, n, k, 13 * params.cluster).grid == (13 * params.cluster,)
    function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
    operands = []
    for x in (a, b):
        memory = ctx.allocate(x.nbytes)
        ctx.upload(memory, x.view(np.uint16))
        operands.append(memory)
    runs = []
    for _ in range(2):
        dc = ctx.allocate(m * n * np.dtype(out).itemsize)
        ctx.upload(dc, np.full((m, n), np.nan, out))
        _launch(ctx, function, rendered, operands, dc, (m, n, k), 13 * params.cluster, 1.0, 0.0)
        runs.append(np.empty((m, n), out))
        ctx.download(runs[-1], dc)
        dc.release()
    for memory in operands:
        memory.release()
    assert np.isfinite(runs[0]).all()
    bound = 1e-5 * k if params.out == "f32" else 2e-3
    assert np.abs(runs[0] - want).max() <= bound * np.abs(want).max()
    assert np.array_equal(runs[0].view(np.uint8), runs[1].view(np.uint8))


def _launch(ctx, function, rendered, operands, c, shape, blocks, alpha, beta):
    """Launch ``rendered`` on the device memory of A and B (``operands``, each lying as the kernel reads
    it) and C for an M x N x K ``shape`` on at most ``blocks`` blocks, C stored by TMA where C's rows
    allow it."""
    import ctypes

    m, n, k = shape
    params = rendered.params
    maps = [ctx.tensor_map(memory, rendered.tensor_shape(params.planes * rows, k, mn), rendered.tensor_type, box)
            for memory, rows, mn, box in zip(operands, (m, n), rendered.mn_major, rendered.tensor_boxes)]
    if params.c_box is not None:
        aligned = n * params.out_bytes % 16 == 0 and not rendered.c_transposed
        maps.append(ctx.tensor_map(c, (m, n), params.c_type, params.c_box) if aligned else maps[0])
    schedule, work = rendered.schedule(m, n, k, blocks), []
    if params.planes == 2:                                  # the split's flag, unset: the tensor cores run
        work.append(ctx.allocate(4))
        ctx.zero(work[-1], 4)
    flags = [(flag, None) for flag in work]
    shared, counters = shared_k_arguments(ctx, schedule, ctx.stream, work)
    if counters is not None:
        ctx.zero(counters, counters.nbytes)
    ctx.launch(function, schedule.grid, rendered.block,
               [*((x, None) for x in maps), (c, None), (m, ctypes.c_int), (n, ctypes.c_int), (k, ctypes.c_int),
                *layer_arguments(1, False, False), (alpha, ctypes.c_float), (beta, ctypes.c_float), *flags,
                *shared], rendered.shared_bytes)
    ctx.finish()
    for memory in work:
        memory.release()


def _split(ctx, memory, count, flagged=False):
    """Device memory of 3xtf32's two planes of the ``count`` float32 values in ``memory`` (released), and
    with ``flagged`` whether the split found a value it cannot split."""
    import ctypes

    source, name = split()
    planes, flag = ctx.allocate(2 * count * 4), ctx.allocate(4)
    ctx.zero(flag, 4)
    ctx.launch(ctx.function(compile_cuda(source, name), name), (-(-count // SPLIT_THREADS),), (SPLIT_THREADS,),
               [(memory, None), (planes, None), (count, ctypes.c_longlong), (count, ctypes.c_longlong),
                (flag, None)])
    unsplit = np.empty(1, np.uint32)
    ctx.download(unsplit, flag)
    for used in (memory, flag):
        used.release()
    return (planes, bool(unsplit[0])) if flagged else planes


def test_the_3xtf32_split_kernel_and_its_float32_fallback_compile_for_sm_90a():
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    source, name = split()
    assert "cvt.rna.tf32.f32" in source and compile_cuda(source, name).arch == "sm_90a"
    assert compile_cuda(float32_product.render(), float32_product.NAME).arch == "sm_90a"


@pytest.mark.gpu
@pytest.mark.cuda
def test_the_split_keeps_finite_values_finite_and_flags_those_it_cannot_split(hopper):
    """big + small is the value exactly; near float32's largest the big part is rounded toward zero (the
    nearest tf32 would be inf); inf, NaN and values below 2^-115 but zero are flagged, and only they."""
    from autogemm.bench.accuracy_harness import SPLIT_SMALLEST, to_tf32
    from autogemm.runtime.cuda import CudaContext

    ctx = CudaContext(hopper)
    largest = np.finfo(np.float32).max
    values = np.array([1.0, 1 + 2.0**-11, -(1 + 3 * 2.0**-12), 3.0e38, largest, -largest, 0.0, -0.0,
                       SPLIT_SMALLEST, -2 * SPLIT_SMALLEST, 1e30, np.pi], np.float32)
    flagged = []
    for extra in (None, np.inf, -np.inf, np.nan, SPLIT_SMALLEST / 2, -1e-40):
        x = values if extra is None else np.append(values, np.float32(extra))
        memory = ctx.allocate(x.nbytes)
        ctx.upload(memory, x.view(np.uint32))
        planes, unsplit = _split(ctx, memory, x.size, flagged=True)
        parts = np.empty(2 * x.size, np.float32)
        ctx.download(parts.view(np.uint32), planes)
        planes.release()
        flagged.append(unsplit)
        big, small = parts[:values.size], parts[x.size:x.size + values.size]
        assert np.isfinite(big).all() and np.array_equal(big.astype(np.float64) + small, values.astype(np.float64))
        nearest = to_tf32(values)
        assert np.array_equal(big[np.isfinite(nearest)], nearest[np.isfinite(nearest)])
    assert flagged == [False, True, True, True, True, True]


@pytest.mark.parametrize("operand", ["3xtf32", "tf32", "f16"])
def test_3xtf32_restarts_its_accumulators_by_the_instruction_not_by_zeroing_them(operand):
    """Each tile of K's sums start from its first wgmma (scale-d false at step 0), where zeroing them
    between a tile's wgmma made CUDA 13.0's ptxas serialize all of them; one plane accumulates all K."""
    source = render(WgmmaParams(operand)).source
    restarts = source.count("setp.ne.b32 adds")
    assert restarts == (operand == "3xtf32") and source.count("acc[i] = 0.0f") == (operand != "3xtf32")
    assert ("sums[i] += acc[i];" in source) == (operand == "3xtf32")
    if restarts:
        first = source.index("wgmma.mma_async")
        assert source.index("adds, 1, 1;") < source.index("1, 1, 1;", first)   # the first of a step's three

def test_show_kernel_prints_a_wgmma_configuration_without_a_device():
    from click.testing import CliRunner

    from autogemm.cli import main

    out = CliRunner().invoke(main, ["show-kernel", "--family", "wgmma", "--dtype", "b", "--set", "stages=5",
                                    "--set", "block_n=128"])
    assert out.exit_code == 0 and "#define STAGES 5" in out.output and "m64n128k16.f32.bf16.bf16" in out.output
    assert "typedef unsigned short out_t;                  // bfloat16's bits" in out.output
    out = CliRunner().invoke(main, ["show-kernel", "--family", "wgmma", "--dtype", "d"])
    assert out.exit_code != 0 and "multiplies" in out.output and "Traceback" not in out.output
    out = CliRunner().invoke(main, ["show-kernel", "--family", "wgmma", "--dtype", "s.3xtf32", "--set", "block_n=256"])
    assert out.exit_code != 0 and "accumulators" in out.output
    out = CliRunner().invoke(main, ["show-kernel", "--family", "wgmma", "--dtype", "s.3xtf32"])   # its default: 128
    assert out.exit_code == 0 and "m128n128k32 3xtf32 stages2 group8 cluster2" in out.output
    # the kernel the CUDA path runs for a layout of row-major operands: tf32 NN swapped, B through the
    # registers and C stored transposed; TT reads A so as it lies; 16-bit NN takes B by its transpose flag
    for dtype, trans, name in (("s.tf32", ["--trans-b", "N"], "wgmma_tt_tf32_m128_n256_s4_g16_f32_ct("),
                               ("s.tf32", ["--trans-a", "T"], "wgmma_tt_tf32_m128_n256_s4_g16_f32("),
                               ("h", ["--trans-b", "N"], "wgmma_nn_f16_m128_n256_s4_g16_f16(")):
        out = CliRunner().invoke(main, ["show-kernel", "--family", "wgmma", "--dtype", dtype, *trans])
        assert out.exit_code == 0 and name in out.output
        assert ("a_fragments[" in out.output) == (dtype == "s.tf32")


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", [WgmmaParams("f16", 128, 2, 3, out="f16"),
                                    WgmmaParams("bf16", 256, 2, 4, out="bf16"), WgmmaParams("f16", 64, 1, 2),
                                    WgmmaParams("3xtf32", 128, 2, 3)], ids=lambda p: p.describe())
def test_alpha_and_beta_scale_the_product_and_c_in_its_own_type(hopper, params):
    """C = alpha A B^T + beta C, C read and written in float32 or in the operands' 16-bit type."""

    import ml_dtypes

    from autogemm.runtime.cuda import CudaContext

    types = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
    ctx = CudaContext(hopper)
    rendered = render(params)
    function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
    for n in (params.block_n + 2, params.block_n + 8):        # C's pairs read and written; its rows aligned
        m, k = params.block_m + 5, 4 * params.block_k
        rng = np.random.default_rng(9)
        operand = types.get(params.operand, np.float32)
        a, b = rng.uniform(-1, 1, (m, k)).astype(operand), rng.uniform(-1, 1, (n, k)).astype(operand)
        c = rng.uniform(-1, 1, (m, n)).astype(types[params.out])
        alpha, beta = 0.5, -2.0
        want = alpha * (a.astype(np.float64) @ b.astype(np.float64).T) + beta * c.astype(np.float64)
        operands = []
        for x in (a, b):
            memory = ctx.allocate(x.nbytes)
            ctx.upload(memory, x.view(np.uint16 if x.itemsize == 2 else np.uint32))
            operands.append(_split(ctx, memory, x.size) if params.planes == 2 else memory)
        dc = ctx.allocate(c.nbytes)
        ctx.upload(dc, c.view(np.uint16 if c.itemsize == 2 else np.uint32))
        _launch(ctx, function, rendered, operands, dc, (m, n, k), 132, alpha, beta)
        got = np.empty_like(c)
        ctx.download(got.view(np.uint16 if c.itemsize == 2 else np.uint32), dc)
        for memory in (*operands, dc):
            memory.release()
        bound = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-4}[params.out]     # C's own rounding
        assert np.abs(got.astype(np.float64) - want).max() <= bound * np.abs(want).max()


PING_PONG = [WgmmaParams("f16", 128, 2, 4, 16, out="f16", ping_pong=True),
             WgmmaParams("bf16", 256, 2, 4, 16, ping_pong=True), WgmmaParams("f16", 64, 2, 6, 16, ping_pong=True),
             WgmmaParams("tf32", 128, 2, 4, 16, ping_pong=True)]


def test_narrow_blocks_store_c_from_the_registers_and_compile_without_spilling():
    """Blocks of 16 or 32 columns of C: those narrower than a chunk of C (``narrow``) stage none for TMA
    and store it from the registers, pairs where they start aligned, else one by one; B read K-major
    alone, no cluster."""
    assert "boxes of 128 bytes" in WgmmaParams("f16", 32, 1, 4).mn_major_problem((False, True))
    assert WgmmaParams("f16", 64, 1, 4).mn_major_problem((False, True)) is None
    assert "clusters" in WgmmaParams("f16", 16, 1, 4, cluster=2).malformed()
    # a 32-column block of a float32 C is a whole chunk of it: stored through TMA, not narrow
    assert [params.narrow for params in NARROW] == [True, False, True, False, True]
    assert [params.staged_rows_of_c for params in NARROW] == [0, 256, 0, 128, 0]
    for params in NARROW:
        assert params.malformed() is None
        for mn_major, c_transposed in itertools.product([(False, False), (True, False)], (False, True)):
            if params.mn_major_problem(mn_major):
                continue
            rendered = render(params, mn_major, c_transposed)
            kernel = rendered.source.split('extern "C"')[1]
            assert ("tile_store(" not in kernel) == (params.narrow or c_transposed)
            if not cuda_missing():
                log = compile_cuda(rendered.source, rendered.name, options=REPORTED).log
                assert "0 bytes stack frame, 0 bytes spill stores" in log and "warning" not in log, log


def test_ping_pong_consumers_are_well_formed_and_compile_without_spilling():
    """Each of two consumers computes a block of 64 rows whole while the other stores its last (ping-pong):
    each stage is read by one consumer, no K is shared, and the two take turns on two barriers, in every
    way the kernel reads its operands and stores C. The tile model weighs them for 16-bit operands."""
    assert "ping-pong" in WgmmaParams("f16", 128, 1, 4, ping_pong=True).malformed()
    assert "ping-pong" in WgmmaParams("f16", 128, 2, 4, cluster=2, ping_pong=True).malformed()
    assert "ping-pong" in WgmmaParams("3xtf32", 128, 2, 3, ping_pong=True).malformed()
    for params in PING_PONG:
        assert params.malformed() is None and params.block_m == 64 and not params.shares_k
        turns = [(t.block_m, t.block_n, rate) for t, rate in params.tilings() if t.ping_pong]
        weighed = [(64, n, rate) for (_, n), rate in PING_PONG_RATES.items()] if params.operand != "tf32" else []
        assert turns == weighed and params.in_flight == 2
        for mn_major, c_transposed in itertools.product([(False, False), *LAYOUTS], (False, True)):
            if params.mn_major_problem(mn_major):
                continue
            rendered = render(params, mn_major, c_transposed)
            assert rendered.name.endswith("_pp" + "_ct" * c_transposed)
            assert "#define EMPTY_ARRIVALS (1 * CLUSTER)" in rendered.source
            assert "int whole" not in rendered.source and "barrier_init(&order[1], 1);" in rendered.source
            assert "barrier_arrive(&order[1 - consumer])" in rendered.source
            if not cuda_missing():
                log = compile_cuda(rendered.source, rendered.name, options=REPORTED).log
                assert "0 bytes stack frame, 0 bytes spill stores" in log, (mn_major, c_transposed, log)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("params", PING_PONG, ids=[c.describe() for c in PING_PONG])
def test_ping_pong_consumers_agree_with_float64_on_hopper(hopper, params):
    """Over 1 to 3 blocks, each of whose consumers takes several blocks of C alternately (an odd count of them
    in all: one consumer has one more), edges on every side, C stored by TMA, from the registers and
    element by element; beta 0 over a NaN C, and alpha and beta reading C."""
    import ml_dtypes

    from autogemm.runtime.cuda import CudaContext

    types = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
    ctx = CudaContext(hopper)
    rendered = render(params)
    function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
    m, k = 5 * 64 - 3, (2 * params.stages + 1) * params.block_k - 8
    operand, out = types.get(params.operand, np.float32), types[params.out]
    for blocks, n, beta in ((1, 3 * params.block_n - 5, 0.0), (2, 3 * params.block_n - 8, 0.0),
                            (3, 3 * params.block_n - 6, -2.0)):
        rng = np.random.default_rng(blocks)
        a, b = rng.uniform(-1, 1, (m, k)).astype(operand), rng.uniform(-1, 1, (n, k)).astype(operand)
        c = np.full((m, n), np.nan, out) if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(out)
        want = 0.5 * (a.astype(np.float64) @ b.astype(np.float64).T) + (beta * c.astype(np.float64) if beta else 0)
        operands = []
        for x in (a, b):
            memory = ctx.allocate(x.nbytes)
            ctx.upload(memory, x.view(np.uint16 if x.itemsize == 2 else np.uint32))
            operands.append(memory)
        dc = ctx.allocate(c.nbytes)
        ctx.upload(dc, c.view(np.uint16 if c.itemsize == 2 else np.uint32))
        _launch(ctx, function, rendered, operands, dc, (m, n, k), blocks, 0.5, beta)
        got = np.empty_like(c)
        ctx.download(got.view(np.uint16 if c.itemsize == 2 else np.uint32), dc)
        for memory in (*operands, dc):
            memory.release()
        bound = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-4 if params.operand != "tf32" else 5e-4 * np.sqrt(k)}
        assert np.isfinite(got.astype(np.float64)).all(), (blocks, n)
        assert np.abs(got.astype(np.float64) - want).max() <= bound[params.out] * np.abs(want).max(), (blocks, n)


def test_blocks_in_a_cluster_share_the_tiles_of_b():
    single, pair = render(WgmmaParams()), render(WgmmaParams(cluster=2))
    kernel, paired_kernel = (r.source.split('extern "C"')[1] for r in (single, pair))
    assert "__cluster_dims__" not in single.source and "tile_load_everywhere(" not in kernel
    assert "__cluster_dims__(2, 1, 1)" in pair.source and "tile_load_everywhere(" in paired_kernel
    assert "#define EMPTY_ARRIVALS (CONSUMERS * CLUSTER)" in pair.source and "cluster_sync();" in pair.source
    assert pair.tensor_boxes[1] == (128, 64) and single.tensor_boxes[1] == (256, 64)
    assert pair.schedule(8192, 8192, 8192, 132).grid == (132,) and pair.schedule(8192, 8192, 8192, 131).grid == (130,)
    assert WgmmaParams(cluster=2).describe().endswith("cluster2") and pair.name.endswith("_c2")
