"""``gemm``'s ``backend``: which runtime a product runs on, the CUDA path's refusals (on the CPU), and its
products against float64 on a Hopper GPU: every dtype it takes, every transpose, K that needs padding,
Fortran-ordered and strided operands, alpha and beta, C poisoned with NaN where beta 0 must not read it."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.accuracy import Reference, apply_op, random_matrix
from autogemm.blas.cuda_gemm import fitted, reading
from autogemm.blas.defaults import CUDA_DEFAULTS
from autogemm.blas.problem import Op
from autogemm.codelets import k_major
from autogemm.codelets.dmma import DmmaParams
from autogemm.codelets.wgmma import render as render_wgmma
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError
from autogemm.profiles import Thresholds
from autogemm.runtime.cuda import compile_cuda, cuda_missing


def test_a_backend_is_one_of_three():
    a = np.ones((4, 4))
    with pytest.raises(ArgumentError, match="'auto', 'opencl', 'cuda'"):
        autogemm.gemm(a, a, backend="gpu")


def test_backend_cuda_says_why_a_call_cannot_run_there(ctx):
    a = np.ones((8, 8), np.float32)
    with pytest.raises(ArgumentError, match="sgemm has no CUDA kernels"):
        autogemm.gemm(a, a, backend="cuda")
    d = np.ones((8, 8))
    with pytest.raises(ArgumentError, match="config is an option of the OpenCL path"):
        autogemm.gemm(d, d, backend="cuda", config=object())
    on_device = cl_array.to_device(ctx.queue, d)
    with pytest.raises(ArgumentError, match="takes numpy arrays"):
        autogemm.gemm(on_device, on_device, backend="cuda")
    if not any(dev.is_gpu for dev in autogemm.devices()):       # PoCL's CPU: no CUDA twin, or no bindings
        with pytest.raises(ArgumentError, match="backend='cuda' cannot run this call"):
            autogemm.gemm(d, d, backend="cuda")
    assert np.allclose(autogemm.gemm(d, d, backend="opencl"), d @ d)


def test_the_layout_kernels_compile_for_sm_90a():
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    cubin = compile_cuda(k_major.render(), "k_major")
    assert all(name.encode() in cubin.image for name in k_major.NAMES.values())
    assert [k_major.padded_k(77, size) for size in (2, 4, 8, 16)] == [80, 80, 78, 77]


def _case(key: str, trans_a: str, trans_b: str, m: int, n: int, k: int, seed: int):
    dt = DTYPES[key]
    rng = np.random.default_rng(seed)
    a = random_matrix(rng, dt, (m, k) if trans_a == "N" else (k, m))
    b = random_matrix(rng, dt, (k, n) if trans_b == "N" else (n, k))
    return dt, a, b, Reference(dt, apply_op(a, trans_a), apply_op(b, trans_b), rng)


LAYOUTS = [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")]


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", sorted(CUDA_DEFAULTS))
@pytest.mark.parametrize("trans_a,trans_b", LAYOUTS + [("C", "C"), ("N", "C")])
@pytest.mark.usefixtures("hopper")
def test_every_dtype_and_transpose_agrees_with_float64(device, key, trans_a, trans_b):
    if "C" in trans_a + trans_b and key != "z":
        pytest.skip("conjugates are of complex operands")
    dt, a, b, reference = _case(key, trans_a, trans_b, 257, 131, 77, seed=len(key) + ord(trans_a))
    c = np.full((257, 131), np.nan, dt.output.numpy)              # beta 0: C is written, never read
    got = autogemm.gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, precision=dt.precision or None,
                        device=device, backend="cuda")
    error, ok = reference.check(got)
    assert got is c and ok, f"{key} {trans_a}{trans_b}: error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["c.tf32", "c.3xtf32"])
@pytest.mark.parametrize("trans_a,trans_b", LAYOUTS + [("C", "C"), ("N", "C")])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.5 - 1j, 2j), (-2.0, 0.5)])
@pytest.mark.usefixtures("hopper")
def test_complex64_in_tf32_runs_on_the_cuda_path_as_its_real_embedding(device, key, trans_a, trans_b, alpha, beta):
    """complex64 with precision 'tf32' or '3xtf32' on the CUDA path, as the real product of its embedding
    made on the device (``blas.complex_embedding``), in every op, complex and real alpha and beta (beta 0
    over a NaN C: never read), against complex128; a batch of them says it stays on OpenCL, and 'auto'
    keeps numpy operands there (``Thresholds.numpy_on_opencl``)."""
    from autogemm.engine import dispatch
    from autogemm.engine.routes.cuda_host import CudaHostRoute

    m, n, k = 131, 77, 203
    dt, a, b, reference = _case(key, trans_a, trans_b, m, n, k, seed=ord(trans_a) + 5 * ord(trans_b))
    rng = np.random.default_rng(9)
    c0 = random_matrix(rng, dt, (m, n)) if beta != 0 else np.full((m, n), np.nan, np.complex64)
    c = c0.copy()
    got = autogemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, precision=dt.precision,
                        device=device, backend="cuda")
    want = alpha * reference.product + (beta * c0.astype(np.complex128) if beta != 0 else 0)
    error = np.abs(got - want).max() / np.abs(want).max()
    assert got is c and np.isfinite(got).all() and error < (2e-3 if key == "c.tf32" else 1e-5), error
    route = list(dispatch.ROUTES._routes.values())[-1]
    assert isinstance(route, CudaHostRoute) and route.plan.embedded.dt is DTYPES[key.replace("c.", "s.")]
    with pytest.raises(ArgumentError, match="one at a time"):
        autogemm.gemm_batched(np.stack([a, a]), np.stack([b, b]), trans_a=trans_a, trans_b=trans_b,
                              precision=dt.precision, device=device, backend="cuda")
    autogemm.gemm(a, b, trans_a=trans_a, trans_b=trans_b, precision=dt.precision, device=device)
    assert not isinstance(list(dispatch.ROUTES._routes.values())[-1], CudaHostRoute)


# how an operand lies: (readable MN-major as it lies, readable K-major as it lies); row-major NN: A K_MAJOR,
# B MN_MAJOR; NEITHER: a pass lays it out either way (a conjugate, rows not 16 bytes apart)
K_MAJOR, MN_MAJOR, NEITHER = (False, True), (True, False), (False, False)


@pytest.mark.parametrize("key,lying,expected", [
    ("s.tf32", (K_MAJOR, MN_MAJOR), ((True, False), True)),      # NN: C^T = B^T A^T, B through the registers
    ("s.tf32", (MN_MAJOR, K_MAJOR), ((True, False), False)),     # TT: A through the registers
    ("s.tf32", (MN_MAJOR, MN_MAJOR), ((True, False), False)),    # TN: B laid out (a tie: unswapped)
    ("s.tf32", (NEITHER, MN_MAJOR), ((True, False), True)),      # A laid out either way, B read as it lies
    ("s.tf32", (K_MAJOR, K_MAJOR), ((False, False), False)),
    ("h", (K_MAJOR, MN_MAJOR), ((False, True), False)),          # 16-bit: transposed by wgmma, never swapped
    ("h", (MN_MAJOR, MN_MAJOR), ((True, True), False)),
    ("h", (NEITHER, MN_MAJOR), ((False, True), False)),
    ("s.3xtf32", (K_MAJOR, MN_MAJOR), ((False, False), False)),  # K-major alone: B laid out (and split)
    ("d", (MN_MAJOR, MN_MAJOR), ((True, True), False)),          # reads MN-major operands as they lie
    ("z", (MN_MAJOR, K_MAJOR), ((True, False), False)),          # unswapped
])
def test_a_product_is_read_with_the_fewest_passes_over_its_operands(key, lying, expected):
    assert reading(CUDA_DEFAULTS[key], lying) == expected


def test_a_configuration_that_lays_mn_major_operands_out_reads_them_k_major():
    """A float64 configuration without ``reads_mn_major`` (a profile's entry may hold one) lays both out."""
    assert reading(replace(CUDA_DEFAULTS["d"], reads_mn_major=False), (MN_MAJOR, MN_MAJOR)) == ((False, False), False)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("trans_a,trans_b", LAYOUTS)
@pytest.mark.usefixtures("hopper")
def test_tf32_reads_operands_lying_mn_major_through_the_registers(device, trans_a, trans_b):
    """TF32 with rows 16 bytes apart: NN runs as C^T = B^T A^T, B read MN-major into the registers and
    C stored transposed; TT reads A so as it lies; TN lays one operand out. Against float64 with beta 0
    over a NaN C, and with alpha and beta reading C, at shapes with edges on every side."""
    for m, n, k in ((260, 132, 76), (132, 388, 300)):
        dt, a, b, reference = _case("s.tf32", trans_a, trans_b, m, n, k, seed=m + ord(trans_a) + ord(trans_b))
        c = np.full((m, n), np.nan, np.float32)
        got = autogemm.gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, precision="tf32", device=device,
                            backend="cuda")
        error, ok = reference.check(got)
        assert ok, f"{trans_a}{trans_b} {m}x{n}x{k}: error {error:.2e}"
        c = random_matrix(np.random.default_rng(7), dt, (m, n))
        want = 0.5 * reference.product - 2.0 * c.astype(np.float64)
        got = autogemm.gemm(a, b, c.copy(), trans_a=trans_a, trans_b=trans_b, alpha=0.5, beta=-2.0,
                            precision="tf32", device=device, backend="cuda")
        error = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert error < 10 * dt.tolerance, f"{trans_a}{trans_b} {m}x{n}x{k} beta: error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["hs", "s.3xtf32", "d", "z"])
