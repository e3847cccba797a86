"""How a configuration's work-groups cover a problem: how many blocks of C, how many K slices (split K)
or whether stream-K, and what share of the device's compute units the launch keeps busy, wave after
wave. Plans use it to split K; selection uses it to predict which stored configuration suits a shape
best."""

from __future__ import annotations

from ..codelets.kernel import MAX_SLICES, ceil_div
from ..codelets.registry import KernelParams, family_of, writes_16bit
from ..codelets.stream_k import STREAM_K, StreamPartition
from ..profiles import Thresholds
from ..runtime.opencl.device import Device
from .problem import INT32_MAX, GemmProblem

#: Problems with fewer multiply-adds are not split automatically: the merge of the slices is one more
#: launch, whose fixed cost a small product's split would not win back.
SPLIT_MIN_WORK = 2**30
#: A K slice is at least this deep (and 16 K steps), so that its partial sum is worth a pass over C.
MIN_SLICE_DEPTH = 256
#: ... and where the kernel adds the slices up itself, at least this deep and this many K steps: its
#: partial sums stay in the device's cache, and no launch of their own waits for them.
SUMMED_MIN_DEPTH = 64
SUMMED_MIN_STEPS = 8
#: The elements of partial sums (slices x a block of C) the work-group that adds a tile's slices up reads
#: at most: beyond, one work-group's reads take longer than the merge kernel's launch.
SUMMED_MAX_ELEMENTS = 2**16
#: ... and of all its blocks, at most this many (slices x C): beyond, writing and reading the partial sums
#: takes longer than the idle compute units the split fills would have.
SUMMED_MAX_PARTIALS = 2**20
#: Stream-K is worth trying where the tiles' waves keep less than this share of the compute units busy,
#: in at most ``STREAM_MAX_WAVES`` waves (beyond, the last wave's idle units matter little).
STREAM_BELOW_SHARE = 0.9
STREAM_MAX_WAVES = 8


def blocks(params: KernelParams, problem: GemmProblem) -> int:
    """Work-groups of one K slice: the blocks that cover C (every C of a batch)."""
    return c_blocks(params, problem.m, problem.n) * max(problem.batch, 1)


def c_blocks(params: KernelParams, m: int, n: int) -> int:
    """The blocks of ``params`` that cover one C of m x n."""
    return ceil_div(max(m, 1), params.block_rows) * ceil_div(max(n, 1), params.block_cols)


def useful_share(params: KernelParams, m: int, n: int, layers: int, compute_units: int) -> float:
    """The share of the device's time a launch of ``params`` over ``layers`` Cs of m x n (K slices, or the
    products of a batch) spends on real work: its padded blocks' share that is C, times the share of the
    compute units its waves keep busy."""
    return area_share(params, m, n) * busy_share(c_blocks(params, m, n) * layers, compute_units)


def area_share(params: KernelParams, m: int, n: int) -> float:
    """The share of the blocks of ``params`` covering an m x n C that is C."""
    return m * n / (c_blocks(params, m, n) * params.block_rows * params.block_cols)


def stream_share(partition: StreamPartition, compute_units: int) -> float:
    """The share of compute-unit time doing work under stream-K: the groups' waves' (as ``busy_share``),
    times the share of its steps the busiest group's work is (the others have one step fewer at most)."""
    busiest = ceil_div(partition.total, partition.groups)
    return busy_share(partition.groups, compute_units) * partition.total / (partition.groups * busiest)


def busy_share(groups: int, compute_units: int) -> float:
    """The share of compute-unit time doing work when ``groups`` equal work-groups run in waves of one
    per unit (the last wave leaves units idle)."""
    return groups / (ceil_div(groups, compute_units) * compute_units)


def shallowest_slice(tile_k: int, summed: bool) -> int:
    """The shallowest K slice worth its partial sums: ``MIN_SLICE_DEPTH`` and 16 K steps, or where the
    kernel adds the slices up (``summed``) ``SUMMED_MIN_DEPTH`` and ``SUMMED_MIN_STEPS``."""
    return max(SUMMED_MIN_DEPTH, SUMMED_MIN_STEPS * tile_k) if summed else max(MIN_SLICE_DEPTH, 16 * tile_k)


def split_count(blocks: int, compute_units: int, k: int, tile_k: int, summed: bool = False,
                most_slices: int = MAX_SLICES) -> int:
    """How many K slices to compute in parallel when the blocks of C alone leave units idle: up to two
    work-groups per compute unit and ``most_slices``, slices deep enough to pay for their partial sums
    (``summed``: added up in the kernel, which makes shallower ones pay), and of those counts the one
    whose waves keep the units busiest (the most slices on a tie)."""
    if blocks >= compute_units:
        return 1
    deepest = k // shallowest_slice(tile_k, summed)
    most = max(1, min(deepest, ceil_div(2 * compute_units, blocks), most_slices, MAX_SLICES))
    return max(range(1, most + 1), key=lambda s: (busy_share(blocks * s, compute_units), s))


