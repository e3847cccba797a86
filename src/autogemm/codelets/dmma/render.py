"""``render``: the CUDA C++ source of a ``DmmaParams``.

Blocks are persistent and warp-specialized (``codelets.hopper``: a producer warpgroup loads the tiles by
TMA, in the 128-byte swizzle). Each consumer warp waits for a stage to be full, reads its fragments of A
and B out of the swizzled tiles (``OFFSET``: K-major, element (r, k) of a float64 tile lies in 16-byte
chunk k / 2 XOR r mod 8 of row r; an operand stored MN-contiguous is read as it lies, in lines of K;
each thread finds where its reads lie once, ``READS``) and multiplies them with ``mma.sync`` m16n8k``mma_k`` f64; then it hands the
stage back on its "empty" mbarrier (every consumer warp arrives: warps run apart). The producer runs
on into the next block of C while the consumers store the last. Fragments follow the instruction: in
each 16 x 8 tile of C a thread holds rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4) and the next;
of A rows lane / 4 and + 8, of B column lane / 4, at K indices lane % 4 + 4 q of the instruction, which
a thread reads from K indices of the tile chosen so that a warp's reads fall in distinct banks
(``K_INDEX``); in float64 it reads the next instruction's fragments while the current ones multiply
(``REAL_LOOP``)."""

from __future__ import annotations

import textwrap

from ..hopper import (
    BLOCKS_OF_C,
    HELPERS,
    LAYERS_PARAMETERS,
    ROW_BYTES,
    SHARED_K_HELPERS,
    WARPGROUP,
    Rendered,
    cluster_attribute,
    cluster_end,
    gathered,
    pipeline,
    registers,
    shared_k_parameters,
)
from .params import DmmaParams

