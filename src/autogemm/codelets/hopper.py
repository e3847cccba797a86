"""What the sm_90a families share: a persistent, warp-specialized block whose first warpgroup loads tiles
of A and B by TMA into ``STAGES`` buffers of shared memory (each completing on a "full" mbarrier with
the bytes it brought) while the other warpgroups, the consumers, multiply them and hand each buffer back
on an "empty" mbarrier. The families render the consumers; this module the rest (``HELPERS``, the
device functions; ``pipeline``, the kernel's start and its producer) and ``Rendered``, how to launch it.

Blocks may work in clusters of ``CLUSTER`` (1 or 2) along M: the blocks of a cluster compute blocks of C
in the same columns, so each loads its own tile of A and its share of the rows of the tile of B, which
TMA writes into the shared memory of every block of the cluster at once (multicast): L2 serves B once
for the cluster. A buffer is then written by every block's producer, so each consumer hands it back to
every block of the cluster.

A kernel using them defines BLOCK_M, BLOCK_N, BLOCK_K (128 bytes of K: one row of the 128-byte swizzle),
BOX_K (the same in the tensor maps' elements: complex128's are two float64), STAGES, PLANES (tiles of
each operand a stage holds), GROUP (rows of clusters of C taken together), CLUSTER, A_TILE_BYTES,
B_TILE_BYTES, STAGED_C_BYTES (shared memory for C, after the tiles: ``c_tiles``) and EMPTY_ARRIVALS
(arrivals that hand a buffer back: every consumer of the cluster's), and takes the tensor maps ``map_a``
and ``map_b``, M, N and K, and ``LAYERS_PARAMETERS``: a strided batch computes ``layers`` products of
one shape in one launch, its operands' tensor maps holding a matrix a layer (``a_layered``,
``b_layered``: 1) or one matrix every product shares (0). Clusters take blocks of C in turn, layer after
layer (``BLOCKS_OF_C``: ``layer`` is the block's product); ``iteration`` counts the tiles of K a block
went through before, which give each tile's stage and the parity of that stage's barriers.

A kernel may also share the K of a last round of blocks of C that would leave most clusters idle
(stream-K: ``SHARED_K_HELPERS``, ``GATHERED``): it then takes ``whole`` (the blocks of C computed whole),
memory for the partial sums and the parts' counters, and defines TEAMS, TEAM_THREADS and TEAM_SYNC (the
consumer threads that sum a part together). ``Schedule`` says how a launch shares a product out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Protocol

from ..dtypes import Dtype
from ..runtime.cuda.driver import CudaDevice, cuda_device_of
from ..runtime.opencl.device import Device

#: Bytes of K in a staged row: the span of the 128-byte swizzle, which TMA writes.
ROW_BYTES = 128
#: Threads of a warpgroup.
WARPGROUP = 128
#: Shared memory a block of sm_90 may use (dynamic, asked for at launch).
MAX_SHARED_BYTES = 227 * 1024
#: Registers of a thread of the producer warpgroup and of a consumer one where a block has two consumer
#: warpgroups (``setmaxnreg``: the producer issues copies, the consumers hold the accumulators).
PRODUCER_REGISTERS, CONSUMER_REGISTERS = 40, 232

HELPERS = r"""#define B_SHARE_ROWS (BLOCK_N / CLUSTER)         // the rows of a tile of B one block of a cluster loads
#define B_SHARE_BYTES (B_SHARE_ROWS * ROW_BYTES)
#define MN_BOX BLOCK_K                            // an MN-major box: 128 bytes of M (N) ...
#define MN_BOX_BYTES (BLOCK_K * ROW_BYTES)        // ... by a tile's K

struct __align__(64) TensorMap { unsigned long long opaque[16]; };   // CUtensorMap, made by the host

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void barrier_init(unsigned long long* barrier, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(shared_address(barrier)), "r"(arrivals) : "memory");
}

// One arrival that also says how many bytes copies will complete on the barrier in this phase.
__device__ __forceinline__ void barrier_expect(unsigned long long* barrier, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(shared_address(barrier)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned long long* barrier) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(shared_address(barrier)) : "memory");
}

// Wait until the barrier's phase of this parity has completed.
__device__ __forceinline__ void barrier_wait(unsigned long long* barrier, unsigned parity) {
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "waiting:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra waiting;\n"
                 "}\n" :: "r"(shared_address(barrier)), "r"(parity) : "memory");
}

