"""``CudaGemm``: one product on the CUDA path, with the sm_90a families (``codelets.wgmma`` for 16-bit,
TF32 and 3xTF32 operands, ``codelets.dmma`` for float64 and complex128). Those kernels read A (M x K)
and B (N x K) through TMA, rows a multiple of 16 bytes apart, K-contiguous or, where the configuration
reads them so, MN-contiguous (A stored K x M, B K x N); any other storage (a conjugate, a K whose rows
would not be 16 bytes apart) is first brought into the K-contiguous layout on the device
(``codelets.k_major``), and 3xtf32's operands are split into their two planes there. A 3xtf32 product
whose operands hold a value the split cannot make parts of (inf, NaN, or a value below 2^-115 but zero)
is computed in plain float32 instead (``codelets.float32_product``): the split flags such values on the
device, and the tensor-core kernel and the float32 one each look at the flag, so that the host never
waits for it.

``blas.defaults.CUDA_DEFAULTS`` are the configurations a dtype runs with where the device's profile has no
CUDA entry: the fastest measured at 4096 and 8192 (the figures are in ``benchmarks``). A profile's CUDA
entries (``autogemm tune``, ``tuning.cuda_classes``) name the configuration for the products nearest
each class, and which backend was faster there (``selection.choose_cuda_params``)."""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict
from dataclasses import dataclass

from ..blas.problem import Op
from ..codelets import complex_embedding, float32_product, k_major
from ..codelets.dmma import DmmaParams
from ..codelets.hopper import STORE_K_TILES, Rendered, Schedule, device_problem, rounds, shared_out, twin_problem
from ..codelets.registry import family_of
from ..codelets.wgmma import WgmmaParams
from ..codelets.wgmma.render import SPLIT_THREADS, split
from ..dtypes import Dtype
from ..runtime.cuda import CudaContext, CudaDevice, DeviceMemory, compile_cuda, cuda_context, cuda_missing
from ..runtime.cuda.context import Argument, Complex128, Prepared
from ..runtime.cuda.driver import cuda_device_of
from ..runtime.opencl.device import Device
from ..runtime.opencl.discovery import devices
from .complex_embedding import REAL_KEYS, depth, real_dtype, real_sizes
from .defaults import CUDA_DEFAULTS

#: The alignment in bytes of the memory a TMA tensor map describes.
TMA_ALIGNMENT = 16
#: Launches a plan keeps prepared, for the memory and scalars of its most recent calls.
PREPARED_LAUNCHES = 16
#: A configuration of either CUDA family.
CudaParams = WgmmaParams | DmmaParams


def cuda_target(device: Device, dt: Dtype) -> tuple[CudaContext | None, str | None]:
    """The CUDA context ``dt``'s products on the OpenCL ``device`` run in, or None and why there is none."""
    why = cuda_unreachable(device, dt)
    return (None, why) if why else (cuda_context(cuda_device_of(device)), None)


def cuda_unreachable(device: Device, dt: Dtype) -> str | None:
    """Why ``dt``'s products on the OpenCL ``device`` have no CUDA path, or None where they have one (its
    context is not made)."""
    return no_kernels(dt) or cuda_missing() or device_problem(device)


def cuda_ready(twin: CudaDevice, dt: Dtype) -> tuple[CudaContext | None, str | None]:
    """The CUDA context of the CUDA device ``twin`` for ``dt``'s products, or None and why there is none."""
    why = no_kernels(dt) or twin_problem(twin)
    return (None, why) if why else (cuda_context(twin), None)


def no_kernels(dt: Dtype) -> str | None:
    """Why the CUDA path has no kernels for ``dt``, or None where it has (a dtype computed as the real
    product of its embedding, ``complex_embedding.REAL_KEYS``, has none of its own: its calls take the
    real dtype's, ``complex_embedding.kernel_problem``)."""
    if dt.key in CUDA_DEFAULTS:
        return None
    if dt.key in REAL_KEYS:
        return f"{dt.routine} runs on the kernels of {REAL_KEYS[dt.key]} (as its real embedding)"
    return f"{dt.routine} has no CUDA kernels (its OpenCL ones are as fast)"


