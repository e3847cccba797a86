"""``render``: the CUDA C++ source of a ``WgmmaParams`` and its launch geometry.

Blocks are persistent and warp-specialized (``codelets.hopper``: a producer warpgroup loads the tiles by
TMA). Each consumer warpgroup waits for a stage to be full, multiplies its 64 rows of A by the tile of B
with wgmma (asynchronous, one group in flight), and once the group before has finished reading its
stage, arrives on that stage's "empty" mbarrier. The producer runs on into the next block of C while
the consumers store the last: into shared memory, from which TMA stores it while they go on (``STORES``).

TMA writes the tiles in the 128-byte swizzle (rows of 128 bytes of K, the 16-byte chunks of each row
permuted by the row's index within 8), the layout wgmma reads without bank conflicts; a shared-memory
matrix descriptor names it (layout 1), with 1024 bytes from one group of 8 rows to the next. A step of K
within the 128 bytes moves the descriptor's start address. The accumulators follow the instruction's
layout: warp w of a consumer holds rows 16w..16w+15 of its 64, each thread two rows 8 apart and, in
every 8 columns, two neighbours."""

from __future__ import annotations

import textwrap

from ..hopper import (
    BLOCKS_OF_C,
    HELPERS,
    LAYERS_PARAMETERS,
    PING_PONG_BLOCKS,
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
from .params import WgmmaParams

#: Two neighbouring 16-bit values of C written as one 32-bit word.
_PAIRED_16 = """
__device__ __forceinline__ void store_pair(out_t* to, float x, float y) {
    *(unsigned*)to = (unsigned)narrowed(x) | (unsigned)narrowed(y) << 16;
}"""
#: C's element type ``out_t``, its conversions from and to float32, and ``store_pair`` (two neighbours
#: at once, the first at an even column), by ``WgmmaParams.out`` (16-bit values held in their bits; the
#: conversions round to nearest).
OUT_TYPES = {
    "f32": """typedef float out_t;
__device__ __forceinline__ float widened(out_t v) { return v; }
__device__ __forceinline__ out_t narrowed(float v) { return v; }
__device__ __forceinline__ void store_pair(out_t* to, float x, float y) { *(float2*)to = make_float2(x, y); }""",
    "f16": """typedef unsigned short out_t;                  // float16's bits
__device__ __forceinline__ float widened(out_t v) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f;
}
__device__ __forceinline__ out_t narrowed(float v) {
    out_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v)); return h;
}""" + _PAIRED_16,
    "bf16": """typedef unsigned short out_t;                  // bfloat16's bits
__device__ __forceinline__ float widened(out_t v) { return __uint_as_float((unsigned)v << 16); }
__device__ __forceinline__ out_t narrowed(float v) {
    out_t h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v)); return h;
}""" + _PAIRED_16,
}
#: What the consumers' stores of C take: the value of two neighbours of C, the store of a box of C by
#: TMA from shared memory, and a barrier of one consumer's threads alone.
STORE_HELPERS = r"""
// alpha times the sums x and y, plus beta times C at (r, col) and (r, col + 1) where they lie in C
// (beta 0: C is not read)
__device__ __forceinline__ float2 result_pair(float x, float y, const out_t* C, long r, int col, int M, int N,
                                              float alpha, float beta) {
    x *= alpha;
    y *= alpha;
    if (beta != 0.0f && r < M) {
        if (col < N) x += beta * widened(C[r * N + col]);
        if (col + 1 < N) y += beta * widened(C[r * N + col + 1]);
    }
    return make_float2(x, y);
}

// Store the box of the tensor map at (inner, outer) of matrix ``layer`` from shared memory: one bulk
// group of this thread.
__device__ __forceinline__ void tile_store(const TensorMap* map, const void* from, int inner, int outer, int layer) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
                 "cp.async.bulk.commit_group;\n"
                 :: "l"((unsigned long long)map), "r"(inner), "r"(outer), "r"(layer), "r"(shared_address(from))
                 : "memory");
}

// Where element (r, c) of a chunk of C lies in shared memory (64 rows of 128 bytes, the 16-byte pieces of
// row r permuted by r % 8: the 128-byte swizzle TMA stores from).
__device__ __forceinline__ out_t* chunk_at(unsigned char* chunk, int r, int c) {
    const int byte = c * (int)sizeof(out_t);
    return reinterpret_cast<out_t*>(chunk + r * ROW_BYTES + (((byte / 16) ^ (r % 8)) * 16) + byte % 16);
}

// Store a chunk of C from shared memory to C's rows first_row... and columns first_col... (within M x N)
// where those rows are not 16-byte aligned: the 128 threads an element each along the chunk's rows, so
// that each warp's stores are one run of consecutive memory.
__device__ __forceinline__ void copy_out(unsigned char* chunk, out_t* C, long first_row, int first_col, int M,
                                         int N, int thread) {
    for (int e = thread; e < 64 * CHUNK_N; e += 128) {
        const int r = e / CHUNK_N, c = e % CHUNK_N;
        if (first_row + r < M && first_col + c < N)
            C[(first_row + r) * N + first_col + c] = *chunk_at(chunk, r, c);
    }
}

// The 128 threads of consumer warpgroup ``warpgroup`` wait for each other (named barrier ``warpgroup``).
__device__ __forceinline__ void consumer_sync(int warpgroup) {
    asm volatile("bar.sync %0, 128;\n" :: "r"(warpgroup) : "memory");
}"""
#: A consumer's C in chunks of CHUNK_N columns (128 bytes of each of its 64 rows), each written into one
#: of its two buffers of shared memory in the 128-byte swizzle (conflict-free), then stored: by TMA
#: where C's rows are 16-byte aligned (while the consumer goes on), else where N is odd by the
#: consumer's threads (``copy_out``, a warp's stores one run of memory: from the registers, a thread's
#: neighbours lie 8 columns apart and are stored one by one, a warp's stores touching 8 rows of C). A
#: buffer is written again once its last store has read it. Where N is even, the pairs are stored from
#: the registers (``REGISTER_STORES``), which went faster than the copy through shared memory.
STORES = """        const bool by_tma = (size_t)C % 16 == 0 && N % (16 / sizeof(out_t)) == 0;
        const bool paired = N % 2 == 0 && (size_t)C % (2 * sizeof(out_t)) == 0;     // every pair starts aligned
        if (paired && !by_tma) {
REGISTERS        } else {
            #pragma unroll
            for (int chunk = 0; chunk < BLOCK_N / CHUNK_N; ++chunk, ++staged) {
                unsigned char* chunk_tile = c_tiles + (2 * (warpgroup - 1) + staged % 2) * C_CHUNK_BYTES;
                if (leader) asm volatile("cp.async.bulk.wait_group.read 1;\\n" ::: "memory");
                consumer_sync(warpgroup);
                #pragma unroll
                for (int within = 0; within < CHUNK_N / 8; ++within) {    // (constant bounds: unrolled whole)
                    const int j = chunk * (CHUNK_N / 8) + within, col = j * 8 + 2 * (lane % 4);
                    #pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const int r = warp * 16 + lane / 4 + 8 * half;     // of the consumer's 64 rows
                        const float2 v = result_pair(SUMS[4 * j + 2 * half], SUMS[4 * j + 2 * half + 1], C,
                                                     m0 + row0 + r, n0 + col, M, N, alpha, beta);
                        store_pair(chunk_at(chunk_tile, r, col % CHUNK_N), v.x, v.y);
                    }
                }
                if (by_tma) {
                    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");   // the writes seen by TMA
                    consumer_sync(warpgroup);
                    if (leader) tile_store(&map_c, chunk_tile, n0 + chunk * CHUNK_N, m0 + row0, layer);
                } else {
                    consumer_sync(warpgroup);
                    copy_out(chunk_tile, C, m0 + row0, n0 + chunk * CHUNK_N, M, N, threadIdx.x % 128);
                }
            }
        }
"""
#: A consumer's C from its registers, in rows ``row`` and ``row + 8`` of every 8 columns, a thread's two
#: neighbours at once (``PAIRED``: where C's rows are not 16-byte aligned but each pair is, N even) or
#: one by one (``SINGLES``: a narrow block's C where N is odd).
REGISTER_STORES = """#pragma unroll
for (int j = 0; j < BLOCK_N / 8; ++j) {
    const int col = n0 + j * 8 + 2 * (lane % 4);
    #pragma unroll
    for (int half = 0; half < 2; ++half) {          // rows row and row + 8
        const long r = row + 8 * half;
        if (r >= M || col >= N) continue;
        const float2 v = result_pair(SUMS[4 * j + 2 * half], SUMS[4 * j + 2 * half + 1], C, r, col, M, N, alpha, beta);
        STORE
    }
}
"""
PAIRED = "store_pair(&C[r * N + col], v.x, v.y);"
SINGLES = "C[r * N + col] = narrowed(v.x);\n        if (col + 1 < N) C[r * N + col + 1] = narrowed(v.y);"
#: A narrow block's C (``WgmmaParams.narrow``), stored from the registers: by pairs where every pair
#: starts aligned, else element by element.
NARROW_STORES = """        const bool paired = N % 2 == 0 && (size_t)C % (2 * sizeof(out_t)) == 0;
        if (paired) {
REGISTERS        } else {
SINGLES        }
"""


#: A consumer's C^T from its registers, where the kernel computes C^T = B^T A^T (``c_transposed``): its
#: rows are C's columns, so each value is stored alone (a warp's 8 neighbours of a column of C together).
TRANSPOSED_STORES = """#pragma unroll
for (int j = 0; j < BLOCK_N / 8; ++j) {
    #pragma unroll
    for (int half = 0; half < 2; ++half) {          // rows row and row + 8 of C^T
        const long r = row + 8 * half;
        if (r >= M) continue;
        #pragma unroll
        for (int e = 0; e < 2; ++e) {
            const long col = n0 + j * 8 + 2 * (lane % 4) + e;
            if (col >= N) continue;
            out_t* to = &C[col * M + r];
            float v = alpha * SUMS[4 * j + 2 * half + e];
            if (beta != 0.0f) v += beta * widened(*to);
            *to = narrowed(v);
        }
    }
}
"""
#: Where a consumer thread's elements of A lie in a stage's tile of A stored MN-major, read into the
#: registers (``WgmmaParams.reads_a_from_registers``): the tile is boxes of MN_BOX rows of A by the tile's
#: K, each row of K 128 bytes in the 128-byte swizzle (its 16-byte chunks permuted by the row's index
#: within 8). wgmma's fragment of a step of 8 of K: rows m and m + 8, K k and k + 4 (j = 0 to 3: (m, k),
#: (m + 8, k), (m, k + 4), (m + 8, k + 4)); a step is 8 rows of K, 1024 bytes, further.
A_READS = """    unsigned a_reads[4];                           // byte offsets in a stage's tile of A
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int m = row0 + warp * 16 + lane / 4 + 8 * (j % 2), k = lane % 4 + 4 * (j / 2);
        a_reads[j] = m / MN_BOX * MN_BOX_BYTES + k * ROW_BYTES + (((m % MN_BOX) * 4 / 16) ^ (k % 8)) * 16 + m % 4 * 4;
    }"""
#: A consumer thread's fragments of A of stage ``s``'s tile, every step's, read before its wgmma.
A_FRAGMENTS = """            unsigned a_fragments[4 * STEPS];
            #pragma unroll
            for (int i = 0; i < 4 * STEPS; ++i)
                a_fragments[i] = *reinterpret_cast<const unsigned*>(a_tiles + s * A_TILE_BYTES + a_reads[i % 4]
                                                                    + i / 4 * 8 * ROW_BYTES);"""


#: The products of 3xtf32's parts (plane 0 big, 1 small), the small ones first; one plane's single one.
PRODUCTS = {1: ((0, 0),), 2: ((1, 0), (0, 1), (0, 0))}


def _instruction(params: WgmmaParams, a: str, b: str, mn_major: tuple[bool, bool], restarts: bool = False) -> str:
    """The inline PTX of one wgmma on the accumulators ``acc`` and the descriptors named ``a`` and ``b``,
    at step ``step`` of K: 32 bytes into a K-major tile's rows, 16 rows (of 128 bytes) down an MN-major
    one, which 16-bit types take by their transpose flags. tf32 has none: an MN-major A is read from the
    registers, ``a`` then naming the thread's fragments of the tile (four a step). One that ``restarts``
    writes its product over ``acc`` at step 0 (scale-d false) and adds to it after."""
    count = params.accumulators
    registers = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"+f"(acc[{i}])' for i in range(count))
    if params.reads_a_from_registers(mn_major):
        a_inputs = [f'"r"({a}[4 * step + {i}])' for i in range(4)]
        a_operand = "{" + ", ".join(f"%{count + i}" for i in range(4)) + "}"
    else:
        a_inputs = [f'"l"({a} + {STEP_UNITS[mn_major[0]]} * step)']
        a_operand = f"%{count}"
    b_index = count + len(a_inputs)
    inputs = ", ".join([*a_inputs, f'"l"({b} + {STEP_UNITS[mn_major[1]]} * step)'])
    kind = f"m64n{params.block_n}k{params.instruction_k}.f32.{params.instruction_type}.{params.instruction_type}"
    transposes = "" if params.instruction_type == "tf32" else f", {int(mn_major[0])}, {int(mn_major[1])}"
    wgmma = (f"wgmma.mma_async.sync.aligned.{kind} {{{registers}}}, {a_operand}, %{b_index}, "
             f"{'adds' if restarts else '1'}, 1, 1{transposes};\\n")
    if restarts:
        wgmma = f"{{\\n.reg .pred adds;\\nsetp.ne.b32 adds, %{b_index + 1}, 0;\\n{wgmma}}}\\n"
        inputs += ', "r"((int)(step != 0))'
    return (f'asm volatile("{wgmma}"\n'
            f'                     : {outputs}\n'
            f'                     : {inputs} : "memory");')


def _products(params: WgmmaParams, mn_major: tuple[bool, bool]) -> str:
    """The wgmma of one step of K: one, or 3xtf32's three (each term's parts, the small ones first), the
    first of 3xtf32's tile of K writing over the accumulators (their sums are added to ``sums`` after)."""
    a_registers = params.reads_a_from_registers(mn_major)
    return "\n                ".join(_instruction(params, "a_fragments" if a_registers else f"a_start{x}", f"b_start{y}",
                                                 mn_major, restarts=params.planes == 2 and i == 0)
                                    for i, (x, y) in enumerate(PRODUCTS[params.planes]))


#: A step of K (16 bytes' units of the descriptor's start) in a K-major tile, 32 bytes of its rows, and an
#: MN-major one, 16 of its rows of 128 bytes.
STEP_UNITS = {False: 2, True: 128}
#: Where a consumer's part of a stage's tile of A starts, its 64 rows: K-major, 64 rows of 128 bytes of K
#: down; MN-major, the box of its 64 columns (``codelets.hopper``: MN_BOX of them a box).
A_ROWS = {False: " + row0 * ROW_BYTES", True: " + row0 / MN_BOX * MN_BOX_BYTES"}
#: The descriptor's leading byte offset: unused by a K-major tile (its K lies within the 128-byte
#: swizzle); from one box of 128 bytes of M (N) to the next in an MN-major one.
LEADING = {False: "16", True: "MN_BOX_BYTES"}


#: The end of a consumer's tile of K, one group of wgmma in flight: the stage of the tile before is read,
#: and handed back; the last tile's after the loop.
PIPELINED = """            asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");   // the tile before is read
            if (t > 0 && leader) stage_release(&empty[(it - 1) % STAGES]);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
        if (leader) stage_release(&empty[(iteration + k_count - 1) % STAGES]);"""
#: Where consumers ping-pong: a consumer waits for its turn before its block's tiles of K
#: (the first consumer's first block at once), and hands the turn over once it has issued its block's
#: last products, before they finish: the other's products queue behind them while this one stores C.
#: Besides the overlap, the turns keep the consumers' waits on the stages' "full" barriers in the
#: producer's order (one consumer running a block ahead could wait on a stage two phases on, which a
#: barrier's parity cannot tell from the phase before).
TURN_TAKEN = """        if (consumer == 1 || turn > 0) barrier_wait(&order[consumer], (turn + consumer + 1) & 1);
"""
TURN_HANDED = """        if (leader) barrier_arrive(&order[1 - consumer]);     // the other consumer's turn
"""
#: The end of a consumer's tile of K where no group may stay in flight: its registers are read again
#: (the next tile's fragments of A, or 3xtf32's sums), so its products must be in; its stage is handed back.
RETIRED = """            asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");   // this tile's products are in
            if (leader) stage_release(&empty[s]);"""
#: The same for 3xtf32, whose tensor cores' sums of one tile of K are then added to ``sums`` by the CUDA
#: cores in float32 (rounded to nearest), as the tensor cores' own long sums lose more than float32's
#: rounding (summed over a long K, their error grew well past cuBLAS's SGEMM's). A tile's first wgmma
#: writes over ``acc`` (scale-d false) where the CUDA cores zeroed it before: ptxas of CUDA 13.0 then
#: serialized all the kernel's wgmma.
PROMOTED = RETIRED + """
            #pragma unroll
            for (int i = 0; i < COUNT; ++i) sums[i] += acc[i];"""


def render(params: WgmmaParams, mn_major: tuple[bool, bool] = (False, False), c_transposed: bool = False
           ) -> Rendered:
    """The kernel of ``params`` (check ``malformed`` first) for A and B lying K-major (as A and B^T of
    C = A B^T), or either MN-major (``mn_major``: A^T, B; check ``params.mn_major_problem``); with
    ``c_transposed``, C stored as C^T (N x M, row-major: the kernel computes C^T = B^T A^T of a product
    whose operands it was given swapped)."""
    why = params.mn_major_problem(mn_major)
    if why:
        raise ValueError(why)
    layout = ("t" if mn_major[0] else "n") + ("n" if mn_major[1] else "t")
    name = (f"wgmma_{layout}_{params.operand}_m{params.block_m}_n{params.block_n}_s{params.stages}_g{params.group}"
            f"_{params.out}" + (f"_c{params.cluster}" if params.cluster > 1 else "")
            + (f"_r{params.per_multiprocessor}" if params.per_multiprocessor > 1 else "") + ("_pp" if params.ping_pong else "")
            + ("_ct" if c_transposed else ""))
    a_registers = params.reads_a_from_registers(mn_major)
    steps = params.block_k // params.instruction_k
    promoted = params.planes == 2
    count = params.accumulators
    sums_declared = f"\n    float sums[{count}];                              // float32 sums of the tiles' products" if promoted else ""
    zeroed = "sums[i] = 0.0f;" if promoted else "acc[i] = 0.0f;"
    released = (PROMOTED.replace("COUNT", str(count)) + "\n        }" if promoted
                else RETIRED + "\n        }" if a_registers else PIPELINED)
    if params.ping_pong:                  # the turn handed over once the block's products are issued
        released = (released.replace("        }\n        asm volatile(\"wgmma.wait_group.sync.aligned 0;",
                                     "        }\n" + TURN_HANDED + "        asm volatile(\"wgmma.wait_group.sync.aligned 0;")
                    if released is PIPELINED else released + "\n" + TURN_HANDED.rstrip("\n"))
    result = "sums" if promoted else "acc"
    flag_parameter = ["const unsigned* __restrict__ unsplit"] if promoted else []
    flag_check = ("\n    if (*unsplit) return;     // an operand's value cannot be split: float32's kernel takes it"
                  if promoted else "")
    staged = ("" if c_transposed or params.narrow
              else "    int staged = 0;                                 // chunks of C this consumer stored\n")
    reads = "\n" + A_READS if a_registers else ""
    fragments = "\n" + A_FRAGMENTS if a_registers else ""
    paired, singles = (textwrap.indent(REGISTER_STORES.replace("STORE", each), " " * 12) for each in (PAIRED, SINGLES))
    stores = (textwrap.indent(TRANSPOSED_STORES, " " * 8) if c_transposed
              else NARROW_STORES.replace("REGISTERS", paired).replace("SINGLES", singles) if params.narrow
              else STORES.replace("REGISTERS", paired)).replace("SUMS", result)
    gathered_sums = (gathered(str(count), result, "warpgroup - 1", f"threadIdx.x % {WARPGROUP}")
                     if params.shares_k else "")
    # the kernel's last parameters: 3xtf32's flag of values it cannot split, stream-K's share of K
    last_parameters = "".join(",\n        " + each for each in flag_parameter + (
        [shared_k_parameters("float")] if params.shares_k else []))
    blocks_of_c = (f"const int consumer = warpgroup - 1;\n    int iteration = consumer * k_tiles, turn = 0;\n"
                   f"{staged}    {PING_PONG_BLOCKS}\n{TURN_TAKEN}" if params.ping_pong
                   else f"int iteration = 0;\n{staged}    {BLOCKS_OF_C[params.shares_k]}\n")
    starts = "\n".join(
        ("" if a_registers else
         f"            const unsigned long long a_start{p} = descriptor(a_tiles + (s * PLANES + {p}) * A_TILE_BYTES"
         f"{A_ROWS[mn_major[0]]}, {LEADING[mn_major[0]]});\n")
        + f"            const unsigned long long b_start{p} = descriptor(b_tiles + (s * PLANES + {p}) * B_TILE_BYTES,"
        f" {LEADING[mn_major[1]]});"
        for p in range(params.planes))
    source = f"""// autogemm wgmma family: C = A B^T on sm_90a, {params.describe()}
// A: PLANES M x K, B: PLANES N x K, {"K x M" if mn_major[0] else "K-contiguous"} and {"K x N" if mn_major[1] else "K-contiguous"}
// in memory (read through tensor maps), C: M x N of out_t, row-major{", stored transposed" if c_transposed else ""}; C = alpha A B^T + beta C, beta 0
// not reading C.
#define BLOCK_M {params.block_m}
#define BLOCK_N {params.block_n}
#define BLOCK_K {params.block_k}                          // 128 bytes of K: one swizzled row
#define STEPS {steps}                             // wgmma of a tile of K
#define BOX_K BLOCK_K
#define STAGES {params.stages}
#define CONSUMERS {params.consumers}
#define PLANES {params.planes}                            // tiles of each operand: 3xtf32's big and small parts
#define GROUP {params.group}                             // rows of clusters of C taken together
#define CLUSTER {params.cluster}                           // blocks of a cluster, along M, sharing tiles of B
#define THREADS {params.threads}
#define ROW_BYTES {ROW_BYTES}
#define A_TILE_BYTES (BLOCK_M * ROW_BYTES)
#define B_TILE_BYTES (BLOCK_N * ROW_BYTES)
#define EMPTY_ARRIVALS ({1 if params.ping_pong else "CONSUMERS"} * CLUSTER)          // each consumer warpgroup of the cluster that read a buffer hands it back
#define CHUNK_N {params.chunk_n}                          // columns of C in a chunk stored by TMA: 128 bytes of a row
#define C_CHUNK_BYTES (64 * ROW_BYTES)
#define STAGED_C_BYTES ({params.staged_rows_of_c} * ROW_BYTES)          // each consumer's two chunks of C, by TMA
#define TEAMS CONSUMERS                           // stream-K: each consumer sums its parts of C alone
#define TEAM_THREADS {WARPGROUP}
#define TEAM_SYNC(team) asm volatile("bar.sync %0, {WARPGROUP};\\n" :: "r"(1 + (team)) : "memory")

{HELPERS}
{SHARED_K_HELPERS if params.shares_k else ""}
{OUT_TYPES[params.out]}
{STORE_HELPERS}
// A shared-memory matrix descriptor of a tile in the 128-byte swizzle: start address, the leading byte
// offset (an MN-major tile's from one box of 128 bytes of M or N to the next), the stride from one
// group of 8 rows to the next (1024 bytes), all in 16-byte units, and the layout (1: 128-byte swizzle).
__device__ __forceinline__ unsigned long long descriptor(const void* tile, unsigned leading) {{
    return (unsigned long long)((shared_address(tile) & 0x3FFFF) >> 4)
         | (unsigned long long)(leading >> 4) << 16
         | (unsigned long long)(8 * ROW_BYTES >> 4) << 32
         | 1ull << 62;
}}

extern "C" __global__ void {cluster_attribute(params.cluster)}__launch_bounds__(THREADS, {params.per_multiprocessor}) {name}(
        const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
        const __grid_constant__ TensorMap map_c, out_t* __restrict__ c_layers, int M, int N, int K,
        {LAYERS_PARAMETERS}, float alpha, float beta{last_parameters}) {{{flag_check}
{pipeline(params.cluster, registers(params.consumers, "producer"), mn_major, shares_k=params.shares_k,
          ping_pong=params.ping_pong)}
    {registers(params.consumers, "consumer")}
    const int row0 = {"0" if params.ping_pong else "(warpgroup - 1) * 64"};              // this consumer's rows of the block
    const bool leader = threadIdx.x % {WARPGROUP} == 0;
    const int warp = (threadIdx.x % {WARPGROUP}) / 32, lane = threadIdx.x % 32;
    float acc[{params.accumulators}];{sums_declared}{reads}
    {blocks_of_c}        out_t* const C = c_layers + (size_t)layer * M * N;
        #pragma unroll
        for (int i = 0; i < {params.accumulators}; ++i) {zeroed}
        for (int t = 0; t < k_count; ++t) {{
            const int it = iteration + t, s = it % STAGES;
            barrier_wait(&full[s], (it / STAGES) & 1);{fragments}
            asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
{starts}
            #pragma unroll
            for (int step = 0; step < STEPS; ++step) {{   // 32 bytes of K each: 2 in 16-byte units
                {_products(params, mn_major)}
            }}
            asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
{released}
{gathered_sums}
        // the first of this thread's rows of C, here and not in the register stores alone: there, ptxas
        // scheduled 3xTF32's kernel far slower
        const long row = m0 + row0 + warp * 16 + lane / 4;
{stores}    }}
    if (leader) asm volatile("cp.async.bulk.wait_group 0;\\n" ::: "memory");   // C stored
    {cluster_end(params.cluster)}
}}
"""
    return Rendered(source, name, params, mn_major, c_transposed)



#: Threads of a block of ``split``'s kernel.
SPLIT_THREADS = 256


def split() -> tuple[str, str]:
    """The source and name of the kernel that splits float32 values into 3xtf32's parts: ``out[i]`` the
    tf32 nearest ``x[i]`` (toward zero where the nearest would be past float32's largest, which would make
    a finite product infinite) and ``out[plane + i]`` the rest, for ``i < count`` (``SPLIT_THREADS`` a
    block). The rest is exact in float32; the multiplication rounds it to tf32 in turn. Some values cannot
    be split: an infinite one (its rest, inf - inf, would make products NaN where float32's are
    infinite), and one below 2^-115 but zero, whose rest lies below float32's normal range, where tf32
    keeps fewer of its bits than float32 does. Such a value (or NaN) sets ``*unsplit``, and the product
    is left to ``codelets.float32_product``."""
    name = "split_3xtf32"
    source = f"""// autogemm wgmma family: float32 values split into 3xtf32's big and small parts
#define TF32_BITS 0xFFFFE000u                    // sign, exponent and the 10 mantissa bits tf32 keeps
#define SMALLEST 0x1p-115f                         // below it, a value's rest is below float32's normal range
extern "C" __global__ void __launch_bounds__({SPLIT_THREADS}) {name}(
        const float* __restrict__ x, float* __restrict__ out, long long count, long long plane,
        unsigned* __restrict__ unsplit) {{
    const long long i = (long long)blockIdx.x * {SPLIT_THREADS} + threadIdx.x;
    if (i >= count) return;
    const float value = x[i];
    unsigned big;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(big) : "f"(value));
    if (!isfinite(value) || (fabsf(value) < SMALLEST && value != 0.0f))
        *unsplit = 1u;
    else if (isinf(__uint_as_float(big)))             // rounded past float32's largest: toward zero instead
        big = __float_as_uint(value) & TF32_BITS;
    out[i] = __uint_as_float(big);
    out[plane + i] = value - __uint_as_float(big);
}}
"""
    return source, name
