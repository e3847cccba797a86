"""``render``: the CUDA C++ source of a ``DmmaParams``.

Blocks are persistent and warp-specialized (``codelets.hopper``: a producer warpgroup loads the tiles by
TMA, in the 128-byte swizzle). Each consumer warp waits for a stage to be full, reads its fragments of A
and B out of the swizzled tiles (``OFFSET``: K-major, element (r, k) of a float64 tile lies in 16-byte
chunk k / 2 XOR r mod 8 of row r; an operand stored MN-contiguous is read as it lies, in lines of K)
and multiplies them with ``mma.sync`` m16n8k``mma_k`` f64; then it hands the
stage back on its "empty" mbarrier (every consumer warp arrives: warps run apart). The producer runs
on into the next block of C while the consumers store the last. Fragments follow the instruction: in
each 16 x 8 tile of C a thread holds rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4) and the next;
of A rows lane / 4 and + 8, of B column lane / 4, at K indices lane % 4 + 4 q of the instruction. A
thread reads those from ``span`` neighbouring K indices of the tile (16 bytes at a time where it can),
chosen so that a warp's reads fall in distinct banks (``FIRST_K``): the sum over K is the same in any
order of K that A and B share."""

from __future__ import annotations

from ..hopper import (
    BLOCKS_OF_C,
    HELPERS,
    ROW_BYTES,
    WARPGROUP,
    Rendered,
    cluster_attribute,
    cluster_end,
    pipeline,
    registers,
)
from .params import DmmaParams


def _step(fragments: str, products: str) -> str:
    """One instruction's K of a warp: every tile's ``fragments`` of B read, then for each tile i of the
    warp's rows its fragment of A (registers ``half + 2 q``: rows group_id + 8 half) and its ``products``
    with every tile j. A thread holds B's fragments and one tile's of A at a time."""
    return f"""            #pragma unroll
            for (int kk = 0; kk < BLOCK_K; kk += MMA_K) {{
                // the instruction's K indices member + 4 q (q < SPAN) are the tile's SPAN from FIRST_K, in A
                // and B alike
                const int first = FIRST_K;
                {fragments}
                #pragma unroll
                for (int j = 0; j < TILES_N; ++j)
                    fragment<B_MN>(b_tile, warp_col + j * 8 + group_id, first, B_FRAGMENT, 1);
                #pragma unroll
                for (int i = 0; i < TILES_M; ++i) {{
                    #pragma unroll
                    for (int half = 0; half < 2; ++half)
                        fragment<A_MN>(a_tile, warp_row + i * 16 + group_id + 8 * half, first, A_FRAGMENT, 2);{products}
                }}
            }}
"""


#: The step in float64.
REAL_STEP = _step("double a[2 * SPAN], b[TILES_N][SPAN];", """
                    #pragma unroll
                    for (int j = 0; j < TILES_N; ++j) dmma(acc[i][j], a, b[j]);""").replace(
    "A_FRAGMENT", "&a[half]").replace("B_FRAGMENT", "b[j]")
#: The same in complex128: re += a.re b.re - a.im b.im, im += a.re b.im + a.im b.re (parts 0 and 1).
COMPLEX_STEP = _step("double a[2][2 * SPAN], b[TILES_N][2][SPAN];", """
                    double minus[2 * SPAN];                 // -a.im
                    #pragma unroll
                    for (int v = 0; v < 2 * SPAN; ++v) minus[v] = -a[1][v];
                    #pragma unroll
                    for (int j = 0; j < TILES_N; ++j) {
                        dmma(acc[i][j], a[0], b[j][0]);
                        dmma(acc[i][j], minus, b[j][1]);
                        dmma(acc[i][j] + 4, a[0], b[j][1]);
                        dmma(acc[i][j] + 4, a[1], b[j][0]);
                    }""").replace("A_FRAGMENT", "&a[0][half], &a[1][half]").replace(
    "B_FRAGMENT", "b[j][0], b[j][1]")