def lies(rows: int, k: int, ld: int, transposed: bool, conjugated: bool, element_bytes: int, pointer: int = 0,
         layer_bytes: int = 0) -> tuple[bool, bool]:
    """How an operand the kernels read as X (``rows`` x K) lies for TMA, stored as X or, ``transposed``, as
    X^T, its rows ``ld`` elements apart from ``pointer`` (in a strided batch, its matrices ``layer_bytes``
    apart): whether a kernel can read it MN-major as it lies (stored transposed, dense, its rows 16-byte
    aligned), and K-major (stored as X, dense, over a K whose rows are 16-byte aligned); neither where it
    is conjugated or its memory (each of its matrices) is not 16-byte aligned."""
    aligned = not conjugated and pointer % TMA_ALIGNMENT == 0 and layer_bytes % TMA_ALIGNMENT == 0
    return (aligned and transposed and ld == rows and rows * element_bytes % TMA_ALIGNMENT == 0,
            aligned and not transposed and ld == k and k * element_bytes % TMA_ALIGNMENT == 0)


def dense_lying(dt: Dtype, m: int, n: int, k: int, op_a: Op, op_b: Op) -> tuple[tuple[bool, bool], tuple[bool, bool]]:
    """How the dense row-major operands of an m x n x k product of ``dt``, stored as ``op_a`` and ``op_b``
    say, lie for the kernels (``lies``: A as M x K, B as N x K)."""
    return (lies(m, k, m if op_a.transposed else k, op_a.transposed, op_a.conjugated, dt.itemsize),
            lies(n, k, k if op_b.transposed else n, not op_b.transposed, op_b.conjugated, dt.itemsize))


def reads_in_place(params: CudaParams, dt: Dtype, m: int, n: int, k: int, op_a: Op, op_b: Op) -> bool:
    """Whether the kernel of ``params`` reads dense row-major operands of an m x n x k product of ``dt``,
    stored as ``op_a`` and ``op_b`` say, where they lie: no launch lays one out (or splits it into planes)
    before the product (``reading``)."""
    lying = dense_lying(dt, m, n, k, op_a, op_b)
    mn_major, swapped = reading(params, lying, m < n)
    read = (lying[1], lying[0]) if swapped else lying
    return getattr(params, "planes", 1) == 1 and all(mn or k_major for mn, (_, k_major) in zip(mn_major, read))