// Copy the box of the tensor map at (inner, outer) of matrix ``layer`` into shared memory; it completes on
// the barrier.
__device__ __forceinline__ void tile_load(void* to, const TensorMap* map, int inner, int outer, int layer,
                                          unsigned long long* barrier) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n"
                 :: "r"(shared_address(to)), "l"((unsigned long long)map), "r"(inner), "r"(outer), "r"(layer),
                    "r"(shared_address(barrier)) : "memory");
}

// The same into the same place of every block of the cluster, each completing on its own barrier there.
__device__ __forceinline__ void tile_load_everywhere(void* to, const TensorMap* map, int inner, int outer, int layer,
                                                     unsigned long long* barrier) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
                 :: "r"(shared_address(to)), "l"((unsigned long long)map), "r"(inner), "r"(outer), "r"(layer),
                    "r"(shared_address(barrier)), "h"((unsigned short)((1 << CLUSTER) - 1)) : "memory");
}

// Hand a buffer back: one arrival on its "empty" barrier in every block of the cluster (each block's
// producer writes a share of it).
__device__ __forceinline__ void stage_release(unsigned long long* barrier) {
#if CLUSTER == 1
    barrier_arrive(barrier);
#else
    #pragma unroll
    for (unsigned rank = 0; rank < CLUSTER; ++rank)
        asm volatile("{\n.reg .b32 remote;\n"
                     "mapa.shared::cluster.u32 remote, %0, %1;\n"
                     "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
                     :: "r"(shared_address(barrier)), "r"(rank) : "memory");
#endif
}

// Every thread of the cluster waits for all the others (threads of one block: __syncthreads).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The product (``layer``) and the first row and column of its C of this block of cluster number ``tile``
// (``rank``: the block within it, one BLOCK_M below the other): a product's blocks one after another,
// GROUP rows of clusters at a time, down the rows of the group first, so that the clusters working at
// once share their tiles of B in L2. (A group of one row is one row whatever is left: said so, the
// divisions by ``rows`` fold away; computed, they made ptxas spill in dmma's largest warp tiles in
// clusters.)
__device__ __forceinline__ void place(int tile, int cluster_rows, int tiles_n, int rank, int* m0, int* n0,
                                      int* layer) {
    *layer = tile / (cluster_rows * tiles_n);
    tile -= *layer * cluster_rows * tiles_n;
    const int per_group = GROUP * tiles_n, first = tile / per_group * GROUP;
    const int rows = GROUP == 1 ? 1 : min(GROUP, cluster_rows - first), within = tile % per_group;
    *m0 = ((first + within % rows) * CLUSTER + rank) * BLOCK_M;
    *n0 = within / rows * BLOCK_N;
}

"""


#: Stream-K's device functions, for kernels that share the K of blocks of C (``Work``, ``next_tile``,
#: ``k_range``, ``gathered``); the kernel defines TEAMS, TEAM_THREADS and TEAM_SYNC.
SHARED_K_HELPERS = r"""
// Stream-K: the clusters compute the first ``whole`` clusters' blocks of C whole, in turn, and share the
// tiles of K of the rest (``parts`` of them: ``parts`` x ``k_tiles`` tiles of K) evenly, cluster c taking
// tiles of K c P / clusters to (c + 1) P / clusters - 1 of them in order (P = parts x k_tiles): a block of
// C whose K several clusters share is a "part", summed by the clusters that share it (``gathered``).
// The cluster taking tile of K ``at`` of the parts' (``owner``), and the first tile of K it takes.
__device__ __forceinline__ int owner(long long at, long long shared_k_tiles, int clusters) {
    return (int)(((at + 1) * clusters - 1) / shared_k_tiles);
}
__device__ __forceinline__ long long first_shared(int cluster, long long shared_k_tiles, int clusters) {
    return shared_k_tiles * cluster / clusters;
}

// A cluster's parts: its tiles of K of theirs, ``begin`` to ``end`` - 1, lie in parts ``first_part`` to
// ``last_part``. Kept in shared memory and read where needed, not held in registers over the loops on K.
struct Work { int first_part, last_part; long long begin, end; };

__device__ __forceinline__ Work work_of(int cluster_index, int clusters, int tiles, int k_tiles, int whole) {
    const long long shared_k_tiles = (long long)(tiles - whole) * k_tiles;
    Work w;
    w.begin = first_shared(cluster_index, shared_k_tiles, clusters);
    w.end = first_shared(cluster_index + 1, shared_k_tiles, clusters);
    w.first_part = w.begin < w.end ? (int)(w.begin / k_tiles) : 0;
    w.last_part = w.begin < w.end ? (int)((w.end - 1) / k_tiles) : -1;
    return w;
}