#: A stage handed back: this warp's reads of it (generic proxy) are done before TMA (async proxy) refills it.
RELEASE = """            asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
            __syncwarp();
            if (lane == 0) stage_release(&empty[s]);
"""
#: The consumers' loop over a block of C's tiles of K in float64. A thread holds the fragments of B of every
#: tile of its warp's columns and of A of one tile of its rows, and reads the next ones while the current
#: ones multiply: A's next tile of rows before each tile's products, and after the last, the next
#: instruction's K of B and A's first tile (of the next stage, once full: its fragments are read while the
#: current stage's last products run). Registers ``half + 2 q`` of A's fragments hold rows group_id + 8
#: half, as the instruction takes them; B's are read into its order too, 8 bytes at a time (``FRAGMENTS``).
REAL_LOOP = r"""        #define LOAD_B(buffer, tile, step) _Pragma("unroll") for (int j = 0; j < TILES_N; ++j) \
            fragment(tile + (j / 2) * rows_16_bytes<B_MN>(), b_at[j % 2][step], b[buffer][j], 1)
        #define LOAD_A(buffer, tile, i, step) _Pragma("unroll") for (int half = 0; half < 2; ++half) \
            fragment(tile + (i) * rows_16_bytes<A_MN>(), a_at[half][step], &a[buffer][half], 2)
        double a[2][2 * SPAN], b[2][TILES_N][SPAN];     // fragments being multiplied, and the next ones
        if (k_count > 0) {
            const int s = iteration % STAGES;
            barrier_wait(&full[s], (iteration / STAGES) & 1);
            LOAD_B(0, b_tiles + s * B_TILE_BYTES, 0);
            LOAD_A(0, a_tiles + s * A_TILE_BYTES, 0, 0);
        }
        for (int t = 0; t < k_count; ++t) {
            const int it = iteration + t, s = it % STAGES;
            const unsigned char* a_tile = a_tiles + s * A_TILE_BYTES;
            const unsigned char* b_tile = b_tiles + s * B_TILE_BYTES;
            #pragma unroll
            for (int kk = 0; kk < BLOCK_K; kk += MMA_K) {
                const int step = kk / MMA_K;
                #pragma unroll
                for (int i = 0; i < TILES_M; ++i) {                 // TILES_M is even: A's buffer is i % 2
                    if (i + 1 < TILES_M) {
                        LOAD_A((i + 1) % 2, a_tile, i + 1, step);
                    } else if (kk + MMA_K < BLOCK_K) {
                        LOAD_B((step + 1) % 2, b_tile, step + 1);
                        LOAD_A(0, a_tile, 0, step + 1);
                    } else {                                        // the stage is read
""" + textwrap.indent(RELEASE, " " * 12) + """                        if (t + 1 < k_count) {
                            const int next = (it + 1) % STAGES;
                            barrier_wait(&full[next], ((it + 1) / STAGES) & 1);
                            LOAD_B((step + 1) % 2, b_tiles + next * B_TILE_BYTES, 0);
                            LOAD_A(0, a_tiles + next * A_TILE_BYTES, 0, 0);
                        }
                    }
                    #pragma unroll
                    for (int j = 0; j < TILES_N; ++j) dmma(acc[i][j], a[i % 2], b[step % 2][j]);
                }
            }
            if ((BLOCK_K / MMA_K) % 2) {                          // an odd count of steps: B's next in buffer 0
                #pragma unroll
                for (int j = 0; j < TILES_N; ++j)
                    #pragma unroll
                    for (int q = 0; q < SPAN; ++q) b[0][j][q] = b[1][j][q];
            }
        }
"""
#: The same in complex128, a stage at a time: re += a.re b.re - a.im b.im, im += a.re b.im + a.im b.re
#: (parts 0 and 1).
COMPLEX_LOOP = r"""        for (int t = 0; t < k_count; ++t) {
            const int it = iteration + t, s = it % STAGES;
            barrier_wait(&full[s], (it / STAGES) & 1);
            const unsigned char* a_tile = a_tiles + s * A_TILE_BYTES;
            const unsigned char* b_tile = b_tiles + s * B_TILE_BYTES;
            #pragma unroll
            for (int kk = 0; kk < BLOCK_K; kk += MMA_K) {
                double a[2][2 * SPAN], b[TILES_N][2][SPAN];
                #pragma unroll
                for (int j = 0; j < TILES_N; ++j)
                    fragment(b_tile + (j / 2) * rows_16_bytes<B_MN>(), b_at[j % 2][kk / MMA_K], b[j][0], b[j][1], 1);
                #pragma unroll
                for (int i = 0; i < TILES_M; ++i) {
                    #pragma unroll
                    for (int half = 0; half < 2; ++half)
                        fragment(a_tile + i * rows_16_bytes<A_MN>(), a_at[half][kk / MMA_K], &a[0][half], &a[1][half], 2);
                    double minus[2 * SPAN];                 // -a.im
                    #pragma unroll
                    for (int v = 0; v < 2 * SPAN; ++v) minus[v] = -a[1][v];
                    #pragma unroll
                    for (int j = 0; j < TILES_N; ++j) {
                        dmma(acc[i][j], a[0], b[j][0]);
                        dmma(acc[i][j], minus, b[j][1]);
                        dmma(acc[i][j] + 4, a[0], b[j][1]);
                        dmma(acc[i][j] + 4, a[1], b[j][0]);
                    }
                }
            }
""" + RELEASE + """        }
"""
#: K_INDEX(j): the K index of a tile a thread holds in the j-th quarter of the tile's K (register q of the
#: instruction at kk holds quarter kk / 4 + q; the sum over K is the same in any order of K that A and B
#: share), chosen so that a warp's reads fall in distinct banks. float64 is read 8 bytes at a time, half a
#: warp at once: 16 reads, 128 bytes, in one pass where they hit distinct banks. The 128-byte swizzle holds
#: K indices 2c and 2c + 1 of row r of a K-major tile in 16-byte chunk c XOR r mod 8, so the four rows of
#: half a warp fill every bank where its members' K indices differ in bits 0 and 3; it holds rows 2c and
#: 2c + 1 of line k of an MN-major tile in chunk c XOR k mod 8, so there they must differ in bits 1 and 2.
#: The members take K indices {0, 3, 12, 15} (each bit of the member in two bits of K), each quarter j
#: those XOR {0, 1, 4, 5}[j]: one pass either way (K indices {0, 1, 8, 9}, as before, took four where a
#: tile lies MN-major). complex128: each thread owns BLOCK_K / 4 neighbouring K indices of every row and
#: each instruction takes the next SPAN of them; each part of an element is read apart, 8 bytes of a
#: 16-byte chunk, so half a warp takes two passes in either layout (the members' lines 2 apart where a
#: tile lies MN-major).
K_INDEX = {"d": "#define K_INDEX(j) ((3 * (member & 1) + 12 * (member >> 1)) ^ ((j) & 1) ^ (4 * ((j) >> 1)))",
           "z": "#define K_INDEX(j) (member * (BLOCK_K / 4) + (j))"}