@pytest.mark.usefixtures("hopper")
def test_alpha_beta_and_operands_in_any_memory_order(device, key):
    dt, a, b, reference = _case(key, "N", "N", 300, 200, 136, seed=3)
    rng = np.random.default_rng(4)
    c = random_matrix(rng, dt, (300, 200)).astype(dt.output.numpy)
    alpha, beta = (0.5 - 1j, 2.0 + 0.5j) if dt.is_complex else (0.5, -2.0)
    want = alpha * reference.product + beta * c.astype(reference.product.dtype)
    wide = np.zeros((300, 2 * 136), dt.numpy)
    wide[:, ::2] = a                                               # a strided view of A
    got = autogemm.gemm(wide[:, ::2], np.asfortranarray(b), c.copy(), alpha=alpha, beta=beta,
                        precision=dt.precision or None, device=device, backend="cuda")
    error = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert error < 10 * dt.tolerance, f"{key}: error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("unsplit", [np.inf, -np.inf, np.nan, 2.0**-120, -1e-40])
@pytest.mark.usefixtures("hopper")
def test_3xtf32_with_values_it_cannot_split_computes_float32s_product(device, unsplit):
    """An operand holding inf, NaN or a value too small for 3xTF32's parts: the product is float32's (the
    split's flag hands it to the float32 kernel), inf where float32's is inf, not NaN; alpha and beta
    apply, and beta 0 leaves a poisoned C unread; for operands stored transposed too."""
    m, n, k = 150, 70, 300
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a[7, 20] = b[33, 5] = unsplit
    c = rng.standard_normal((m, n)).astype(np.float32)
    for alpha, beta, start in ((1.0, 0.0, np.full((m, n), np.nan, np.float32)), (0.5, -2.0, c)):
        with np.errstate(invalid="ignore", over="ignore"):
            want = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + (beta * c if beta else 0.0)
        for trans_a, trans_b in (("N", "N"), ("T", "T")):
            got = autogemm.gemm(a.T.copy() if trans_a == "T" else a, b.T.copy() if trans_b == "T" else b,
                                start.copy(), trans_a=trans_a, trans_b=trans_b, alpha=alpha,
                                beta=beta, precision="3xtf32", device=device, backend="cuda")
            finite = np.isfinite(want)
            assert np.array_equal(np.isnan(got), np.isnan(want)), (trans_a, beta)
            assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
            scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + np.abs(c)
            assert (np.abs(got[finite] - want[finite]) <= 1e-5 * scale[finite]).all(), (trans_a, beta)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["h", "bs", "s.tf32", "s.3xtf32"])