#: The first of a thread's K indices of a tile for the instruction at kk, by how it reads (``FRAGMENTS``),
#: so that a warp's reads of a row of eight in the swizzle fall in distinct banks: float64 one at a time, member + 4 q
#: itself (a row's 8 bytes at column kk + member); otherwise each thread owns BLOCK_K / 4 neighbouring K
#: indices (two 16-byte chunks, 2 member and the next, of every row) and each instruction takes the next
#: SPAN of them. In an MN-contiguous tile the latter put a warp's four members on lines 4 apart, whose
#: swizzles send their reads to the two halves of the banks by turns: as few conflicts as 8-byte reads allow.
FIRST_K = {"single": "kk + member", "pairs": "member * (BLOCK_K / 4) + kk / 4",
           "complex": "member * (BLOCK_K / 4) + kk / 4"}
#: Where element (row, k) of a staged tile lies, in bytes from the tile's start, for a tile of rows of
#: 128 bytes of K (``MN`` false) or of boxes of MN_BOX rows, each 128 bytes of M (N) by the tile's K
#: (``MN``: an operand stored MN-contiguous), both in the 128-byte swizzle (16-byte chunk c of line l at
#: chunk c XOR l mod 8).
OFFSET = """template <bool MN>
__device__ __forceinline__ unsigned offset(unsigned row, unsigned k) {
    const unsigned line = MN ? k : row, at = (MN ? row % MN_BOX : k) * ELEMENT_BYTES;
    return (MN ? row / MN_BOX * MN_BOX_BYTES : 0) + line * ROW_BYTES + ((at & ~15u) ^ ((line & 7) << 4)) + (at & 15);
}"""
#: How a thread reads its SPAN neighbouring elements of a row of a tile (``OFFSET``) into every
#: ``stride``-th register: float64 one at a time ("single", SPAN 1) or, K-contiguous, two at a time
#: ("pairs"), or complex128 one at a time ("complex"). An MN-contiguous tile holds neighbouring K in
#: different lines: float64 one at a time there.
FRAGMENTS = {
    "single": """template <bool MN>
__device__ __forceinline__ void fragment(const unsigned char* tile, int row, int k, double* to, int stride) {
    to[0] = *reinterpret_cast<const double*>(tile + offset<MN>(row, k));
}""",
    "pairs": """template <bool MN>
__device__ __forceinline__ void fragment(const unsigned char* tile, int row, int k, double* to, int stride) {
    #pragma unroll
    for (int c = 0; c < SPAN / 2; ++c) {
        double2 pair;
        if (MN) {
            pair.x = *reinterpret_cast<const double*>(tile + offset<MN>(row, k + 2 * c));
            pair.y = *reinterpret_cast<const double*>(tile + offset<MN>(row, k + 2 * c + 1));
        } else {
            pair = *reinterpret_cast<const double2*>(tile + offset<MN>(row, k + 2 * c));
        }
        to[2 * c * stride] = pair.x;
        to[(2 * c + 1) * stride] = pair.y;
    }
}""",
    "complex": """template <bool MN>
__device__ __forceinline__ void fragment(const unsigned char* tile, int row, int k, double* re, double* im,
                                         int stride) {
    #pragma unroll
    for (int q = 0; q < SPAN; ++q) {
        const double2 element = *reinterpret_cast<const double2*>(tile + offset<MN>(row, k + q));
        re[q * stride] = element.x;
        im[q * stride] = element.y;
    }
}""",
}


