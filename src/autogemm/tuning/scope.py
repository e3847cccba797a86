"""What a tuning run covers: the problems it tunes for (size classes) and the share of the budget each
gets, the whole run's default budget and the dtypes it covers.

GEMM is tuned on three square problems: a large one (where the rate is decided by the inner loop), a
small one (where filling the device with work-groups matters more, so smaller blocks win) and one between
them; and on a skinny one, C of a few dozen rows and a long K (a neural network's layer at a small batch),
searched with blocks of few rows besides the usual ones; and on a GPU on a tiny one, a C of a few blocks
over a K of hundreds, whose time is the latency of its K steps on the few compute units its blocks
occupy (blocks of one warp and one instruction win there); and on a GPU on strided batches of small
products (``BATCH_CLASSES``), whose many work-groups fill the device whatever the block, so that the share
of each block that is C, and not the compute units filled, decides. GEMV reads each element of A once, so its rate is
set by memory bandwidth: it is tuned on matrices far larger than the device's caches (a quarter GiB on a
GPU), per codelet layout (N for y = A x, T for y = A^T x) and shape (a square A, a long one: few outputs,
a long reduction, and square ones with several right-hand sides, ``VECTOR_CLASSES``: the GEMM of a C with
few columns). GEMV's rates are kept as GFLOP/s like GEMM's; ``bandwidth`` turns them into the GB/s they
stand for."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..accuracy import gemv_flops
from ..blas.problem import GemmProblem, Op
from ..blas.selection import vectors_route
from ..blas.vectors import MAX_VECTORS
from ..codelets.registry import GEMM, GEMV
from ..dtypes import NATIVE, Dtype, get_dtype
from ..profiles.profile import CLASSES, GEMV_CLASSES, LATENCY_CLASS, SHAPES
from ..runtime.opencl.device import Device
from ..workload import ShapeRecord
from .budget import Budget


@dataclass(frozen=True)
class SizeClass:
    """A problem tuned for: its name in the profile ("large"; GEMV's "n-square"; an exact shape's stored
    layout, "NT", or a GEMV's, "N"), its shape (GEMV's A is m x n, with k right-hand sides), the share of a
    dtype's budget it gets, the
    size of the square problem its finalists are ranked on where that is another (``confirm``), the
    ``routine``, how A and B are stored (``layout``: GEMV's codelet layout N or T, an exact GEMM shape's
    NN to TT; None: NN), whether the class is an ``exact`` shape, whose entry serves that very
    problem (``autogemm tune --shapes``), and the products of its shape measured together in one strided
    call (``batch``, a batch class's; else 1)."""

    name: str
    m: int
    n: int
    k: int
    share: float
    confirm: int | None = None
    layout: str | None = None
    routine: str = GEMM
    exact: bool = False
    batch: int = 1

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def skinny(self) -> bool:
        """True for a GEMM class whose C has few rows or columns (searched in the skinny spaces)."""
        return self.routine == GEMM and min(self.m, self.n) < SKINNY_BELOW

    @property
    def section(self) -> str:
        """The table of the profile its entry goes to."""
        return SHAPES if self.exact else GEMV_CLASSES if self.routine == GEMV else CLASSES


#: The predictor's training: not a size class, but a part of the budget like one.
PREDICTOR = "predictor"
#: What a run names the step that measures how calls are routed (``routes``).
ROUTES = "routes"
#: The size classes tuned for, largest first, and the share of a dtype's budget each gets; "gemv" is
#: GEMV's two layouts and four shapes (an eighth each), tuned for the dtypes in their own precision;
#: "predictor" times the classes' best kernels on sampled shapes, after them; "routes" times a few
#: squares at the end (``routes``), within the seconds the schedule keeps for steps besides searches.
CLASS_SHARES = {"large": 0.6, "medium": 0.2, "small": 0.2, "skinny": 0.2, LATENCY_CLASS: 0.1, "batch-16": 0.1,
                "batch-48": 0.1, "batch-128": 0.1, GEMV: 0.2, PREDICTOR: 0.8, ROUTES: 0.0}
#: An exact shape with fewer rows or columns of C than this is searched in the skinny spaces (blocks of
#: few rows or columns besides the usual ones).
SKINNY_BELOW = 128
#: The rows of the skinny class's C: past the multi-vector GEMV's 16, where 32 to 128 tokens of a layer
#: are nearest (the squares' kernels ran those at a fraction of cuBLAS's rate).
SKINNY_ROWS = 64
#: A GPU's tiny class (with ``quick``, its second shape): C of a few of the usual blocks (the skinny
#: spaces' narrow ones fill more compute units) over a K of many K steps.
TINY, TINY_QUICK = (96, 96, 768), (64, 64, 256)
#: A GPU's batch classes: name, the side of their square products and how many are measured together
#: (half as many with ``quick``); those under ``SKINNY_BELOW`` on a side are searched in the skinny
#: spaces, whose narrow blocks suit small matrices. A batch takes the nearest one's configurations where
#: it is as near as the nearest class of single products (``blas.selection.class_entries``).
BATCH_CLASSES = (("batch-16", 16, 4096), ("batch-48", 48, 1024), ("batch-128", 128, 256))
#: A GPU's large class ranks its finalists on a problem this many times larger in each dimension: the
#: largest problems keep less of their operands in the caches, and the tile that wins at 4096 can lose
#: at 8192.
CONFIRM_SCALE = 2

#: The bytes of A a GEMV class is tuned on: a GPU's (well past the caches, e.g. the H100's 50 MB of L2)
#: and a CPU's, and with ``quick``.
GPU_BYTES, CPU_BYTES, QUICK_BYTES = 2**28, 2**25, 2**22
#: GEMV's shape classes: a square A, a long one with as many elements, ``LONG_RATIO`` times fewer
#: outputs and a reduction as many times longer (a short, wide A for layout N, a tall, narrow one for T),
#: where a configuration must keep the device busy with few outputs, and squares with several right-hand
#: sides (``VECTOR_CLASSES``: the best configuration for 16 ran well below the best for 4 on products
#: with 4).
GEMV_SHAPES = ("square", "long", "few", "vectors")
LONG_RATIO = 8
VECTOR_CLASSES = {"few": 4, "vectors": MAX_VECTORS}


def size_classes(device: Device, quick: bool = False) -> tuple[SizeClass, ...]:
    """GEMM's classes on ``device``: large, medium and small squares (smaller with ``quick``, and on a
    CPU), and the skinny class, C of ``SKINNY_ROWS`` rows and the large square's columns and K; on a GPU
    the tiny class (``TINY``) and the batch classes (``BATCH_CLASSES``), and its large class is confirmed
    at twice its size."""
    if device.is_gpu:
        sizes = (2048, 768, 256) if quick else (4096, 1536, 512)
    else:
        sizes = (256, 128, 64) if quick else (768, 320, 128)
    classes = [SizeClass(name, n, n, n, CLASS_SHARES[name]) for name, n in zip(("large", "medium", "small"), sizes)]
    classes.append(SizeClass("skinny", SKINNY_ROWS, sizes[0], sizes[0], CLASS_SHARES["skinny"]))
    if device.is_gpu:
        classes.append(SizeClass(LATENCY_CLASS, *(TINY_QUICK if quick else TINY), CLASS_SHARES[LATENCY_CLASS]))
        classes += [SizeClass(name, side, side, side, CLASS_SHARES[name], batch=count // (1 + quick))
                    for name, side, count in BATCH_CLASSES]
        if not quick:
            classes[0] = replace(classes[0], confirm=CONFIRM_SCALE * classes[0].m)
    return tuple(classes)


def gemv_classes(device: Device, dt: Dtype, quick: bool = False) -> tuple[SizeClass, ...]:
    """GEMV's classes for ``dt`` on ``device``: each layout, N then T, with each of ``GEMV_SHAPES``, an
    equal part of the gemv share each."""
    share = CLASS_SHARES[GEMV] / (2 * len(GEMV_SHAPES))
    return tuple(SizeClass(f"{layout.lower()}-{kind}", *gemv_shape(device, dt, layout, kind, quick),
                           VECTOR_CLASSES.get(kind, 1), share, layout=layout, routine=GEMV)
                 for layout in "NT" for kind in GEMV_SHAPES)


#: An exact shape of more multiply-adds than this is left to the size classes: every candidate is checked
#: against a float64 product computed on the host, which takes seconds beyond it (and such products fill
#: the device as the large class does).
EXACT_MAX_WORK = 2**36


def exact_class(record: ShapeRecord, device: Device) -> SizeClass | None:
    """The class ``tune --shapes`` tunes a workload's shape as, with an equal share of the budget: a
    GEMV's own (A of m x n), a GEMM's as the kernels run it (a C of few columns or rows is a GEMV of
    several right-hand sides where ``device`` runs it so, ``blas.selection.vectors_route``); None where
    the size classes tune it: a batch, or a GEMM of more than ``EXACT_MAX_WORK`` multiply-adds."""
    if record.batch != 1:
        return None
    if record.routine == GEMV:
        return SizeClass(record.layout, record.m, record.n, 1, 1.0, layout=record.layout, routine=GEMV, exact=True)
    if record.m * record.n * record.k > EXACT_MAX_WORK:
        return None
    route = vectors_route(device, GemmProblem.dense(get_dtype(record.dtype), record.m, record.n, record.k,
                                         Op.from_letter(record.layout[0], "layout"),
                                         Op.from_letter(record.layout[1], "layout")))
    if route is not None:
        gemv = route.gemv
        return SizeClass(gemv.layout, gemv.rows, gemv.cols, gemv.vectors, 1.0, layout=gemv.layout, routine=GEMV,
                         exact=True)
    return SizeClass(record.layout, record.m, record.n, record.k, 1.0, layout=record.layout, exact=True)


def shape_classes(records: list[ShapeRecord], dt: Dtype, device: Device) -> tuple[SizeClass, ...]:
    """The classes ``exact_class`` makes of a workload's ``records`` of ``dt`` on ``device``, each once, the
    largest share of the workload's work first (``workload_work``): a run whose budget ends before the
    last has tuned the products where tuning pays; a product of a few thousand multiply-adds runs at the
    launch's floor whatever its kernel."""
    return tuple(dict.fromkeys(size for r in sorted(records, key=workload_work, reverse=True)
                               if r.dtype == dt.key and (size := exact_class(r, device)) is not None))


def workload_work(record: ShapeRecord) -> int:
    """A shape's multiply-adds over the whole workload: its count times each product's (GEMV's A once)."""
    return record.count * record.batch * record.m * record.n * max(record.k, 1)


def gemv_shape(device: Device, dt: Dtype, layout: str, kind: str, quick: bool = False) -> tuple[int, int]:
    """A's (rows, cols) for the ``kind`` class of ``layout``: of about ``*_BYTES`` (at most an eighth of the
    device's memory and of its largest allocation), the square's side a multiple of 256."""
    target = QUICK_BYTES if quick else (GPU_BYTES if device.is_gpu else CPU_BYTES)
    target = min(target, device.global_mem_bytes // 8, device.max_mem_alloc_bytes // 2)
    side = max(256, int(math.sqrt(target / dt.itemsize)) // 256 * 256)
    if kind != "long":
        return side, side
    outputs, reduction = side // LONG_RATIO, side * LONG_RATIO
    return (reduction, outputs) if layout == "T" else (outputs, reduction)


def bandwidth(dt: Dtype, shape: tuple[int, ...], gflops: float) -> float:
    """The GB/s a GEMV of ``shape`` (rows, cols, right-hand sides) at ``gflops`` moves: A once, each x once,
    each y written."""
    rows, cols, vectors = (*shape[:2], max(1, shape[2]) if len(shape) > 2 else 1)
    return gflops * (rows * cols + (rows + cols) * vectors) * dt.itemsize / gemv_flops(dt, rows, cols, vectors)


def default_budget(device: Device, quick: bool = False) -> Budget:
    """The whole run's budget: minutes on a GPU, less for a quick look."""
    if device.is_gpu:
        return Budget(seconds=120.0 if quick else 540.0)
    return Budget(seconds=60.0 if quick else 600.0)


def supported_dtypes(device: Device) -> tuple[Dtype, ...]:
    """The dtypes a tuning run covers unless told: s, d, c, z where the device can (16-bit ones, tuned
    only for their matrix instructions, are named explicitly)."""
    return tuple(dt for dt in NATIVE if not dt.tensor_only and (device.fp64 or not dt.needs_fp64))