@pytest.mark.usefixtures("hopper")
@pytest.mark.parametrize("k", [16384, 16383])
def test_blocks_share_the_long_k_of_few_blocks_of_c(device, key, k):
    """200 x 300 x K: far fewer blocks of C than multiprocessors, which share their K (stream-K), the
    clusters that share a block adding their sums in pairs; with alpha and beta, and C's edges. An odd K lays both
    operands out first, in the launch that zeroes the parts' counters: run twice, the second over
    memory the pool hands back, counters that were not zeroed would show."""
    m, n = 200, 300
    params = fitted(CUDA_DEFAULTS[key], m, n, k, 132)
    assert render_wgmma(params).schedule(m, n, k, 132).arrivals      # the product shares K
    dt, a, b, reference = _case(key, "N", "T", m, n, k, seed=5)
    c = random_matrix(np.random.default_rng(6), dt, (m, n)).astype(dt.output.numpy)
    want = 0.5 * reference.product - 2.0 * c.astype(reference.product.dtype)
    for _ in range(2):
        got = autogemm.gemm(a, b, c.copy(), trans_b="T", alpha=0.5, beta=-2.0, precision=dt.precision or None,
                            device=device, backend="cuda")
        error = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert error < 10 * dt.tolerance, f"{key}: error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.usefixtures("hopper")
def test_auto_runs_16_bit_numpy_products_on_the_cuda_path_and_float64_and_float32_on_opencl(device, monkeypatch):
    """From numpy arrays 'auto' takes 16-bit products to CUDA; float64 (its row blocks' copies overlap the
    kernels on OpenCL) and float32 stay on OpenCL; backend='cuda' still takes float64 there."""
    from autogemm.engine.routes import cuda_host as cuda_route

    ran = []
    monkeypatch.setattr(cuda_route, "_run", lambda ctx, plan, a, b, out, *rest: ran.append(plan.dt.key) or out)
    large, small = np.ones((2048, 2048)), np.ones((64, 64))
    autogemm.gemm(large, large, device=device)
    autogemm.gemm(large, large, device=device, backend="cuda")
    autogemm.gemm(small, small, device=device)
    autogemm.gemm(small.astype(np.float16), small.astype(np.float16), device=device)
    autogemm.gemm(large.astype(np.float32), large.astype(np.float32), device=device)
    assert ran == ["d", "h"]


def test_a_repeated_call_finds_its_route_without_the_checks_and_a_bad_one_still_fails(device, monkeypatch):
    """A call whose signature (shapes, strides, dtypes, options) an earlier one had runs on that call's
    resolved route, without validating or resolving again; a bad call still raises the error the checks
    would have, backend='cuda' still says why, and another signature is resolved afresh."""
    from autogemm.engine import dispatch
    from autogemm.engine.routes import cuda_host as cuda_route
    from autogemm.errors import ShapeError

    checked = []
    real = cuda_route.cuda_host_route
    monkeypatch.setattr(cuda_route, "cuda_host_route", lambda call: (checked.append(call.dt.key), real(call))[1])
    monkeypatch.setattr(dispatch.ROUTES, "_routes", type(dispatch.ROUTES._routes)())
    a, b = np.ones((40, 30), np.float32), np.ones((30, 20), np.float32)
    for _ in range(3):
        assert np.allclose(autogemm.gemm(a, b, device=device), a @ b)
    assert checked == ["s"]
    with pytest.raises(ShapeError):
        autogemm.gemm(a, a, device=device)
    with pytest.raises(ArgumentError, match="sgemm has no CUDA kernels"):
        autogemm.gemm(a, b, device=device, backend="cuda")
    half = a.astype(np.float16)                   # another signature is resolved afresh
    autogemm.gemm(half, b.astype(np.float16), device=device)
    assert checked[-1] == "h" and checked.count("s") == 2


def test_auto_makes_no_cuda_context_for_a_product_it_keeps_on_opencl(device, monkeypatch):
    """A few-row 16-bit product too small for the CUDA path runs on OpenCL without the CUDA target being
    looked up (that makes a CUDA context, which costs its first call and stays in the process)."""
    from autogemm.accuracy import relative_error
    from autogemm.engine.routes import cuda_host as cuda_route

    monkeypatch.setattr(cuda_route, "cuda_target", lambda *args: pytest.fail("looked up the CUDA target"))
    rng = np.random.default_rng(4)
    a, b = rng.random((8, 256)).astype(np.float16), rng.random((256, 200)).astype(np.float16)
    got = autogemm.gemm(a, b, device=device)
    assert relative_error(got, a.astype(np.float64) @ b) < DTYPES["h"].tolerance


def test_auto_takes_the_backend_and_configuration_the_profile_measured_faster(device, monkeypatch):
    """A profile's CUDA entry nearest the product decides: the CUDA path with its configuration where CUDA
    was faster, OpenCL where OpenCL was; backend='cuda' takes the entry's configuration either way."""
    from autogemm.blas import selection
    from autogemm.codelets.wgmma import WgmmaParams
    from autogemm.engine.routes import cuda_host as cuda_route
    from autogemm.profiles import CudaEntry, Profile

    fast, slow = WgmmaParams("f16", 256, 2, 3, 16, out="f16"), WgmmaParams("f16", 64, 1, 3, 8, out="f16")
    profile = Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                      "2026-11-25T10:00:00+00:00", "60s", cuda={"h": (
                          CudaEntry("large", (4096,) * 3, fast, 6e5, 3e5, 10, 5.0),
                          CudaEntry("small", (256,) * 3, slow, 5e3, 8e3, 10, 5.0))})
    ran = []
    monkeypatch.setattr(cuda_route, "cuda_target", lambda dev, dt: (SimpleNamespace(multiprocessors=132), None))
    monkeypatch.setattr(selection, "profile_for", lambda dev: profile)
    monkeypatch.setattr(cuda_route, "host_result", lambda ctx, shape, dtype, limits: np.empty(shape, dtype))
    monkeypatch.setattr(cuda_route, "cuda_plan",
                        lambda ctx, dt, m, n, k, params, layers: SimpleNamespace(params=params))
    monkeypatch.setattr(cuda_route, "_run", lambda ctx, plan, a, b, out, *rest: ran.append(plan.params) or out)
    large = np.ones((2048, 2048), np.float16)
    autogemm.gemm(large, large, device=device)
    assert ran == [fast]        # the tile that fits, in the stages it was measured in
    dt, a, b, reference = _case("h", "N", "N", 64, 48, 40, seed=5)
    got = autogemm.gemm(a, b, device=device)                     # OpenCL was faster there: computed on it
    assert ran == [fast] and reference.check(got)[1]
    autogemm.gemm(a, b, device=device, backend="cuda")
    assert ran == [fast, slow]