def _instruction(mma_k: int) -> str:
    """``dmma``: c (four float64 of a 16 x 8 tile) += the product of A's and B's fragments, m16n8k``mma_k``."""
    span = mma_k // 4
    a = ", ".join(f"%{4 + v}" for v in range(2 * span))
    b = ", ".join(f"%{4 + 2 * span + q}" for q in range(span))
    operands = ", ".join([f'"d"(a[{v}])' for v in range(2 * span)] + [f'"d"(b[{q}])' for q in range(span)])
    return f"""__device__ __forceinline__ void dmma(double* c, const double* a, const double* b) {{
    asm volatile("mma.sync.aligned.m16n8k{mma_k}.row.col.f64.f64.f64.f64 {{%0, %1, %2, %3}}, {{{a}}}, {{{b}}}, {{%0, %1, %2, %3}};\\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3]) : {operands});
}}"""


#: The scalars of C = alpha A B^T + beta C and their arithmetic, by dtype.
SCALARS = {
    "d": """__device__ __forceinline__ double scaled(double s, double v) { return s * v; }
__device__ __forceinline__ double added(double a, double b) { return a + b; }
__device__ __forceinline__ bool is_zero(double s) { return s == 0.0; }""",
    "z": """__device__ __forceinline__ double2 scaled(double2 s, double2 v) {
    return make_double2(s.x * v.x - s.y * v.y, s.x * v.y + s.y * v.x);
}
__device__ __forceinline__ double2 added(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ bool is_zero(double2 s) { return s.x == 0.0 && s.y == 0.0; }""",
}
#: A warp's C: each thread's two neighbouring columns in rows group_id and group_id + 8 of each tile,
#: within M x N.
STORES = """        #pragma unroll
        for (int i = 0; i < TILES_M; ++i) {
            #pragma unroll
            for (int j = 0; j < TILES_N; ++j) {
                const int col = n0 + warp_col + j * 8 + 2 * member;
                #pragma unroll
                for (int half = 0; half < 2; ++half) {      // rows group_id and group_id + 8
                    const long row = m0 + warp_row + i * 16 + group_id + 8 * half;
                    if (row >= M) continue;
                    ELEMENT* to = &C[row * N + col];
                    ELEMENT first = scaled(alpha, VALUE(2 * half)), second = scaled(alpha, VALUE(2 * half + 1));
                    if (!is_zero(beta)) {                  // beta 0: C is not read
                        if (col < N) first = added(first, scaled(beta, to[0]));
                        if (col + 1 < N) second = added(second, scaled(beta, to[1]));
                    }
                    if (col < N) to[0] = first;
                    if (col + 1 < N) to[1] = second;
                }
            }
        }
"""