@functools.lru_cache(maxsize=256)
def fitted(params: CudaParams, m: int, n: int, k: int, multiprocessors: int, layers: int = 1,
           mn_major: tuple[bool, bool] = (False, False)) -> CudaParams:
    """``params`` with the tile of C (its family's ``TILE_RATES``, ``tilings``) that computes an m x n x k
    product (or a strided batch of ``layers``) soonest: its blocks of C run in rounds on ``multiprocessors``,
    one or, where the tiling says, two at once a multiprocessor (``in_flight``: two blocks, or two
    ping-pong consumers), whole, or where the family can, a last round shared where most would idle
    (``codelets.hopper.rounds``; a dmma kernel has stream-K compiled in only then, ``sharing``). A round
    takes its tiles of K, and the stores of C that no other block's products hide (``STORE_K_TILES``:
    each round's with one block at a time, the last alone with two), times the tile's area over its rate (a
    block's). A product of few large tiles would leave multiprocessors idle and takes smaller ones, which
    keep every multiprocessor working though they read more of A and B a flop; where there are no more
    blocks than multiprocessors, a tiling of two at once is left to its one-block form. Each tile comes
    in its family's stages for it (wgmma: the most that fit, up to 8, but for the configuration's own
    tile). A dmma configuration's own tile is a candidate too, first (at the rate of the slowest measured
    tile where it is none of them). Only tiles that read A and B as ``mn_major`` says (the product's
    ``reading``) are weighed: a narrow block reads B K-major alone. Worked out once a process for each
    product (a call on device tensors must cost the host little)."""
    best, best_time = params, None
    for tiled, rate in params.tilings(n):
        tiles = -(-m // (tiled.block_m * tiled.cluster)) * -(-n // tiled.block_n) * layers
        if tiled.in_flight > 1 and tiles <= multiprocessors // tiled.cluster:
            continue                                # one block a multiprocessor: as its tile's one-block form
        clusters = multiprocessors * tiled.in_flight // tiled.cluster
        k_tiles = -(-k // tiled.block_k)
        tiled = tiled.sharing(shared_out(tiles, clusters, k_tiles, tiled.single_round)[0] < tiles)
        turns = rounds(tiles, clusters, k_tiles, tiled.single_round) if tiled.shares_k else -(-tiles // clusters)
        stores = turns if tiled.in_flight == 1 else 1 / tiled.in_flight        # those not hidden
        time = (turns * k_tiles + stores * STORE_K_TILES) * tiled.block_m * tiled.block_n / rate
        if (tiled.malformed() is None and tiled.mn_major_problem(mn_major) is None
                and (best_time is None or time < best_time)):
            best, best_time = tiled, time
    return best


@functools.lru_cache(maxsize=16)
def opencl_twin(twin: CudaDevice) -> Device | None:
    """The OpenCL device that is the CUDA device ``twin`` (same PCI location), or None."""
    return next((d for d in devices() if d.pci_location == twin.pci), None)


@functools.lru_cache(maxsize=64)
def kernel_for(params: CudaParams, mn_major: tuple[bool, bool] = (False, False), c_transposed: bool = False
               ) -> Rendered:
    """A configuration's kernel for operands lying K-major or, where ``mn_major``, MN-major, and for
    ``c_transposed``, given swapped and storing C transposed (where its family can: ``reading`` says
    which), rendered by its family once a process (every call makes a plan)."""
    return family_of(params).render(params, mn_major, c_transposed)


@functools.lru_cache(maxsize=1)
def _layout_source() -> str:
    return k_major.render()


@functools.lru_cache(maxsize=64)
def _cubin(source: str, name: str):
    """NVRTC's cubin of a source, compiled once in a process (compiling a kernel costs far more than a call)."""
    return compile_cuda(source, name)


@functools.lru_cache(maxsize=64)
def cuda_plan(ctx: CudaContext, dt: Dtype, m: int, n: int, k: int, params: CudaParams | None = None,
              layers: int = 1) -> CudaGemm:
    """The ``CudaGemm`` of a product (or a strided batch of ``layers``) with ``params`` (by default the
    dtype's ``CUDA_DEFAULTS``), made once a process (a call on device tensors must cost the host little)."""
    return CudaGemm(ctx, dt, m, n, k, params, layers)


def stack_stride(shape: tuple[int, ...]) -> int:
    """Elements from one matrix of a dense stack of this ``shape`` to the next: 0 for a matrix (or a
    stack of one), which every product of a batch reads (``DeviceOperand.layer_stride``)."""
    return shape[-1] * shape[-2] if len(shape) == 3 and shape[0] > 1 else 0


@dataclass(frozen=True)
class DeviceOperand:
    """An operand as it lies in device memory, seen as the ``rows`` x K matrix X the kernels read
    (A for A, op(B)^T for B): stored as X itself, or as X^T (``transposed``, K x ``rows``), its rows
    ``ld`` elements apart; ``conjugated``: X is the conjugate of what is stored. In a strided batch,
    ``layer_stride`` elements from each product's matrix to the next (0: every product reads this one)."""

    memory: DeviceMemory
    rows: int
    ld: int
    transposed: bool
    conjugated: bool
    layer_stride: int = 0

    @property
    def key(self) -> tuple:
        """Everything a kernel's launch depends on: where the operand lies and how."""
        return int(self.memory.pointer), self.rows, self.ld, self.transposed, self.conjugated, self.layer_stride

    @classmethod
    def of_a(cls, memory: DeviceMemory, m: int, ld: int, op: Op, layer_stride: int = 0) -> DeviceOperand:
        return cls(memory, m, ld, op.transposed, op.conjugated, layer_stride)

    @classmethod
    def of_b(cls, memory: DeviceMemory, n: int, ld: int, op: Op, layer_stride: int = 0) -> DeviceOperand:
        """op(B)^T is the stored B where op transposes it, else its transpose."""
        return cls(memory, n, ld, not op.transposed, op.conjugated, layer_stride)


@functools.lru_cache(maxsize=256)
def orientations(params: CudaParams, lying: tuple[tuple[bool, bool], tuple[bool, bool]]
                 ) -> dict[bool, tuple[int, tuple[bool, bool]]]:
    """The ways a kernel of ``params`` can read A and B, which lie as ``lying`` says (for each, whether it
    can be read MN-major as it lies, and whether K-major), by whether it swaps them (``c_transposed``:
    computing C^T = B^T A^T, op(B)^T its A, A its B, where the family can): for each, the passes that lay
    an operand out first (each one more launch, reading and writing the whole operand once more before
    the product starts) and which operands it reads MN-major, the way of the fewest passes (on a tie,
    the most read as they lie). wgmma can read only its A MN-major in tf32 (``reads_a_from_registers``)."""
    best: dict[bool, tuple[int, int, tuple[bool, bool]]] = {}
    for swapped in (False, True) if params.stores_c_transposed else (False,):
        first, second = (lying[1], lying[0]) if swapped else lying
        wanted = (first[0], second[0])
        for rank, mn in enumerate((wanted, (wanted[0], False), (False, wanted[1]), (False, False))):
            if params.mn_major_problem(mn) is None:
                passes = sum(not read and not k_major for read, (_, k_major) in zip(mn, (first, second)))
                best[swapped] = min(best.get(swapped, (passes, rank, mn)), (passes, rank, mn))
    return {swapped: (passes, mn) for swapped, (passes, _, mn) in best.items()}


@functools.lru_cache(maxsize=256)
def reading(params: CudaParams, lying: tuple[tuple[bool, bool], tuple[bool, bool]], fewer_rows: bool = False
            ) -> tuple[tuple[bool, bool], bool]:
    """How a kernel of ``params`` reads A and B, which lie as ``lying`` says: which of them it reads
    MN-major, and whether it swaps them (``orientations``). The way with the fewest passes; on a tie,
    unswapped (C stored by TMA), but for a narrow block (``WgmmaParams.narrow``) of a product of
    ``fewer_rows`` than columns, which computes C^T so that its few rows are the block's columns. Worked
    out once a process for each (a call on device tensors must cost the host little)."""
    ways = orientations(params, lying)
    rows_across = fewer_rows and params.narrow
    swapped = min(ways, key=lambda way: (ways[way][0], way != rows_across))
    return ways[swapped][1], swapped


def layer_arguments(layers: int, a_layered: bool, b_layered: bool) -> list[Argument]:
    """A kernel's arguments of a strided batch (``codelets.hopper.LAYERS_PARAMETERS``): its ``layers``
    products, and whether the tensor maps of A and of B hold a matrix a product (else one all share)."""
    return [(layers, ctypes.c_int), (int(a_layered), ctypes.c_int), (int(b_layered), ctypes.c_int)]


def shared_k_arguments(ctx: CudaContext, schedule: Schedule, stream: object, work: list[DeviceMemory]
                       ) -> tuple[list[Argument], DeviceMemory | None]:
    """A kernel's last arguments where it can share the K of blocks of C (``Schedule.shares_k``): how
    many it computes whole, memory for the partial sums of the rest and their counters, allocated on
    ``stream`` (added to ``work``, to be released after the launch; none where it shares none); nothing
    for another kernel. And the counters, which must be zeroed before the launch (None where none)."""
    if not schedule.shares_k:
        return [], None
    if not schedule.arrivals:
        return [(schedule.whole, ctypes.c_int), (0, ctypes.c_void_p), (0, ctypes.c_void_p)], None
    partials = ctx.allocate(schedule.partial_bytes, stream)
    arrivals = ctx.allocate(4 * schedule.arrivals, stream)
    work += [partials, arrivals]
    return [(schedule.whole, ctypes.c_int), (partials, None), (arrivals, None)], arrivals


class CudaGemm:
    """C (M x N, row-major, dense) = alpha op(A) op(B) + beta C for ``dt`` on ``ctx``'s device with
    ``params`` (by default the dtype's ``CUDA_DEFAULTS``), or a strided batch of ``layers`` such products
    in one launch (C's matrices one after another; each operand a matrix a product or one they share,
    ``DeviceOperand.layer_stride``), read as they lie: a batch is not laid out, nor split into 3xtf32's
    planes (``reads_in_place`` says which batches it takes). complex64 in TF32 or 3xTF32 is the real
    product of its embedding (``complex_embedding``, m x 2n x 2 depth(k), ``params`` that product's): its operands
    are brought into that form on the device first, one product at a time. The kernels are compiled when
    it is made."""

    def __init__(self, ctx: CudaContext, dt: Dtype, m: int, n: int, k: int,
                 params: CudaParams | None = None, layers: int = 1) -> None:
        self.ctx, self.dt, self.m, self.n, self.k, self.layers = ctx, dt, m, n, k, layers
        real = real_dtype(dt)
        if real is not None and layers > 1:
            raise ValueError("a strided batch of complex64 products runs on OpenCL (the CUDA path embeds "
                             "one product at a time)")
        #: the real product that computes a complex64 one (``complex_embedding``), or None
        self.embedded = None if real is None else CudaGemm(ctx, real, *real_sizes(m, n, k), params)
        if self.embedded is not None:
            self.params = self.embedded.params
            self.embed, self.scale = (ctx.function(_cubin(complex_embedding.render(), "complex_embedding"), name)
                                      for name in (complex_embedding.EMBED, complex_embedding.SCALE))
            return
        self.params = params or CUDA_DEFAULTS[dt.key]
        self._layouts: dict[tuple[bool, bool], tuple[Rendered, object, Schedule]] = {}
        #: launches prepared for the memory and scalars of recent calls (``enqueue``)
        self._prepared: OrderedDict[tuple, Prepared] = OrderedDict()
        self.element_bytes = dt.itemsize
        self.padded = k_major.padded_k(k, self.element_bytes)
        rendered = kernel_for(self.params)
        function = ctx.function(_cubin(rendered.source, rendered.name), rendered.name)
        self.resident = ctx.resident_blocks(function, rendered.block[0], rendered.shared_bytes, self.params.cluster,
                                            self.params.per_multiprocessor)
        arrange = _cubin(_layout_source(), "k_major")
        self.arrange = ctx.function(arrange, k_major.NAMES[self.element_bytes])
        self.planes = getattr(self.params, "planes", 1)
        if layers > 1 and self.planes == 2:
            raise ValueError("a strided batch of 3xtf32 products runs on OpenCL (its operands would be split)")
        if self.planes == 2:
            source, name = split()
            self.split = ctx.function(_cubin(source, name), name)
            self.float32_product = ctx.function(_cubin(float32_product.render(), float32_product.NAME),
                                                float32_product.NAME)

    def enqueue(self, a: DeviceOperand, b: DeviceOperand, c: DeviceMemory, alpha: complex | float,
                beta: complex | float, stream: object = None) -> Prepared | None:
        """Enqueue the product on ``stream`` (by default the context's). Operands the kernel cannot read
        as they lie are first laid out in memory allocated on that stream and freed there after it. A
        product the kernel reads as it lies, with no partial sums to allocate, is prepared once for its
        memory and scalars: a call that repeats them only enqueues the launch, which is returned (None
        where the product made memory of its own)."""
        stream = self.ctx.stream if stream is None else stream
        if self.embedded is not None:
            return self._enqueue_embedded(a, b, c, complex(alpha), complex(beta), stream)
        key = (a.key, b.key, int(c.pointer), alpha, beta)
        launch = self._prepared.get(key)
        if launch is not None:
            self._prepared.move_to_end(key)
            self.ctx.enqueue_prepared(launch, stream)
            return launch
        work: list[DeviceMemory] = []
        flag = self._unsplit_flag(stream, work)
        rendered, function, schedule = self._kernel(a, b)
        c_transposed = rendered.c_transposed
        first, second, m, n = (b, a, self.n, self.m) if c_transposed else (a, b, self.m, self.n)
        shared, counters = shared_k_arguments(self.ctx, schedule, stream, work)
        sources = self._arranged((first, second), rendered, stream, work, counters)
        maps = [self._tensor_map(stored, source, rendered, which, stream, work, flag)
                for which, (stored, source) in enumerate(zip((first, second), sources))]
        if self.params.c_box is not None:
            maps.append(maps[0] if c_transposed else self._c_map(c, maps[0]))
        scalars = [self._scalar(value) for value in (alpha, beta)]
        flagged: list[Argument] = [] if flag is None else [(flag, None)]
        batch = layer_arguments(self.layers, *map(self._layered, (first, second)))
        args: list[Argument] = [*((tensor_map, None) for tensor_map in maps), (c, None), (m, ctypes.c_int),
                                (n, ctypes.c_int), (self.padded, ctypes.c_int), *batch, *scalars, *flagged, *shared]
        launch = self.ctx.prepared(function, schedule.grid, rendered.block, args, rendered.shared_bytes)
        self.ctx.enqueue_prepared(launch, stream)
        if flag is not None:
            self._in_float32(a, b, c, scalars, flag, stream)
        for memory in work:
            memory.release()
        if work:
            return None
        self._prepared[key] = launch
        while len(self._prepared) > PREPARED_LAUNCHES:
            self._prepared.popitem(last=False)
        return launch

    def schedule(self, a: DeviceOperand, b: DeviceOperand) -> Schedule:
        """How the product's kernel is launched over operands lying as ``a`` and ``b`` do (its grid, and
        the blocks of C it shares the K of)."""
        if self.embedded is not None:
            return self.embedded.schedule(*self._real_operands(a.memory, b.memory))
        return self._kernel(a, b)[2]

    def _enqueue_embedded(self, a: DeviceOperand, b: DeviceOperand, c: DeviceMemory, alpha: complex,
                          beta: complex, stream: object) -> None:
        """A complex64 product as the real product of its embedding: A's and alpha B's real forms made in
        memory allocated on ``stream`` (freed there after the product, or after a launch that failed), C
        scaled by a complex beta first (a product that fails after that leaves C scaled); a real alpha and
        beta reach the real kernel as they are."""
        real_alpha, real_beta = alpha.imag == 0, beta.imag == 0
        forms: list[DeviceMemory] = []
        try:
            forms.append(self._real_form(a, 1, False, stream))
            forms.append(self._real_form(b, 1 if real_alpha else alpha, True, stream))
            if not real_beta:
                count = self.m * self.n
                self.ctx.launch(self.scale, complex_embedding.scale_grid(count, self.ctx.multiprocessors),
                                (complex_embedding.THREADS,),
                                [(c, None), (count, ctypes.c_longlong), (beta.real, ctypes.c_float),
                                 (beta.imag, ctypes.c_float)], stream=stream)
            self.embedded.enqueue(*self._real_operands(*forms), c, alpha.real if real_alpha else 1.0,
                                  beta.real if real_beta else 1.0, stream)
        finally:
            for memory in forms:
                memory.release()
        return None

    def _real_form(self, stored: DeviceOperand, alpha: complex, doubled: bool, stream: object) -> DeviceMemory:
        """The real form of a complex64 operand (``codelets.complex_embedding``: A's parts, or with
        ``doubled`` the embedding of alpha op(B), transposed), dense and K-contiguous, its K made even
        (``complex_embedding.depth``), in memory allocated on ``stream``."""
        rows, alpha, even = stored.rows, complex(alpha), depth(self.k)
        form = self.ctx.allocate((2 if doubled else 1) * rows * 2 * even * 4, stream)
        self.ctx.launch(self.embed, complex_embedding.embed_grid(rows, even, self.ctx.multiprocessors),
                        (complex_embedding.TILE, complex_embedding.ROWS_PER_PASS),
                        [(stored.memory, None), (stored.ld, ctypes.c_longlong), (int(stored.transposed), ctypes.c_int),
                         (int(stored.conjugated), ctypes.c_int), (rows, ctypes.c_int), (self.k, ctypes.c_int),
                         (even, ctypes.c_int), (alpha.real, ctypes.c_float), (alpha.imag, ctypes.c_float),
                         (int(doubled), ctypes.c_int), (form, None)], stream=stream)
        return form

    def _real_operands(self, a: DeviceMemory, b: DeviceMemory) -> tuple[DeviceOperand, DeviceOperand]:
        """The real product's operands in the real forms at ``a`` and ``b``: m x 2K and 2n x 2K, K-major
        (K the even ``depth``)."""
        ld = 2 * depth(self.k)
        return DeviceOperand(a, self.m, ld, False, False), DeviceOperand(b, 2 * self.n, ld, False, False)

    def _kernel(self, a: DeviceOperand, b: DeviceOperand) -> tuple[Rendered, object, Schedule]:
        """The kernel that reads operands lying as ``a`` and ``b`` do with the fewest passes (``reading``;
        its ``c_transposed``: given as B^T and A^T), its compiled function and schedule (``_layout``)."""
        return self._layout(*reading(self.params, (self._lies(a), self._lies(b)), self.m < self.n))

    def _layout(self, mn_major: tuple[bool, bool], c_transposed: bool = False
                ) -> tuple[Rendered, object, Schedule]:
        """The kernel for operands lying so (``mn_major``; ``c_transposed``: given as B^T and A^T, C stored
        transposed), its compiled function and its schedule over the product's blocks, made once a plan:
        a call only binds its memory and scalars."""
        found = self._layouts.get((mn_major, c_transposed))
        if found is None:
            rendered = kernel_for(self.params, mn_major, c_transposed)
            function = self.ctx.function(_cubin(rendered.source, rendered.name), rendered.name)
            m, n = (self.n, self.m) if c_transposed else (self.m, self.n)
            schedule = rendered.schedule(m, n, self.padded, self.resident, self.layers)
            found = self._layouts[mn_major, c_transposed] = rendered, function, schedule
        return found

    def _lies(self, stored: DeviceOperand) -> tuple[bool, bool]:
        """Whether the kernel can read the operand as it lies MN-major, and K-major (``lies``)."""
        return lies(stored.rows, self.k, stored.ld, stored.transposed, stored.conjugated, self.element_bytes,
                    int(stored.memory.pointer), stored.layer_stride * self.element_bytes)

    def _layered(self, stored: DeviceOperand) -> bool:
        """Whether the operand holds a matrix for each product of the batch (else one they all read)."""
        return self.layers > 1 and stored.layer_stride != 0

    def _unsplit_flag(self, stream: object, work: list[DeviceMemory]) -> DeviceMemory | None:
        """3xtf32's flag of an operand holding a value the split cannot make parts of, zeroed on ``stream``
        (added to ``work``); None for one plane."""
        if self.planes == 1:
            return None
        flag = self.ctx.allocate(4, stream)
        self.ctx.zero(flag, 4, stream)
        work.append(flag)
        return flag

    def _in_float32(self, a: DeviceOperand, b: DeviceOperand, c: DeviceMemory, scalars: list[Argument],
                    flag: DeviceMemory, stream: object) -> None:
        """Enqueue ``codelets.float32_product`` after the tensor-core kernel: the product in float32
        where the split set ``flag``, nothing otherwise."""
        tiles = -(-self.m // float32_product.TILE) * -(-self.n // float32_product.TILE)
        grid = (min(tiles, 4 * self.ctx.multiprocessors),)
        operands = [arg for x in (a, b) for arg in ((x.memory, None), (x.ld, ctypes.c_longlong),
                                                       (int(x.transposed), ctypes.c_int))]
        self.ctx.launch(self.float32_product, grid, (float32_product.THREADS,),
                        [(flag, None), *operands, (c, None), (self.m, ctypes.c_int), (self.n, ctypes.c_int),
                         (self.k, ctypes.c_int), *scalars], stream=stream)

    def _arranged(self, operands: tuple[DeviceOperand, DeviceOperand], rendered: Rendered, stream: object,
                  work: list[DeviceMemory], counters: DeviceMemory | None) -> list[DeviceMemory]:
        """The memory the kernel of ``rendered`` reads each operand from: where it lies, or laid out
        K-major (``codelets.k_major``) into memory allocated on ``stream`` (added to ``work``). Both are
        laid out by one launch, which zeroes the stream-K ``counters`` too; a memset zeroes them where
        neither is."""
        laying = [not rendered.mn_major[which] and not self._lies(stored)[1] for which, stored in enumerate(operands)]
        if any(laying) and self.layers > 1:
            raise ValueError("a strided batch's operands are read as they lie, not laid out (reads_in_place)")
        if not any(laying):
            if counters is not None:
                self.ctx.zero(counters, counters.nbytes, stream)
            return [stored.memory for stored in operands]
        memory: list[DeviceMemory] = []
        args: list[Argument] = []
        none: Argument = (0, ctypes.c_void_p)
        for lay, stored in zip(laying, operands):
            if lay:                 # from where it lies into memory of its own, its rows laid out
                arranged = self.ctx.allocate(stored.rows * self.padded * self.element_bytes, stream)
                work.append(arranged)
                memory.append(arranged)
                args += [(stored.memory, None), (arranged, None), (stored.rows, ctypes.c_int)]
            else:                   # read where it lies: no rows to lay out
                memory.append(stored.memory)
                args += [none, none, (0, ctypes.c_int)]
            flags = k_major.flags(stored.transposed, stored.conjugated)
            args += [(stored.ld, ctypes.c_longlong), (flags, ctypes.c_int)]
        zeroed = 0 if counters is None else counters.nbytes // 4
        args += [(self.k, ctypes.c_int), (self.padded, ctypes.c_int), (counters, None) if zeroed else none,
                 (zeroed, ctypes.c_int)]
        rows = [stored.rows if lay else 0 for lay, stored in zip(laying, operands)]
        self.ctx.launch(self.arrange, k_major.grid(*rows, self.padded, self.element_bytes),
                        (k_major.TILE_ROWS, k_major.ROWS_PER_PASS), args, stream=stream)
        return memory

    def _tensor_map(self, stored: DeviceOperand, memory: DeviceMemory, rendered: Rendered, which: int,
                    stream: object, work: list[DeviceMemory], flag: DeviceMemory | None) -> object:
        """The tensor map of operand ``which`` (0: A, 1: B) for ``rendered``, read from ``memory``
        (``_arranged``): as it lies MN-major, or K-major (and where 3xtf32 takes two planes, split into
        them first, values it cannot split setting ``flag``; the memory for that added to ``work``)."""
        box = rendered.tensor_boxes[which]
        matrices = self.layers if self._layered(stored) else 1
        layer_bytes = stored.layer_stride * self.element_bytes
        if rendered.mn_major[which]:
            return self.ctx.tensor_map(memory, rendered.tensor_shape(stored.rows, self.k, True),
                                       rendered.tensor_type, box, matrices, layer_bytes)
        if self.planes == 2:
            count = stored.rows * self.padded
            planes = self.ctx.allocate(2 * count * self.element_bytes, stream)
            work.append(planes)
            self.ctx.launch(self.split, (-(-count // SPLIT_THREADS),), (SPLIT_THREADS,),
                            [(memory, None), (planes, None), (count, ctypes.c_longlong),
                             (count, ctypes.c_longlong), (flag, None)], stream=stream)
            memory = planes
        shape = rendered.tensor_shape(self.planes * stored.rows, self.padded)
        return self.ctx.tensor_map(memory, shape, rendered.tensor_type, box, matrices, layer_bytes)

    def _c_map(self, c: DeviceMemory, placeholder: object) -> object:
        """The tensor map TMA stores C through, where C's rows are 16-byte aligned; else ``placeholder``
        (the kernel, seeing them unaligned, stores C from the registers)."""
        params = self.params
        if self.n * params.out_bytes % TMA_ALIGNMENT or int(c.pointer) % TMA_ALIGNMENT:
            return placeholder
        return self.ctx.tensor_map(c, (self.m, self.n), params.c_type, params.c_box, self.layers)

    def _scalar(self, value: complex | float) -> Argument:
        """alpha or beta as the kernel takes it: float32 (wgmma), or of the operands' type (dmma)."""
        if self.params.scalar_type == "float32":
            return float(value), ctypes.c_float
        if self.dt.is_complex:
            return Complex128(complex(value).real, complex(value).imag), None
        return float(value), ctypes.c_double