def split_counts(params: KernelParams, problem: GemmProblem, compute_units: int) -> list[int]:
    """The K splits worth measuring for ``problem`` (``tune --shapes``, the predictor's samples): none
    where its blocks of C alone keep every compute unit busy (or a split is not possible: images, a
    batch, a K of one step), else 1, the powers of two up to the deepest split its K allows where the
    blocks are fewer than the units, and ``STREAM_K`` where their waves leave units idle."""
    count = blocks(params, problem)
    if params.image_a or params.image_b or problem.batch > 1 or problem.k <= params.tile_k:
        return []
    splits = []
    if count < compute_units:
        deepest = problem.k // shallowest_slice(params.tile_k, False)
        if sums_slices(params, problem):
            summed = min(problem.k // shallowest_slice(params.tile_k, True), most_summed(params, problem))
            deepest = max(deepest, summed)
        deepest = min(MAX_SLICES, deepest)
        splits = [2**i for i in range(1, deepest.bit_length()) if 2**i <= deepest]
    if busy_share(count, compute_units) < STREAM_BELOW_SHARE and count <= STREAM_MAX_WAVES * compute_units:
        splits.append(STREAM_K)
    return [1, *splits] if splits else []


def auto_slices(params: KernelParams, problem: GemmProblem, compute_units: int, summed: bool = False) -> int:
    """The K slices a plan uses for ``problem`` unless told: none for image operands or batches, nor for
    small problems unless the kernel adds its slices up itself (``summed``)."""
    if (params.image_a or params.image_b or problem.batch > 1
            or (not summed and problem.m * problem.n * problem.k < SPLIT_MIN_WORK)):
        return 1
    return split_count(blocks(params, problem), compute_units, problem.k, params.tile_k, summed,
                       most_summed(params, problem) if summed else MAX_SLICES)


def most_summed(params: KernelParams, problem: GemmProblem) -> int:
    """The most K slices of ``problem`` a kernel of ``params`` adds up itself (``SUMMED_MAX_ELEMENTS`` per
    block, ``SUMMED_MAX_PARTIALS`` in all)."""
    block = params.block_rows * params.block_cols
    return max(1, min(SUMMED_MAX_ELEMENTS // block,
                      SUMMED_MAX_PARTIALS // (c_blocks(params, problem.m, problem.n) * block)))


def reads_slices(params: KernelParams, problem: GemmProblem) -> bool:
    """Whether the kernel of ``params`` can read the K slices of ``problem`` where A and B lie (each
    work-group finding its slice's depth): its family's kernels do so, one product, no images."""
    return family_of(params).sums_slices and problem.batch <= 1 and not (params.image_a or params.image_b)


def merges_slices(params: KernelParams, problem: GemmProblem) -> bool:
    """Whether a split of ``problem`` that the kernel of ``params`` does not add up is read where A and
    B lie, each slice into its layer of C (``reads_slices``, by a family that ``merges_slices``)."""
    return reads_slices(params, problem) and family_of(params).merges_slices


def can_sum_slices(params: KernelParams, problem: GemmProblem) -> bool:
    """Whether the kernel of ``params`` can add the K slices of ``problem`` up itself: it reads them in
    place (``reads_slices``), and C is in the type the kernel computes in, or in the 16 bits the kernel
    reads A and B in (``Family.reads_16bit``: it writes such a C itself)."""
    dt = problem.dtype
    return reads_slices(params, problem) and (dt.output.numpy == dt.scalar_numpy or writes_16bit(params, dt))


def sums_slices(params: KernelParams, problem: GemmProblem) -> bool:
    """Whether a split of ``problem`` is added up in its one launch under ``edge='auto'``, A and B read
    where they lie: where the kernel can (``can_sum_slices``), for a product of fewer than
    ``SPLIT_MIN_WORK`` multiply-adds (a larger one pays for packs and a merge). A product split at all
    leaves compute units idle, so that the launches of packs and a merge would cost more than its own."""
    return can_sum_slices(params, problem) and problem.m * problem.n * problem.k < SPLIT_MIN_WORK


def cache_slices(params: KernelParams, problem: GemmProblem, depth: int, max_alloc_bytes: int) -> int:
    """The K slices that keep each slice's K within ``depth`` (a CPU's cache: ``Thresholds.slice_depth``;
    0: no such slices), for a product of at least ``SPLIT_MIN_WORK`` on
    buffers, one at a time: as many as its slices' partial sums of C fit one allocation of
    ``max_alloc_bytes`` and the kernels' 32-bit indices."""
    if (not depth or params.image_a or params.image_b or problem.batch > 1
            or problem.m * problem.n * problem.k < SPLIT_MIN_WORK):
        return 1
    wanted = -(-problem.k // depth)
    c_elements = (problem.m + 256) * (problem.n + 256)          # C padded to any block (at most 256 a side)
    fits = min(max_alloc_bytes // (c_elements * problem.dtype.scalar_numpy.itemsize),
               INT32_MAX // (c_elements * problem.dtype.reals_per_element))
    return max(1, min(wanted, fits, MAX_SLICES))


def planned_slices(params: KernelParams, problem: GemmProblem, device: Device, limits: Thresholds) -> int:
    """The K slices a plan on ``device`` takes unless told: the more of ``auto_slices`` (to fill the
    device; small products too where the kernel adds the slices up, ``sums_slices``) and
    ``cache_slices`` (to stay in a CPU's caches, ``limits.slice_depth``)."""
    return max(auto_slices(params, problem, device.compute_units, sums_slices(params, problem)),
               cache_slices(params, problem, limits.slice_depth, device.max_mem_alloc_bytes))


def predicted_rate(params: KernelParams, rate: float, problem: GemmProblem, compute_units: int) -> float:
    """``rate``, measured on a problem that filled the device with whole blocks, scaled by the share
    of ``problem``'s padded blocks that is real work and by the share of the device its waves keep busy."""
    layers = max(problem.batch, 1) * auto_slices(params, problem, compute_units)
    return rate * useful_share(params, problem.m, problem.n, layers, compute_units)