// The cluster's block of C after ``tile`` (the cluster number of one; to start, the cluster's own less
// ``clusters``): the next of its whole ones, then its parts; false past the last.
__device__ __forceinline__ bool next_tile(int* tile, const Work& work, int clusters, int whole) {
    if (*tile < whole) {
        if (*tile + clusters < whole) {
            *tile += clusters;
            return true;
        }
        *tile = whole + work.first_part - 1;
    }
    ++*tile;
    return *tile - whole <= work.last_part;
}

// The tiles of K of block ``tile``'s that the cluster takes: ``k_count`` from ``k_first``.
__device__ __forceinline__ void k_range(int tile, const Work& work, int k_tiles, int whole, int* k_first,
                                        int* k_count) {
    if (tile < whole) {
        *k_first = 0;
        *k_count = k_tiles;
        return;
    }
    const long long start = (long long)(tile - whole) * k_tiles;
    const long long from = max(work.begin, start), to = min(work.end, start + k_tiles);
    *k_first = (int)(from - start);
    *k_count = (int)(to - from);
}

// Where a team of consumer threads (TEAM_THREADS of them, TEAMS a block, TEAM_SYNC(team) their barrier)
// holds the sums of COUNT values a thread over only some of a part's K (``part``: its index among the
// parts): the clusters that share the part add their sums in pairs, up a binary tree over their order in
// K (leaves 0 to count - 1), the second team of a pair to arrive carrying the pair's sum up, so that no
// multiprocessor reads every cluster's sums one after another (a hundred clusters may share a part; the
// tree is as deep as the log of their count). At each pair the team writes its subtree's sums into
// ``partials`` (two places a block: the first part a cluster takes and its last; those of the subtree's
// first leaf), counts its arrival at the pair (``arrivals``: a counter for each leaf but the first, from
// ``from + part`` on; parts + clusters in all) and returns false where it came first; the team that
// carries the root returns true with the part's sums in ``sums`` (it stores C). The tree is the same
// whichever team arrives first: so is every sum of C.
template <int COUNT, typename T>
__device__ __forceinline__ bool gathered(T* sums, T* partials, int* arrivals, int part, int k_tiles,
                                         long long shared_k_tiles, int cluster_index, int clusters, int rank,
                                         int team, int thread) {
    __shared__ int first[TEAMS];
    const long long start = (long long)part * k_tiles;
    const int from = owner(start, shared_k_tiles, clusters);
    const int count = owner(start + k_tiles - 1, shared_k_tiles, clusters) - from + 1;
    // a block's sums of its first part, then of its last (a cluster's parts between are whole)
    #define PARTIAL(cluster) (partials + thread + (size_t)TEAM_THREADS * COUNT * (team + TEAMS * (2 * \
        ((cluster) * CLUSTER + rank) + (first_shared(cluster, shared_k_tiles, clusters) / k_tiles == part ? 0 : 1))))
    int leaf = cluster_index - from;                   // the first leaf of the subtree this team carries
    for (int width = 1; width < count; width *= 2) {
        const int left = leaf & ~(2 * width - 1), right = left + width;
        if (right >= count) continue;                  // no right half: the left one goes up alone
        T* mine = PARTIAL(from + leaf);
        #pragma unroll
        for (int i = 0; i < COUNT; ++i) __stcg(mine + i * TEAM_THREADS, sums[i]);
        __threadfence();
        TEAM_SYNC(team);
        if (thread == 0)
            first[team] = atomicAdd(arrivals + ((size_t)(from + part + right) * CLUSTER + rank) * TEAMS + team, 1) == 0;
        TEAM_SYNC(team);
        if (first[team]) return false;
        __threadfence();
        const T* theirs = PARTIAL(from + (leaf == left ? right : left));
        #pragma unroll
        for (int i = 0; i < COUNT; ++i) sums[i] += __ldcg(theirs + i * TEAM_THREADS);
        leaf = left;
    }
    #undef PARTIAL
    return true;
}
"""

#: The kernel's parameters of a strided batch (after M, N and K): the products, and whether A and B
#: hold a matrix a product (1) or one all share (0).
LAYERS_PARAMETERS = "int layers, int a_layered, int b_layered"
#: The loop over the blocks of C a block computes, ``layer`` their product, ``m0`` and ``n0`` their first
#: row and column, the blocks of a cluster in the same columns, each over tiles of K ``k_first`` on,
#: ``k_count`` of them; ``iteration`` counts the tiles of K of the blocks before. Whole blocks of C alone
#: (the first: it tests the layer, not ``tiles``, which held a register more in every consumer of it, and
#: dmma's largest warp tiles spilled), or stream-K's (the second, with ``SHARED_K_HELPERS``).
BLOCKS_OF_C = {False: """for (int tile = cluster_index; tile / (cluster_rows * tiles_n) < layers;
         tile += clusters, iteration += k_tiles) {
        [[maybe_unused]] const int k_first = 0, k_count = k_tiles;      // (k_first: the producer's)
        int m0, n0, layer;
        place(tile, cluster_rows, tiles_n, rank, &m0, &n0, &layer);""",
               True: """for (int tile = cluster_index - clusters, k_first = 0, k_count = 0;
         next_tile(&tile, *work, clusters, whole); iteration += k_count) {
        k_range(tile, *work, k_tiles, whole, &k_first, &k_count);
        int m0, n0, layer;
        place(tile, cluster_rows, tiles_n, rank, &m0, &n0, &layer);"""}
#: The same loop for one of a block's two ping-pong consumers (``consumer`` 0 the block's first block of
#: C, 1 its second, 0 its third, ...): each computes a whole block of C while the other stores its last one.
#: ``iteration`` counts the tiles of K of the blocks before, the other consumer's too, as the producer
#: counts them (it starts at ``consumer * k_tiles``); ``turn``, the blocks this consumer took before.
PING_PONG_BLOCKS = """for (int tile = cluster_index + consumer * clusters; tile / (cluster_rows * tiles_n) < layers;
         tile += 2 * clusters, iteration += 2 * k_tiles, ++turn) {
        [[maybe_unused]] const int k_first = 0, k_count = k_tiles;
        int m0, n0, layer;
        place(tile, cluster_rows, tiles_n, rank, &m0, &n0, &layer);"""
#: After a block's tiles of K, in a consumer of a stream-K kernel (``RESULT``: the COUNT float32 or
#: float64 sums a thread holds, ``TEAM``: its team, ``TEAM_THREAD``: its index in it): where they were a
#: part of its K, the sums of every part's clusters, or on to the next block where another team stores
#: them.
GATHERED = """        if (k_count < k_tiles && !gathered<COUNT>(RESULT, partials, arrivals, tile - whole, k_tiles,
                                                  (long long)(tiles - whole) * k_tiles,
                                                  cluster_index, clusters, rank, TEAM, TEAM_THREAD))
            continue;"""


def gathered(count: str, result: str, team: str, team_thread: str) -> str:
    """``GATHERED`` for a consumer whose ``count`` sums are at ``result``, of team ``team``, its index in
    the team ``team_thread`` (C expressions)."""
    return (GATHERED.replace("COUNT", count).replace("RESULT", result).replace("TEAM_THREAD", team_thread)
            .replace("TEAM,", f"{team},"))


def shared_k_parameters(element: str) -> str:
    """A stream-K kernel's last parameters (``SHARED_K_HELPERS``): the blocks of C computed whole, the
    partial sums (of C type ``element``) and the parts' counters."""
    return f"int whole, {element}* __restrict__ partials, int* __restrict__ arrivals"
#: Blocks of a cluster (along M).
CLUSTERS = (1, 2)
#: The compute capability the families' kernels are built for (sm_90a).
HOPPER = (9, 0)


def device_problem(device: Device) -> str | None:
    """Why the sm_90a families cannot run on the OpenCL ``device``'s GPU, or None: it must be a Hopper GPU
    that the CUDA driver sees too (its twin, ``runtime.cuda.driver``)."""
    twin = cuda_device_of(device)
    return f"{device.name.strip()} is not a GPU the CUDA driver sees" if twin is None else twin_problem(twin)


def twin_problem(twin: CudaDevice) -> str | None:
    """Why the sm_90a families cannot run on the CUDA device ``twin``, or None."""
    if twin.capability != HOPPER:
        return (f"{twin.name} is {twin.arch}; the CUDA path's kernels are "
                f"built for sm_90a (Hopper)")
    return None


def check(params: HopperParams, device: Device, dtype: Dtype) -> str | None:
    """Why ``params`` (of either sm_90a family) cannot compute ``dtype``'s products on ``device``, or None."""
    return params.dtype_problem(dtype) or device_problem(device)


def shared_memory_problem(shared_bytes: int) -> str | None:
    """Why a block's ``shared_bytes`` cannot run on sm_90, or None."""
    if shared_bytes > MAX_SHARED_BYTES:
        return f"tiles of {shared_bytes} bytes, over the {MAX_SHARED_BYTES} of shared memory of a block"
    return None


def registers(consumers: int, kind: str) -> str:
    """The ``setmaxnreg`` of the producer or a consumer (``kind``) of a block of ``consumers`` consumer
    warpgroups: none with one (every thread has registers enough)."""
    if consumers == 1:
        return ""
    count, way = (PRODUCER_REGISTERS, "dec") if kind == "producer" else (CONSUMER_REGISTERS, "inc")
    return f'asm volatile("setmaxnreg.{way}.sync.aligned.u32 {count};\\n" ::: "memory");'


def cluster_attribute(cluster: int) -> str:
    """The kernel's ``__cluster_dims__`` where its blocks work in clusters of ``cluster``, else nothing."""
    return f"__cluster_dims__({cluster}, 1, 1) " if cluster > 1 else ""


def cluster_end(cluster: int) -> str:
    """What every thread does last where blocks work in clusters: wait for the cluster's other blocks,
    which may still write into this block's shared memory and arrive on its barriers."""
    return "cluster_sync();" if cluster > 1 else ""


def pipeline(cluster: int, producer_registers: str = "", mn_major: tuple[bool, bool] = (False, False),
             shares_k: bool = False, rolled: bool = False, ping_pong: bool = False) -> str:
    """The kernel's start: shared memory carved into the stages' tiles and barriers, the barriers made,
    and the producer warpgroup's loop (``producer_registers``: its ``setmaxnreg``, if any) for blocks in
    clusters of ``cluster``; the consumers' code follows, with ``a_tiles``, ``b_tiles``, ``c_tiles``,
    ``full``, ``empty``, ``warpgroup``, ``tiles_m``, ``tiles_n``, ``k_tiles``, ``tiles`` (of every layer) and
    what ``BLOCKS_OF_C`` uses
    in scope, and ends with ``cluster_end``. ``mn_major``: whether A and B lie with M (N) contiguous, K x M
    (K x N), rather than K (``_loads``). ``shares_k``: whether blocks share the K of some blocks of C
    (stream-K: the kernel takes ``whole``, and includes ``SHARED_K_HELPERS``). ``rolled``: the producer
    loops over an MN-major tile's boxes without unrolling them (fewer registers: ``setmaxnreg``'s 40 spilled
    dmma's unrolled loops in clusters). ``ping_pong``: the two consumers take the block's blocks of C
    alternately (``PING_PONG_BLOCKS``), and ``order`` holds their two "your turn" barriers."""
    load_a, load_b = (_loads(operand, cluster if operand == "b" else 1, mn, rolled)
                      for operand, mn in zip("ab", mn_major))
    made = "__syncthreads();" if cluster == 1 else "cluster_sync();                   // the other blocks' barriers too"
    return r"""    extern __shared__ unsigned char shared_bytes[];
    unsigned char* a_tiles = shared_bytes + ((1024 - (shared_address(shared_bytes) & 1023)) & 1023);
    unsigned char* b_tiles = a_tiles + STAGES * PLANES * A_TILE_BYTES;
    unsigned char* c_tiles = b_tiles + STAGES * PLANES * B_TILE_BYTES;    // C staged for TMA to store, if so
    unsigned long long* full = reinterpret_cast<unsigned long long*>(c_tiles + STAGED_C_BYTES);
    unsigned long long* empty = full + STAGES;
    @ORDER@
    const int warpgroup = threadIdx.x / 128;
    // edges: TMA fills what lies past K (and past the last rows of a plane) with zeros or the next
    // plane's rows, which only reach elements of C past M and N, never stored
    const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M, tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
    const int k_tiles = (K + BLOCK_K - 1) / BLOCK_K;
    const int rank = blockIdx.x % CLUSTER, cluster_index = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    const int cluster_rows = (tiles_m + CLUSTER - 1) / CLUSTER;
    [[maybe_unused]] const int tiles = cluster_rows * tiles_n * layers;     // of every layer
    @WORK@
    if (threadIdx.x == 0) {
        @WORK_OF@
        for (int s = 0; s < STAGES; ++s) {
            barrier_init(&full[s], 1);                  // the producer's arrival, and the copies' bytes
            barrier_init(&empty[s], EMPTY_ARRIVALS);    // one arrival by each consumer (warpgroup or warp)
        }
        @ORDER_INIT@
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    @MADE@
    if (warpgroup == 0) {                               // the producer
        @SET_PRODUCER_REGISTERS@
        if (threadIdx.x == 0) {
            int iteration = 0;
            @BLOCKS_OF_C@
                for (int t = 0; t < k_count; ++t) {
                    const int it = iteration + t, s = it % STAGES;
                    if (it >= STAGES) barrier_wait(&empty[s], (it / STAGES - 1) & 1);
                    barrier_expect(&full[s], PLANES * (A_TILE_BYTES + B_TILE_BYTES));
                    for (int p = 0; p < PLANES; ++p) {           // plane p: rows p M + m0 of A, p N + n0 of B
                        @LOAD_A@
                        @LOAD_B@
                    }
                }
            }
        }
        @END@
        return;
    }
""".replace("@SET_PRODUCER_REGISTERS@", producer_registers).replace("@BLOCKS_OF_C@", BLOCKS_OF_C[shares_k]).replace(
        "@WORK@", "__shared__ Work work[1];                    // this cluster's parts" if shares_k else "").replace(
        "@WORK_OF@", "*work = work_of(cluster_index, clusters, tiles, k_tiles, whole);" if shares_k
        else "").replace(
        "@LOAD_A@", load_a).replace("@LOAD_B@", load_b).replace("@MADE@", made).replace(
        "@END@", cluster_end(cluster)).replace(
        "@ORDER@", "unsigned long long* order = empty + STAGES;     // consumer c's turn to multiply: order[c]"
        if ping_pong else "").replace(
        "@ORDER_INIT@", "barrier_init(&order[0], 1);\n        barrier_init(&order[1], 1);" if ping_pong else "")


def _loads(operand: str, cluster: int, mn_major: bool, rolled: bool) -> str:
    """The producer's copies of stage ``s``'s tile of ``operand`` ('a' or 'b': its rows m0 or n0 on, of
    plane p, tile t of K), its share of them where the blocks of a cluster share it (each block loads
    1 / ``cluster`` of the rows and multicasts them). K-major (rows of K): one box of the tile's rows and
    128 bytes of K. MN-major (rows of M or N, K x M stored): a box of 128 bytes of M (N) by the tile's K
    for every 128 bytes of its rows, side by side (``MN_BOX_BYTES`` apart), its place in the tensor map's
    elements (``BOX_K`` of them in 128 bytes); one plane."""
    rows, first, extent = ("A", "m0", "M") if operand == "a" else ("B", "n0", "N")
    layer = f"layer * {operand}_layered"
    to = f"{operand}_tiles + (s * PLANES + p) * {rows}_TILE_BYTES"
    copy = "tile_load" if cluster == 1 else "tile_load_everywhere"
    if not mn_major:
        share = "" if cluster == 1 else f" + rank * {rows}_SHARE_ROWS"
        to_share = "" if cluster == 1 else f" + rank * {rows}_SHARE_BYTES"
        return (f"{copy}({to}{to_share}, &map_{operand}, (k_first + t) * BOX_K, p * {extent} + {first}{share},"
                f" {layer}, &full[s]);")
    boxes = f"BLOCK_{extent} / MN_BOX"
    lo, hi = ("0", boxes) if cluster == 1 else (f"rank * {boxes} / CLUSTER", f"(rank + 1) * {boxes} / CLUSTER")
    unroll = "#pragma unroll 1\n                        " if rolled else ""
    return (f"{unroll}for (int box = {lo}; box < {hi}; ++box)\n"
            f"                            {copy}({to} + box * MN_BOX_BYTES, &map_{operand},"
            f" ({first} + box * MN_BOX) * BOX_K / BLOCK_K, (k_first + t) * BLOCK_K, {layer}, &full[s]);")


class HopperParams(Protocol):
    """What ``Rendered`` asks of a family's parameters."""

    block_m: int
    block_n: int
    cluster: int

    @property
    def block_k(self) -> int: ...
    @property
    def threads(self) -> int: ...
    @property
    def shared_bytes(self) -> int: ...
    @property
    def tensor_type(self) -> str: ...
    @property
    def box_k(self) -> int: ...
    @property
    def c_box(self) -> tuple[int, int] | None: ...
    @property
    def shares_k(self) -> bool: ...
    single_round: ClassVar[SingleRound]
    # where it shares K: the teams of consumer threads of a block, and the bytes of its sums of C
    @property
    def teams(self) -> int: ...
    @property
    def sum_bytes(self) -> int: ...
    def mn_major_problem(self, mn_major: tuple[bool, bool]) -> str | None: ...
    def dtype_problem(self, dt: Dtype) -> str | None: ...


#: Stream-K's least share: the tiles of K each cluster takes at least where they share the K of some
#: blocks of C (a family's ``SingleRound.least`` for a single round); with fewer, the partial sums' trips
#: through memory cost more than the idle multiprocessors they save.
MIN_SHARE = 16
#: The most of a round of clusters whose blocks of C they share: the last round behind whole ones is
#: shared only where it would leave at least two thirds of them idle. Sharing costs each block's partial
#: sums a trip through memory, and the clusters sharing a block read its tiles at different K, where
#: whole blocks computed at once read theirs from L2 together. Measured against cuBLAS, sharing a last
#: round that kept few of the multiprocessors busy ran faster; one that kept about a third busy, as
#: fast; a fuller one, slower; and sharing the last two rounds was slower everywhere.
SHARED_ROUND = 1 / 3
#: What sharing the last round behind whole ones costs, in rounds: the partial sums' trips and the reads
#: of tiles from memory rather than L2 (fitted to the same measurements).
SHARE_COST = 0.4
#: What storing a block of C costs, in tiles of K of its products. A multiprocessor that computes one block
#: of C at a time leaves its tensor cores idle while it stores each; one that computes two at once (two
#: blocks, or two ping-pong consumers) stores one while the other's products run, all but the
#: last (fitted to FP16 products and batches of 32 to 8192 on a side on an H200, with the tiles' rates:
#: anywhere from 1.5 to 4 chose as well).
STORE_K_TILES = 2


class SingleRound(NamedTuple):
    """How a family's kernels share a product of a single round of blocks of C (no more than there are
    clusters): only where the blocks fill at most ``fill`` of the clusters, each cluster taking at least
    ``least`` tiles of K, at a cost of ``cost`` rounds (a family's ``single_round``, measured on its
    kernels)."""

    fill: float
    cost: float
    least: int = MIN_SHARE


#: Sharing a single round as the last round behind whole ones is shared (where a product is one round of
#: few blocks, sharing them ran as fast as whole blocks of a smaller tile: FP16).
SINGLE_ROUND = SingleRound(SHARED_ROUND, SHARE_COST)


def shared_out(tiles: int, clusters: int, k_tiles: int, single_round: SingleRound = SINGLE_ROUND
               ) -> tuple[int, int]:
    """How ``tiles`` blocks of C (in clusters) over ``k_tiles`` tiles of K each are shared out among at
    most ``clusters`` persistent clusters: (whole, working), the blocks computed whole, in rounds, and the
    clusters at work. The working clusters share the tiles of K of the rest evenly (stream-K) where the
    last round behind whole ones would leave most of them idle (``SHARED_ROUND``), each taking
    ``MIN_SHARE`` tiles of K at least (else no cluster shares). A product of a single round, filling at
    most ``single_round.fill`` of the clusters, is shared among as many as take ``single_round.least``
    tiles of K each, if that round then ends sooner (``single_round.cost``), among a multiple of its
    blocks (``aligned``)."""
    remainder = tiles % clusters
    if tiles > clusters:
        if remainder == 0 or remainder > SHARED_ROUND * clusters or remainder * k_tiles < MIN_SHARE * clusters:
            return tiles, clusters
        return tiles - remainder, clusters
    if tiles == clusters or tiles > single_round.fill * clusters:
        return tiles, tiles
    working = min(clusters, tiles * k_tiles // single_round.least)
    if working > tiles:
        working = aligned(tiles, working)
    return (0, working) if working * (1 - single_round.cost) > tiles else (tiles, tiles)


def aligned(tiles: int, working: int) -> int:
    """The clusters that share a single round of ``tiles`` blocks of C, of ``working`` (more than
    ``tiles``): a multiple of ``tiles``. Each block's K is then cut at the same tiles of K, so that the
    clusters reading the same rows of A (or of B) for different blocks read them at about the same time,
    all but the first from L2. With another count each block's slices start a fraction of a slice after
    the last block's, those reads drift apart by up to half a slice, and every block of C reads its
    operands from memory again."""
    return working - working % tiles


def rounds(tiles: int, clusters: int, k_tiles: int, single_round: SingleRound = SINGLE_ROUND) -> float:
    """How long ``tiles`` blocks of C take on ``clusters`` clusters, in rounds of one block each: whole
    rounds, and a shared one (``shared_out``) as its share of a round among the clusters working and what
    sharing costs (``SHARE_COST``; a single round's, ``single_round.cost``)."""
    whole, working = shared_out(tiles, clusters, k_tiles, single_round)
    if whole == tiles:
        return float(-(-tiles // clusters))
    return whole // clusters + (tiles - whole) / working + (single_round.cost if whole == 0 else SHARE_COST)


@dataclass(frozen=True)
class Schedule:
    """A launch of a kernel of the families over ``tiles`` blocks of C (in clusters): its ``grid``; for a
    kernel that ``shares_k`` (it takes three more arguments), the blocks of C it computes ``whole``
    before sharing the K of the rest, and the device memory the shared ones take: the partial sums'
    (``partial_bytes``), and the counters of arrivals at the pairs of clusters that add up a part's sums
    (``arrivals`` int32, zero at launch)."""

    grid: tuple[int]
    shares_k: bool
    whole: int
    partial_bytes: int
    arrivals: int
    tiles: int


@dataclass(frozen=True)
class Rendered:
    """A kernel's source, its entry point, and how to launch it over an M x N x K problem: its arguments
    are the tensor maps of A and B (``tensor_type`` elements, ``tensor_shape`` their shapes,
    ``tensor_boxes`` their boxes), where the kernel stores C by TMA C's tensor map (boxes of
    ``params.c_box``; any tensor map where C's rows are not 16-byte aligned, which the kernel then stores
    from the registers), then C, M, N and K, then ``LAYERS_PARAMETERS`` (``blas.cuda_gemm.layer_arguments``).
    ``c_transposed``: the kernel stores C as C^T (N x M), from the registers (its tensor map of C any)."""

    source: str
    name: str
    params: HopperParams
    mn_major: tuple[bool, bool] = (False, False)
    c_transposed: bool = False

    def schedule(self, m: int, n: int, k: int, resident: int, layers: int = 1) -> Schedule:
        """How an M x N x K product (K as the kernel takes it), or a strided batch of ``layers`` of them,
        is shared out among persistent blocks: as many as the device runs at once (``resident``: one or
        two a multiprocessor, in whole clusters; ``CudaContext.resident_blocks``), which compute blocks of C
        whole, in turn, and where the kernel can, share the K of the rest where that pays, among all or,
        where K is short, some of them (``shared_out``: a single round among a multiple of its blocks);
        where there are fewer blocks of C than clusters and their K is not shared, one per block of C."""
        p = self.params
        tiles = -(-m // (p.block_m * p.cluster)) * -(-n // p.block_n) * layers
        clusters = resident // p.cluster
        whole, working = (shared_out(tiles, clusters, -(-k // p.block_k), p.single_round) if p.shares_k
                          else (tiles, min(tiles, clusters)))
        grid = working * p.cluster
        if whole == tiles:
            return Schedule((grid,), p.shares_k, whole, 0, 0, tiles)
        counters = (tiles - whole + working) * p.cluster * p.teams      # one a pair of clusters (gathered)
        return Schedule((grid,), True, whole, 2 * grid * p.sum_bytes, counters, tiles)

    @property
    def block(self) -> tuple[int]:
        return (self.params.threads,)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory to launch it with."""
        return self.params.shared_bytes

    @property
    def tensor_type(self) -> str:
        return self.params.tensor_type

    def tensor_shape(self, rows: int, k: int, mn_major: bool = False) -> tuple[int, int]:
        """The tensor map's shape of an operand of ``rows`` rows of ``k`` elements, the inner one in the
        tensor map's elements (complex128's are two float64): (rows, K), or for one read MN-major (K x
        rows in memory), (K, rows)."""
        p = self.params
        return (k, rows * p.box_k // p.block_k) if mn_major else (rows, k * p.box_k // p.block_k)

    @property
    def tensor_boxes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The boxes TMA copies of A and of B, as (rows, columns) of their tensor maps: K-major, a tile's
        rows (a block's share of B's where it works in a cluster) by 128 bytes of K; MN-major, a tile's K
        by 128 bytes of its rows (``_loads``)."""
        p = self.params
        rows = (p.block_m, p.block_n // p.cluster)
        return tuple((p.block_k, p.box_k) if mn else (count, p.box_k)  # type: ignore[return-value]
                     for count, mn in zip(rows, self.mn_major))