@pytest.mark.parametrize("m,n,k,tile", [(512, 4096, 4096, (128, 128)), (2048, 1024, 4096, (128, 128)),
                                        (128, 1024, 4096, (64, 64)), (128, 4096, 2048, (64, 64)),
                                        (32, 14336, 4096, (64, 128)), (512, 14336, 4096, (128, 256)),
                                        (4096, 4096, 4096, (128, 256)), (8192, 8192, 8192, (128, 256)),
                                        (1536, 1536, 16384, (128, 128)), (3072, 3072, 8192, (128, 256))])
def test_the_tile_of_c_is_fitted_to_the_product(m, n, k, tile):
    """Products of few blocks of C take smaller tiles, so that every multiprocessor works, or share the K
    of a last round of few blocks (the last two: 12 and 24 blocks over 132 multiprocessors); the tiles
    were the fastest for these shapes on the H100. The rest of the configuration is kept, 3xtf32 gets no
    tile it cannot hold. (TF32 at 128 x 1024 x 4096, over twice the tiles of K of 16-bit operands, takes
    64 x 128 since a single shared round takes a multiple of its blocks in clusters: the model's two
    tiles there lie within 0.4% of each other, and neither was measured for TF32.)"""
    for key in ("h", "b", "s.tf32"):
        default = CUDA_DEFAULTS[key]
        got = fitted(default, m, n, k, 132)
        want = (64, 128) if key == "s.tf32" and (m, n, k) == (128, 1024, 4096) else tile
        assert (got.block_m, got.block_n) == want
        assert replace(got, block_n=default.block_n, consumers=default.consumers, stages=default.stages) == default
    three = fitted(CUDA_DEFAULTS["s.3xtf32"], m, n, k, 132)
    assert three.malformed() is None and three.block_n <= 128


@pytest.mark.parametrize("m,n,k,tiles", [(1024, 1024, 8192, ((128, 64), (64, 128))),
                                         (1536, 1536, 1536, ((128, 64), (64, 64))),
                                         (2048, 2048, 2048, ((128, 128), (64, 128))),
                                         (512, 4096, 4096, ((128, 128), (64, 128))),
                                         (4096, 4096, 4096, ((128, 128), (64, 128)))])
def test_dmma_tiles_are_fitted_to_the_product_too(m, n, k, tiles):
    """float64 and complex128 (``tiles``: each one's tile) take a smaller tile where theirs leaves
    multiprocessors idle (the first two; on the H100 float64 1024 x 1024 x 8192 ran at 0.47x cuBLAS in
    128 x 128 tiles, 0.85x in 128 x 64; a tile small enough to share K, stream-K, has no idle last round),
    and keep their own where a smaller one takes as long; the rest of the configuration is kept. A tuned
    tile outside the measured ones counts at the slowest one's rate."""
    for key, tile in zip("dz", tiles):
        got = fitted(CUDA_DEFAULTS[key], m, n, k, 132)
        assert (got.block_m, got.block_n) == tile and got.malformed() is None
        assert (got.stages, got.mma_k, got.reads_mn_major) == (CUDA_DEFAULTS[key].stages, CUDA_DEFAULTS[key].mma_k,
                                                                CUDA_DEFAULTS[key].reads_mn_major)
    narrow = DmmaParams("d", 2, 1, 32, 16, 4, 8)             # 32 x 128, not measured: as slow as 64 x 64
    assert fitted(narrow, 4096, 4096, 4096, 132).block_m == 128
    assert fitted(narrow, 1536, 1536, 1536, 132).block_m == 128     # at the fastest's rate its own would win


@pytest.mark.parametrize("m,n,k,shares", [(1536, 1536, 1536, True), (1024, 1024, 8192, False),
                                          (3072, 3072, 1024, False), (1536, 1536, 32, False)])
def test_dmma_kernels_have_stream_k_only_where_the_product_shares_a_last_round(m, n, k, shares):
    """float64 1536^3 in 128 x 64 tiles leaves 24 blocks of C to a last round on 132 multiprocessors,
    shared; one round (1024 x 1024 x 8192), a full last round (3072 x 3072 x 1024: 96 of 132) or too
    short a K to share (``MIN_SHARE``) keeps the kernel without stream-K, whose persistent loop that can
    share costs blocks computed whole time too."""
    got = fitted(CUDA_DEFAULTS["d"], m, n, k, 132)
    assert got.shares_k == shares and got.malformed() is None
    assert fitted(got, m, n, k, 132).shares_k == shares


def test_a_tile_other_than_the_configuration_s_own_takes_the_most_stages_that_fit():
    """Small tiles read a long K in 8 stages (4 left too little in flight); 128 x 256 fits 4, two blocks of
    64 x 64 a multiprocessor 5 each; the configuration's own tile keeps the stages it was tuned in."""
    params = CUDA_DEFAULTS["h"]
    small = fitted(params, 4096, 128, 4096, 132)
    assert (small.block_m, small.block_n, small.stages) == (64, 64, 8)
    assert fitted(params, 8192, 8192, 8192, 132).stages == 4
    stages = {(t.block_m, t.block_n, t.per_multiprocessor): t.stages for t, _ in params.tilings()}
    assert stages[128, 128, 1] == 6 and stages[64, 64, 2] == 5 and stages[64, 128, 1] == 8
    tuned = replace(params, stages=3)
    assert fitted(tuned, 8192, 8192, 8192, 132) == tuned


def test_only_the_configuration_s_own_tile_runs_in_its_clusters():
    """3xTF32's 128 x 128 runs in clusters of two (measured on large products); the other tiles, fitted to
    smaller and skinnier products, run alone, as their rates were measured."""
    params = CUDA_DEFAULTS["s.3xtf32"]
    assert params.cluster == 2 and fitted(params, 4096, 4096, 4096, 132) == params
    assert {t.cluster for t, _ in params.tilings() if t != params} == {1}
    assert fitted(params, 4096, 64, 4096, 132).cluster == 1