#: Where element (row, k) of a staged tile lies, in bytes from the tile's start, for a tile of rows of
#: 128 bytes of K (``MN`` false) or of boxes of MN_BOX rows, each 128 bytes of M (N) by the tile's K
#: (``MN``: an operand stored MN-contiguous), both in the 128-byte swizzle (16-byte chunk c of line l at
#: chunk c XOR l mod 8).
OFFSET = """template <bool MN>
__device__ __forceinline__ unsigned offset(unsigned row, unsigned k) {
    const unsigned line = MN ? k : row, at = (MN ? row % MN_BOX : k) * ELEMENT_BYTES;
    return (MN ? row / MN_BOX * MN_BOX_BYTES : 0) + line * ROW_BYTES + ((at & ~15u) ^ ((line & 7) << 4)) + (at & 15);
}
// Bytes from a row of a tile to the row 16 further: in either layout the same for every K index.
template <bool MN>
__device__ __forceinline__ constexpr unsigned rows_16_bytes() { return MN ? 16 / MN_BOX * MN_BOX_BYTES : 16 * ROW_BYTES; }
// x, computed once: the compiler cannot see through the asm, so it keeps x in a register rather than
// computing it again where it is used (it did so for every read of every tile of K, in 40% more
// instructions than the loop's reads and products).
__device__ __forceinline__ unsigned pinned(unsigned x) { asm volatile("mov.b32 %0, %0;" : "+r"(x)); return x; }"""
#: Where a thread's reads lie in a stage's tile, computed once (``OFFSET``): ``a_at[v][step][q]`` for
#: register q of the instruction at ``step`` of a tile of K, in A's row warp_row + group_id + 8 v; rows a
#: multiple of 16 further are ``rows_16_bytes`` on (in the swizzle a row 8 further is, in an MN-major
#: float64 tile, not a constant distance away); the same for B from warp_col.
READS = """    unsigned a_at[2][BLOCK_K / MMA_K][SPAN], b_at[2][BLOCK_K / MMA_K][SPAN];
    #pragma unroll
    for (int v = 0; v < 2; ++v)
        #pragma unroll
        for (int step = 0; step < BLOCK_K / MMA_K; ++step)
            #pragma unroll
            for (int q = 0; q < SPAN; ++q) {
                a_at[v][step][q] = pinned(offset<A_MN>(warp_row + group_id + 8 * v, K_INDEX(step * MMA_K / 4 + q)));
                b_at[v][step][q] = pinned(offset<B_MN>(warp_col + group_id + 8 * v, K_INDEX(step * MMA_K / 4 + q)));
            }"""