def render(params: DmmaParams, mn_major: tuple[bool, bool] = (False, False)) -> Rendered:
    """The kernel of ``params`` (check ``malformed`` first), for A and B lying K-major (C = A B^T), or
    either MN-major (``mn_major``: A^T, B; check ``params.mn_major_problem``)."""
    why = params.mn_major_problem(mn_major)
    if why:
        raise ValueError(why)
    complex_ = params.dtype == "z"
    reads = "complex" if complex_ else "single" if params.span == 1 else "pairs"
    steps = (COMPLEX_STEP if complex_ else REAL_STEP).replace("FIRST_K", FIRST_K[reads])
    value = "make_double2(acc[i][j][E], acc[i][j][4 + E])" if complex_ else "acc[i][j][E]"
    stores = STORES
    for index in ("2 * half + 1", "2 * half"):
        stores = stores.replace(f"VALUE({index})", value.replace("E", index))
    layout = ("t" if mn_major[0] else "n") + ("n" if mn_major[1] else "t")
    name = (f"dmma_{layout}_{params.dtype}_m{params.block_m}_n{params.block_n}_w{params.warps_m}x{params.warp_m}x{params.warp_n}"
            f"_k{params.mma_k}_s{params.stages}_g{params.group}" + (f"_c{params.cluster}" if params.cluster > 1 else ""))
    source = f"""// autogemm dmma family: C = alpha A B^T + beta C on sm_90a, {params.describe()}
// A: M x K, B: N x K ({"K x M" if mn_major[0] else "K-contiguous"} and {"K x N" if mn_major[1] else "K-contiguous"}, read through tensor maps), C: M x N, row-major, of
// {"complex128 (real and imaginary parts side by side)" if params.dtype == "z" else "float64"}; beta 0 does not read C.
#define ELEMENT {"double2" if params.dtype == "z" else "double"}
#define BLOCK_M {params.block_m}
#define BLOCK_N {params.block_n}
#define BLOCK_K {params.block_k}                          // 128 bytes of K: one swizzled row
#define MMA_K {params.mma_k}                            // K of one instruction
#define SPAN {params.span}                             // K indices of a row a thread holds in one instruction
#define BOX_K {params.box_k}                                  // the same in float64 (the tensor maps' elements)
#define PARTS {params.element_bytes // 8}                             // float64 of an element: complex128's two
#define ELEMENT_BYTES {params.element_bytes}
#define A_MN {str(mn_major[0]).lower()}                          // A's tile lies MN-major (boxes of 128 bytes of M)
#define B_MN {str(mn_major[1]).lower()}                          // and B's (of N)
#define STAGES {params.stages}
#define PLANES 1
#define GROUP {params.group}                             // rows of clusters of C taken together
#define CLUSTER {params.cluster}                           // blocks of a cluster, along M, sharing tiles of B
#define THREADS {params.threads}
#define WARPS_N {params.warps // params.warps_m}                           // consumer warps side by side along N
#define WARP_M {params.warp_m}
#define WARP_N {params.warp_n}
#define TILES_M (WARP_M / 16)                     // instruction tiles of a warp's rows
#define TILES_N (WARP_N / 8)                      // and of its columns
#define ROW_BYTES {ROW_BYTES}
#define A_TILE_BYTES (BLOCK_M * ROW_BYTES)
#define B_TILE_BYTES (BLOCK_N * ROW_BYTES)
#define STAGED_C_BYTES 0                          // C is stored from the registers
#define EMPTY_ARRIVALS ({params.warps} * CLUSTER)               // every consumer warp of the cluster hands a buffer back

{HELPERS}
{SCALARS[params.dtype]}

{OFFSET}

{FRAGMENTS[reads]}

{_instruction(params.mma_k)}

extern "C" __global__ void {cluster_attribute(params.cluster)}__launch_bounds__(THREADS, 1) {name}(
        const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
        ELEMENT* __restrict__ C, int M, int N, int K, ELEMENT alpha, ELEMENT beta) {{
{pipeline(params.cluster, registers(params.consumers, "producer"), mn_major, rolled=True)}
    {registers(params.consumers, "consumer")}
    const int warp = (threadIdx.x - {WARPGROUP}) / 32, lane = threadIdx.x % 32;
    const int group_id = lane / 4, member = lane % 4;
    const int warp_row = warp / WARPS_N * WARP_M, warp_col = warp % WARPS_N * WARP_N;
    double acc[TILES_M][TILES_N][4 * PARTS];           // (complex: the real parts, then the imaginary)
    int iteration = 0;
    {BLOCKS_OF_C[False]}
        #pragma unroll
        for (int i = 0; i < TILES_M; ++i)
            #pragma unroll
            for (int j = 0; j < TILES_N; ++j)
                #pragma unroll
                for (int e = 0; e < 4 * PARTS; ++e) acc[i][j][e] = 0.0;
        for (int t = 0; t < k_count; ++t) {{
            const int it = iteration + t, s = it % STAGES;
            barrier_wait(&full[s], (it / STAGES) & 1);
            const unsigned char* a_tile = a_tiles + s * A_TILE_BYTES;
            const unsigned char* b_tile = b_tiles + s * B_TILE_BYTES;
{steps}            // this warp's reads of the stage (generic proxy) are done before TMA (async proxy) refills it
            asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
            __syncwarp();
            if (lane == 0) stage_release(&empty[s]);
        }}
{stores}    }}
    {cluster_end(params.cluster)}
}}
"""
    return Rendered(source, name, params, mn_major)