@pytest.mark.parametrize("m,n,k,tile", [(26904, 8, 768, (128, 16)), (4096, 32, 4096, (64, 16)),
                                        (280, 24, 4712, (64, 16)), (4096, 48, 4096, (128, 64))])
def test_products_of_few_columns_take_narrow_blocks_where_b_is_read_k_major(m, n, k, tile):
    """A product of columns one narrow block holds (16 or 32) takes one where its rate beats the empty
    columns of a wider one (on the H200, FP16 NT: 26904 x 8 x 768
    1.00x cuBLAS against 0.72x in 128 x 64 blocks, 4096 x 32 x 4096 0.70x against 0.58x, 280 x 24 x 4712
    0.64x against 0.61x), in 16-bit operands alone, and never where B is read MN-major (it cannot be) nor
    for more columns than 32 (several narrow blocks each read A: slower)."""
    for key in ("h", "b"):
        got = fitted(CUDA_DEFAULTS[key], m, n, k, 132)
        assert (got.block_m, got.block_n) == tile and got.malformed() is None
        assert got.block_n >= 64 or not got.ping_pong and got.cluster == 1
        read_mn = fitted(CUDA_DEFAULTS[key], m, n, k, 132, 1, (False, True))
        assert read_mn.block_n >= 64 and read_mn.mn_major_problem((False, True)) is None
    assert fitted(CUDA_DEFAULTS["s.tf32"], m, n, k, 132).block_n >= 64
    assert fitted(CUDA_DEFAULTS["hs"], m, n, k, 132).block_n != 32         # a whole chunk of a float32 C


def test_the_tile_is_fitted_to_the_product_the_kernel_computes():
    """The configuration is chosen for the operands as they lie: a few-column FP16 product takes a narrow
    block where B lies K-major (NT) and not where it lies MN-major (NN); TF32 NN, read as C^T = B^T A^T
    (its B K-major alone), has its tile fitted to the swapped product."""
    from autogemm.blas.selection import choose_cuda_params

    nt, nn = (Op(), Op(transposed=True)), (Op(), Op())
    h, tf32 = DTYPES["h"], DTYPES["s.tf32"]
    assert choose_cuda_params(None, h, 26904, 8, 768, 132, ops=nt).params.block_n == 16
    assert choose_cuda_params(None, h, 26904, 8, 768, 132, ops=nn).params.block_n >= 64
    swapped = choose_cuda_params(None, tf32, 6000, 640, 4096, 132, ops=nn).params
    assert (swapped.block_m, swapped.block_n) == (128, 256)
    assert swapped == fitted(CUDA_DEFAULTS["s.tf32"], 640, 6000, 4096, 132, 1, (True, False))
    unswapped = fitted(CUDA_DEFAULTS["s.tf32"], 6000, 640, 4096, 132)
    assert (unswapped.block_m, unswapped.block_n) == (128, 128)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["h", "b"])
@pytest.mark.parametrize("trans_a,trans_b", LAYOUTS)
@pytest.mark.parametrize("m,n", [(13, 1000), (1000, 13), (3, 517), (16, 1000), (1000, 16)])
@pytest.mark.usefixtures("hopper")
def test_few_rows_or_columns_are_computed_in_narrow_blocks(device, key, trans_a, trans_b, m, n):
    """Products of 3, 13 or 16 rows or columns as the tile model sends them, in every layout, against
    float64 with beta 0 over a NaN C: in a narrow block where B is read K-major, or for few rows A as
    the B of C^T (C^T stored from the registers), and where the few rows or columns are 16-byte aligned
    and lie MN-major, which a narrow block cannot read, in a block of 64 columns. (Rows of 3 or 13
    elements are laid out first in every layout: narrow blocks then.)"""
    from autogemm.engine import dispatch

    k = 300
    dt, a, b, reference = _case(key, trans_a, trans_b, m, n, k, seed=m + 7 * ord(trans_a) + ord(trans_b))
    c = np.full((m, n), np.nan, dt.output.numpy)
    got = autogemm.gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, device=device, backend="cuda")
    error, ok = reference.check(got)
    assert ok, f"{key} {trans_a}{trans_b} {m} x {n}: error {error:.2e}"
    params = list(dispatch.ROUTES._routes.values())[-1].plan.params
    few_k_major = trans_b == "T" if n < m else trans_a == "N"
    assert params.narrow == (min(m, n) != 16 or few_k_major)


def test_the_cuda_families_are_registered_apart_from_the_opencl_ones(device):
    """wgmma and dmma are GEMM families of the CUDA backend: their configurations read back from JSON,
    OpenCL's plans and profiles' OpenCL entries never take them, and their checks say why a device
    cannot run them."""
    from autogemm.codelets.dmma import DmmaParams
    from autogemm.codelets.registry import GEMM, SpaceFacts, check, families, params_from_dict
    from autogemm.codelets.wgmma import WgmmaParams
    from autogemm.errors import ConfigError
    from autogemm.runtime.backend import CUDA

    assert [f.name for f in families(GEMM, CUDA)] == ["wgmma", "dmma"]
    assert not {"wgmma", "dmma"} & {f.name for f in families(GEMM)}
    for params in CUDA_DEFAULTS.values():
        assert params_from_dict(params.to_dict(), GEMM, CUDA) == params
        with pytest.raises(ConfigError, match="unknown kernel family"):
            params_from_dict(params.to_dict())
    spaces = {f.name: f.space(SpaceFacts(device, DTYPES["d"])) for f in families(GEMM, CUDA)}
    assert spaces["wgmma"] is None and CUDA_DEFAULTS["d"] in [spaces["dmma"].config(p) for p in spaces["dmma"].points()]
    assert "multiplies f16 into f16, not b" in check(WgmmaParams("f16", out="f16"), device, DTYPES["b"])
    if not any(dev.is_gpu for dev in autogemm.devices()):
        assert "not a GPU the CUDA driver sees" in check(DmmaParams("d"), device, DTYPES["d"])
    d = np.ones((8, 8))
    with pytest.raises(ArgumentError, match="OpenCL kernel family"):
        autogemm.gemm(d, d, config=DmmaParams("d"), backend="opencl")