#: How a thread reads its SPAN elements of a row of a tile (at the bytes ``at``, ``READS``) into every
#: ``stride``-th register, 8 bytes at a time, straight into the registers the instruction reads: float64
#: ("d"), and complex128's real and imaginary parts apart ("z"; read 16 bytes at a time, the parts took
#: 8 register moves an instruction to lay out, which slowed the kernel).
FRAGMENTS = {
    "d": """__device__ __forceinline__ void fragment(const unsigned char* tile, const unsigned* at, double* to, int stride) {
    #pragma unroll
    for (int q = 0; q < SPAN; ++q) to[q * stride] = *reinterpret_cast<const double*>(tile + at[q]);
}""",
    "z": """__device__ __forceinline__ void fragment(const unsigned char* tile, const unsigned* at, double* re, double* im,
                                         int stride) {
    #pragma unroll
    for (int q = 0; q < SPAN; ++q) {
        re[q * stride] = *reinterpret_cast<const double*>(tile + at[q]);
        im[q * stride] = *reinterpret_cast<const double*>(tile + at[q] + 8);
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
    "z": """// by a scalar of exactly 1, v itself: the product would make a zero part beside an infinite one NaN
__device__ __forceinline__ double2 scaled(double2 s, double2 v) {
    if (s.x == 1.0 && s.y == 0.0) return v;
    return make_double2(s.x * v.x - s.y * v.y, s.x * v.y + s.y * v.x);
}
__device__ __forceinline__ double2 added(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ bool is_zero(double2 s) { return s.x == 0.0 && s.y == 0.0; }""",
}
#: A warp's C: each thread's two neighbouring columns in rows group_id and group_id + 8 of each tile,
#: within M x N.
STORES = """        ELEMENT* const C = c_layers + (size_t)layer * M * N;      // this block's product's C
        #pragma unroll
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


def render(params: DmmaParams, mn_major: tuple[bool, bool] = (False, False), c_transposed: bool = False
           ) -> Rendered:
    """The kernel of ``params`` (check ``malformed`` first), for A and B lying K-major (C = A B^T), or
    either MN-major (``mn_major``: A^T, B; check ``params.mn_major_problem``). It stores C as it lies
    (``c_transposed`` is refused: ``DmmaParams.stores_c_transposed``)."""
    why = params.mn_major_problem(mn_major) or ("dmma stores C as it lies, not transposed" if c_transposed else None)
    if why:
        raise ValueError(why)
    complex_ = params.dtype == "z"
    value = "make_double2(acc[i][j][E], acc[i][j][4 + E])" if complex_ else "acc[i][j][E]"
    stores = STORES
    for index in ("2 * half + 1", "2 * half"):
        stores = stores.replace(f"VALUE({index})", value.replace("E", index))
    # stream-K (``codelets.hopper``): the block's consumers are one team, which sums the parts of a block
    # of C that blocks share, each thread its own accumulators, before it stores them
    shared_k = (f"""#define TEAMS 1                                   // stream-K: the consumers sum their parts of C together
#define TEAM_THREADS {params.consumers * WARPGROUP}
#define TEAM_SYNC(team) asm volatile("bar.sync 1, {params.consumers * WARPGROUP};\\n" ::: "memory")
{SHARED_K_HELPERS}
""" if params.shares_k else "")
    last_parameters = ",\n        " + shared_k_parameters("double") if params.shares_k else ""
    gathered_sums = (gathered("TILES_M * TILES_N * 4 * PARTS", "reinterpret_cast<double*>(acc)", "0",
                              f"threadIdx.x - {WARPGROUP}") + "\n" if params.shares_k else "")
    layout = ("t" if mn_major[0] else "n") + ("n" if mn_major[1] else "t")
    name = (f"dmma_{layout}_{params.dtype}_m{params.block_m}_n{params.block_n}_w{params.warps_m}x{params.warp_m}x{params.warp_n}"
            f"_k{params.mma_k}_s{params.stages}_g{params.group}" + (f"_c{params.cluster}" if params.cluster > 1 else "")
            + ("_sk" if params.shares_k else ""))
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
{shared_k}{SCALARS[params.dtype]}

{OFFSET}

{FRAGMENTS[params.dtype]}

{_instruction(params.mma_k)}

extern "C" __global__ void {cluster_attribute(params.cluster)}__launch_bounds__(THREADS, 1) {name}(
        const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
        ELEMENT* __restrict__ c_layers, int M, int N, int K, {LAYERS_PARAMETERS}, ELEMENT alpha, ELEMENT beta{last_parameters}) {{
{pipeline(params.cluster, registers(params.consumers, "producer"), mn_major, shares_k=params.shares_k, rolled=True)}
    {registers(params.consumers, "consumer")}
    const int warp = (threadIdx.x - {WARPGROUP}) / 32, lane = threadIdx.x % 32;
    const int group_id = lane / 4, member = lane % 4;
    {K_INDEX[params.dtype]}
    const int warp_row = warp / WARPS_N * WARP_M, warp_col = warp % WARPS_N * WARP_N;
{READS}
    double acc[TILES_M][TILES_N][4 * PARTS];           // (complex: the real parts, then the imaginary)
    int iteration = 0;
    {BLOCKS_OF_C[params.shares_k]}
        #pragma unroll
        for (int i = 0; i < TILES_M; ++i)
            #pragma unroll
            for (int j = 0; j < TILES_N; ++j)
                #pragma unroll
                for (int e = 0; e < 4 * PARTS; ++e) acc[i][j][e] = 0.0;
{COMPLEX_LOOP if complex_ else REAL_LOOP}{gathered_sums}{stores}    }}
    {cluster_end(params.cluster)}
}}
"""
    return Rendered(source, name, params, mn_major)