@pytest.mark.parametrize("key,m,n,k,cuda", [("h", 8, 14336, 4096, True), ("b", 4096, 16, 4096, True),
                                            ("h", 8, 1024, 4096, False), ("h", 1, 128256, 4096, False),
                                            ("s.tf32", 8, 14336, 4096, False), ("d", 8, 14336, 4096, False),
                                            ("h", 17, 64, 64, True), ("h", 17, 64, 63, False),
                                            ("h", 64, 256, 1000, True), ("bs", 600, 93, 25, False),
                                            ("d", 1024, 1024, 1024, False),
                                            ("d", 2048, 2048, 2048, True),
                                            ("h", 13, 901, 2459, True), ("b", 1987, 12, 1802, True),
                                            ("h", 11, 901, 2459, False), ("s.tf32", 13, 901, 2459, False),
                                            ("h", 12, 131, 130, False)])
def test_auto_takes_few_row_products_to_the_cuda_path_only_where_it_was_faster(key, m, n, k, cuda):
    """C of few rows or columns stays with OpenCL's multi-vector GEMV except for large 16-bit products of
    two rows or more (NVIDIA's OpenCL has no half arithmetic) and 16-bit ones of 12 to 16 (narrow blocks
    of wgmma), as any product; small float64 products stay on OpenCL, and small 16-bit ones whose rows the
    CUDA path would lay out first for TMA (OpenCL's one launch is sooner)."""
    from autogemm.engine.routes.cuda_host import goes_to_cuda

    assert goes_to_cuda(DTYPES[key], m, n, k, Thresholds(), Op(), Op()) is cuda


@pytest.mark.parametrize("key,m,n,k,layout,in_place", [
    ("h", 64, 64, 64, "NN", True), ("h", 64, 64, 63, "NN", False),      # A's rows of K, 126 bytes
    ("h", 64, 64, 63, "TN", True),            # both read MN-major: rows of M and N, 128 bytes
    ("h", 17, 64, 63, "TN", False), ("h", 64, 64, 64, "NT", True), ("b", 64, 40, 64, "NT", True),
    ("b", 64, 40, 60, "NT", False), ("s.tf32", 64, 64, 64, "NT", True), ("s.3xtf32", 64, 64, 64, "NT", False)])
def test_the_cuda_path_knows_which_operands_it_reads_where_they_lie(key, m, n, k, layout, in_place):
    """TMA reads rows 16 bytes aligned: of K where an operand is stored K-contiguous, of M or N where it is
    read MN-major as it lies; 3xTF32 always splits its operands into planes first. Small 16-bit products
    the default configuration would lay out stay on OpenCL, and so do those the chosen one would."""
    from autogemm.blas.cuda_gemm import reads_in_place
    from autogemm.engine.routes.cuda_host import goes_to_cuda

    dt = DTYPES[key]
    ops = Op.from_letter(layout[0], "a"), Op.from_letter(layout[1], "b")
    assert reads_in_place(CUDA_DEFAULTS[key], dt, m, n, k, *ops) is in_place
    if key in ("h", "b"):
        assert goes_to_cuda(dt, m, n, k, Thresholds(), *ops) is in_place
        assert goes_to_cuda(dt, m, n, k, Thresholds(cuda_laid_out_min_multiply_adds=()), *ops)


def test_a_shallow_product_the_cuda_path_would_lay_out_stays_on_opencl_unless_its_c_is_large():
    """Over a K of one wgmma instruction or less, a 16-bit product is the writing of C, and the layout
    passes would be most of the CUDA path's time: it stays on OpenCL up to 2^28 multiply-adds."""
    from autogemm.engine.routes.cuda_host import goes_to_cuda

    nn = Op.from_letter("N", "a"), Op.from_letter("N", "b")       # B read MN-major: rows of 1135 halves
    limits = Thresholds()
    assert not goes_to_cuda(DTYPES["h"], 645, 1135, 8, limits, *nn)
    assert goes_to_cuda(DTYPES["h"], 645, 1135, 17, limits, *nn)            # deeper: the tensor cores work
    assert goes_to_cuda(DTYPES["b"], 46444, 1544, 6, limits, *nn)           # a C of 2^26 elements
    assert goes_to_cuda(DTYPES["h"], 640, 1136, 8, limits, *nn)             # read where it lies: no pass
    assert limits.cuda_laid_out_below("h", 16) == 2**28 and limits.cuda_laid_out_below("h", 17) == 2**22
    assert goes_to_cuda(DTYPES["h"], 645, 1135, 8, Thresholds(cuda_shallow_laid_out_multiply_adds=()), *nn)


@pytest.mark.parametrize("key,layout,m,n,k,reads", [
    ("h", "NN", 64, 64, 64, "as chosen"), ("b", "TT", 72, 136, 200, "as chosen"),
    ("d", "NT", 64, 64, 64, "as chosen"),          # both K-contiguous: the default reads them
    ("d", "NN", 64, 64, 64, "as chosen"),          # B stored K x N: the default reads it as it lies
    ("d", "NN", 64, 64, 64, "MN-major"),           # a configuration that lays it out: its form that reads it
    ("s.tf32", "TN", 64, 64, 64, None),            # tf32 reads one operand MN-major, not two
    ("s.3xtf32", "NT", 64, 64, 64, None),          # planes are split first
    ("h", "NN", 64, 64, 60, None)])                # rows of 60 halves: not 16-byte aligned
def test_a_batch_runs_the_form_of_its_configuration_that_reads_the_stacks_as_they_lie(key, layout, m, n, k, reads):
    from autogemm.engine.routes.cuda_host import batch_params

    ops = Op.from_letter(layout[0], "a"), Op.from_letter(layout[1], "b")
    params = replace(CUDA_DEFAULTS[key], reads_mn_major=False) if reads == "MN-major" else CUDA_DEFAULTS[key]
    chosen = batch_params(params, DTYPES[key], m, n, k, *ops)
    if reads == "MN-major":                        # as a profile's entry may hold
        assert chosen == replace(params, reads_mn_major=True)
    else:
        assert chosen == (params if reads else None)


def test_a_batch_of_small_matrices_stays_on_opencl():
    """OpenCL's small work-groups waste little on matrices of 16 or 32 (complex128's of 16); the CUDA
    kernels' blocks are 64 x 64 at least. A dtype the thresholds do not name never takes the CUDA path in a batch."""
    limits = Thresholds()
    assert [limits.cuda_batch_min(key) for key in ("h", "b", "d", "z", "s.tf32")] == [48, 48, 48, 32, 64]
    assert limits.cuda_batch_min("s") == float("inf") and limits.cuda_batch_min("s.3xtf32") == float("inf")
    assert Thresholds.from_dict({"cuda_batch_min_side": {"z": 64}}).cuda_batch_min("z") == 64


def _stack(rng, dt, batch, rows, cols, shared):
    return random_matrix(rng, dt, (rows, cols) if shared else (batch, rows, cols))


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["h", "b", "d", "z", "s.tf32"])
@pytest.mark.parametrize("trans_a,trans_b,shared", [("N", "N", False), ("T", "T", False), ("N", "T", "a"),
                                                    ("T", "N", "b")])
@pytest.mark.usefixtures("hopper")
def test_a_strided_batch_runs_on_the_cuda_path_in_one_launch(device, monkeypatch, key, trans_a, trans_b, shared):
    """A batch of numpy stacks (one operand a matrix every product shares) in every layout its kernel reads
    as it lies, C poisoned, checked against float64 product by product; the route kept is the CUDA path's
    plan of the whole batch. (tf32 reads one operand MN-major: TN runs on OpenCL, and is checked too.)"""
    from autogemm.engine import dispatch
    from autogemm.engine.routes.cuda_host import CudaHostRoute

    monkeypatch.setattr(dispatch.ROUTES, "_routes", type(dispatch.ROUTES._routes)())
    dt = DTYPES[key]
    rng = np.random.default_rng(len(key) + ord(trans_a) + ord(trans_b))
    batch, m, n, k = 7, 96, 136, 200
    a = _stack(rng, dt, batch, *((k, m) if trans_a == "T" else (m, k)), shared == "a")
    b = _stack(rng, dt, batch, *((n, k) if trans_b == "T" else (k, n)), shared == "b")
    c = np.full((batch, m, n), np.nan, dt.output.numpy)
    got = autogemm.gemm_batched(a, b, c, trans_a=trans_a, trans_b=trans_b, precision=dt.precision or None,
                                device=device)
    assert got is c
    for i in range(batch):
        x, y = (a if shared == "a" else a[i]), (b if shared == "b" else b[i])
        reference = Reference(dt, apply_op(x, trans_a), apply_op(y, trans_b), rng)
        error, ok = reference.check(got[i])
        assert ok, f"{key} {trans_a}{trans_b} product {i}: error {error:.2e}"
    routes = list(dispatch.ROUTES._routes.values())
    on_cuda = key != "s.tf32" or (trans_a, trans_b) != ("T", "N")
    assert isinstance(routes[-1], CudaHostRoute) is on_cuda
    if on_cuda:
        assert routes[-1].plan.layers == batch


@pytest.mark.parametrize("key", ["h", "b", "s.tf32"])
def test_a_batch_of_small_matrices_takes_two_blocks_a_multiprocessor(key):
    """A batch of many 64 x 64 products runs two blocks of one consumer on each multiprocessor (while one
    stores its block of C the other multiplies); a large product keeps one block of two."""
    params = CUDA_DEFAULTS[key]
    small = fitted(params, 64, 64, 64, 132, 1024)
    assert (small.block_m, small.block_n, small.per_multiprocessor) == (64, 64, 2) and small.malformed() is None
    large = fitted(params, 4096, 4096, 4096, 132)
    assert large.per_multiprocessor == 1 and large.consumers == 2
    assert replace(params, consumers=2, per_multiprocessor=2).malformed() is not None
    assert replace(params, consumers=1, block_n=256, per_multiprocessor=2).malformed() is not None


@pytest.mark.parametrize("key", ["h", "hs", "b", "bs"])
def test_ping_pong_consumers_take_products_where_storing_c_would_idle_the_tensor_cores(key):
    """Two consumers taking blocks of 64 rows alternately (one stores C while the other's products run) where a
    product's K is short against storing a block of C and its blocks fill the multiprocessors twice; one
    block of two consumers at a time for a long K (4096^3), and where there are no more blocks than
    multiprocessors (1024^3 in 64 x 128: 128)."""
    params = CUDA_DEFAULTS[key]
    for (m, n, k, layers), tile in [((128, 128, 128, 300), (64, 128)), ((192, 192, 192, 128), (64, 256)),
                                    ((2048, 2048, 512, 1), (64, 256))]:
        got = fitted(params, m, n, k, 132, layers)
        assert got.ping_pong and (got.block_m, got.block_n) == tile and got.malformed() is None
    assert not fitted(params, 4096, 4096, 4096, 132).ping_pong
    assert not fitted(params, 1024, 1024, 1024, 132).ping_pong
    assert not any(t.ping_pong for t, _ in CUDA_DEFAULTS["s.tf32"].tilings())    # (not yet checked on a GPU)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["h", "hs", "b"])
@pytest.mark.parametrize("trans_a,trans_b", LAYOUTS)
@pytest.mark.usefixtures("hopper")
def test_ping_pong_consumers_compute_a_batch_in_every_layout(device, key, trans_a, trans_b):
    from autogemm.engine import dispatch

    dt = DTYPES[key]
    rng = np.random.default_rng(ord(trans_a) + 2 * ord(trans_b))
    batch, m, n, k = 300, 128, 120, 136
    a = random_matrix(rng, dt, (batch, k, m) if trans_a == "T" else (batch, m, k))
    b = random_matrix(rng, dt, (batch, n, k) if trans_b == "T" else (batch, k, n))
    c = np.full((batch, m, n), np.nan, dt.output.numpy)
    got = autogemm.gemm_batched(a, b, c, trans_a=trans_a, trans_b=trans_b, precision=dt.precision or None,
                                device=device, backend="cuda")
    assert list(dispatch.ROUTES._routes.values())[-1].plan.params.ping_pong
    for i in (0, 1, 150, 299):
        error, ok = Reference(dt, apply_op(a[i], trans_a), apply_op(b[i], trans_b), rng).check(got[i])
        assert ok, f"{key} {trans_a}{trans_b} product {i}: error {error:.2e}"


FORCED = {"ping-pong": dict(consumers=2, block_n=128, stages=4, ping_pong=True),
          "narrow": dict(consumers=1, block_n=16, stages=8, ping_pong=False)}


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["s.tf32", "h"])
@pytest.mark.parametrize("trans_a,trans_b", LAYOUTS)
@pytest.mark.parametrize("form,n", [("ping-pong", 9 * 128 - 6), ("narrow", 9 * 16 - 3), ("narrow", 9 * 16 - 2)])
@pytest.mark.usefixtures("hopper")
def test_forms_the_tile_model_does_not_take_yet_compute_a_product_in_every_reading(device, monkeypatch, key,
                                                                                 trans_a, trans_b, form, n):
    """Ping-pong consumers in blocks of 64 x 128, and narrow blocks of 16 columns (C stored from the
    registers: by pairs, or one by one where N is odd), forced on a product of hundreds of blocks of C
    (each block's consumers take one to three), in every layout: TF32's A read through the registers, C
    stored transposed; against float64 with beta 0 over a NaN C. (The tile model leaves TF32's ping-pong
    and narrow blocks out: measured for 16-bit operands alone.)"""
    from autogemm.blas import selection
    from autogemm.engine import dispatch

    forced = replace(CUDA_DEFAULTS[key], per_multiprocessor=1, cluster=1, **FORCED[form])
    monkeypatch.setattr(selection, "fitted", lambda params, *args: forced)
    m, k = 33 * 64 - 5, 200
    dt, a, b, reference = _case(key, trans_a, trans_b, m, n, k, seed=3 + ord(trans_a) + 2 * ord(trans_b))
    c = np.full((m, n), np.nan, dt.output.numpy)
    got = autogemm.gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, precision=dt.precision or None,
                        device=device, backend="cuda")
    error, ok = reference.check(got)
    assert ok, f"{key} {form} {trans_a}{trans_b}: error {error:.2e}"
    assert list(dispatch.ROUTES._routes.values())[-1].plan.params == forced


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["h", "s.tf32"])
@pytest.mark.usefixtures("hopper")
def test_two_blocks_a_multiprocessor_compute_a_batch_of_small_matrices(device, key):
    from autogemm.engine import dispatch

    dt = DTYPES[key]
    rng = np.random.default_rng(9)
    batch, m, n, k = 600, 64, 64, 200
    a, b = random_matrix(rng, dt, (batch, m, k)), random_matrix(rng, dt, (batch, k, n))
    c = np.full((batch, m, n), np.nan, dt.output.numpy)
    got = autogemm.gemm_batched(a, b, c, precision=dt.precision or None, device=device, backend="cuda")
    plan = list(dispatch.ROUTES._routes.values())[-1].plan
    assert plan.params.per_multiprocessor == 2 and plan.resident == 2 * plan.ctx.multiprocessors
    for i in (0, 299, 599):
        error, ok = Reference(dt, a[i], b[i], rng).check(got[i])
        assert ok, f"{key} product {i}: error {error:.2e}"


def test_the_cuda_path_sees_a_stack_as_matrices_a_layer_apart_and_a_shared_matrix_as_one():
    from autogemm.bench.runner import stored_operands
    from autogemm.bench.shapes import Shape
    from autogemm.blas.cuda_gemm import stack_stride

    assert stack_stride((5, 72, 200)) == 72 * 200
    assert stack_stride((1, 72, 200)) == 0 and stack_stride((72, 200)) == 0
    memory = [SimpleNamespace(pointer=0)] * 3
    a, b = np.empty((5, 200, 72), np.float16), np.empty((136, 200), np.float16)       # A^T stacked, B^T shared
    stored_a, stored_b = stored_operands(memory, a, b, Shape(72, 136, 200, "TT"))
    assert (stored_a.rows, stored_a.ld, stored_a.transposed, stored_a.layer_stride) == (72, 72, True, 200 * 72)
    assert (stored_b.rows, stored_b.ld, stored_b.transposed, stored_b.layer_stride) == (136, 200, False, 0)


def test_a_batch_of_few_blocks_of_c_shares_their_k_across_its_products():
    """Three products of 128 x 128 over a long K: 12 blocks of C of every layer, all of whose K the
    blocks share (stream-K over the tiles of every product)."""
    tiled = fitted(CUDA_DEFAULTS["h"], 128, 128, 8192, 132, 3)
    schedule = render_wgmma(tiled).schedule(128, 128, 8192, 132 * tiled.per_multiprocessor, 3)
    assert schedule.tiles == 12 and schedule.whole == 0 and schedule.arrivals and schedule.grid[0] > 12


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("batch,m,n,k,shared_a,alpha,beta", [
    (5, 128, 64, 96, True, 0.5, -2.0),          # C scaled by beta, A a stack of one that every product reads
    (3, 128, 128, 8192, False, 1.0, 0.0)])       # 12 blocks of C whose K the blocks share across products
@pytest.mark.usefixtures("hopper")
def test_a_cuda_batch_agrees_with_float64(device, batch, m, n, k, shared_a, alpha, beta):
    dt = DTYPES["h"]
    rng = np.random.default_rng(k)
    a, b = random_matrix(rng, dt, (1 if shared_a else batch, m, k)), random_matrix(rng, dt, (batch, n, k))
    c = random_matrix(rng, dt, (batch, m, n)) if beta else np.full((batch, m, n), np.nan, dt.output.numpy)
    want = alpha * (a.astype(np.float64) @ b.astype(np.float64).transpose(0, 2, 1))
    if beta:
        want += beta * c.astype(np.float64)
    got = autogemm.gemm_batched(a, b, c.copy(), alpha=alpha, beta=beta, trans_b="T", device=device, backend="cuda")
    assert np.isfinite(got).all() and np.abs(got - want).max() <= 2e-2 * np.abs(want).max()
