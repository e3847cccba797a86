"""``render``: the CUDA C++ source of a ``WgmmaParams`` and its launch geometry.

Both tiles are staged in wgmma's no-swizzle ("interleaved") layout: 8 x 16-byte core matrices, each 8
rows of 8 elements of K stored together, the core matrices of one row group side by side along K. A
shared-memory matrix descriptor then tells the instruction where its slice of K (32 bytes) starts (its first core
matrix), how far the next core matrix along K lies (the leading byte offset, 128) and how far the next
group of 8 rows (the stride byte offset, a row group's bytes). ``stages`` tiles are in flight: cp.async
loads the next ones while wgmma multiplies the current one (dynamic shared memory, ``shared_bytes``). The accumulators follow the instruction's
layout: warp w of the warpgroup holds rows 16w..16w+15, each thread two rows 8 apart and, in every 8
columns, two neighbours."""

from __future__ import annotations

from dataclasses import dataclass

from .params import BLOCK_M, OPERANDS, WARPGROUP, WgmmaParams

#: Bytes of a core matrix: 8 rows of 16 bytes.
CORE_BYTES = 128


@dataclass(frozen=True)
class Rendered:
    """A kernel's source, its entry point, and how to launch it over an M x N x K problem."""

    source: str
    name: str
    params: WgmmaParams

    def grid(self, m: int, n: int) -> tuple[int, int]:
        return n // self.params.block_n, m // BLOCK_M

    @property
    def block(self) -> tuple[int]:
        return (WARPGROUP,)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory to launch it with."""
        return self.params.shared_bytes


def _instruction(params: WgmmaParams) -> str:
    """The inline PTX of one wgmma on the accumulators ``acc`` and descriptors ``da`` and ``db`` (both
    operands K-major: 16-bit types take the transpose flags, 0; tf32 has none)."""
    count = params.accumulators
    registers = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"+f"(acc[{i}])' for i in range(count))
    kind = f"m64n{params.block_n}k{params.instruction_k}.f32.{params.operand}.{params.operand}"
    flags = "1, 1, 1" if params.operand == "tf32" else "1, 1, 1, 0, 0"
    return (f'asm volatile("wgmma.mma_async.sync.aligned.{kind} {{{registers}}}, %{count}, %{count + 1}, {flags};\\n"\n'
            f'             : {outputs}\n'
            f'             : "l"(da), "l"(db) : "memory");')


def render(params: WgmmaParams) -> Rendered:
    """The kernel of ``params`` (``ConfigError``-free: check ``malformed`` first)."""
    name = f"wgmma_nt_{params.operand}_n{params.block_n}_k{params.block_k}_s{params.stages}"
    element = OPERANDS[params.operand]
    per_chunk = 16 // element                     # elements in 16 bytes: one core-matrix row
    source = f"""// autogemm wgmma family: C = A B^T on sm_90a, {params.describe()}
// A: M x K, B: N x K (both K-contiguous), C: M x N float32, all row-major.
#define BLOCK_M {BLOCK_M}
#define BLOCK_N {params.block_n}
#define BLOCK_K {params.block_k}
#define STAGES {params.stages}
#define THREADS {WARPGROUP}
#define CHUNK {per_chunk}                           // elements of one 16-byte core-matrix row
#define ROW_GROUP_BYTES (BLOCK_K / CHUNK * {CORE_BYTES})   // the core matrices of 8 rows, along K
typedef {"unsigned int" if element == 4 else "unsigned short"} element_t;   // the kernel moves {params.operand} values, wgmma reads them

// A shared-memory matrix descriptor: start address, leading (next core matrix along K) and stride (next
// 8 rows) byte offsets, each in 16-byte units; no swizzle.
__device__ __forceinline__ unsigned long long descriptor(const void* tile, unsigned leading, unsigned stride) {{
    unsigned address = (unsigned)__cvta_generic_to_shared(tile);
    return (unsigned long long)((address & 0x3FFFF) >> 4)
         | (unsigned long long)((leading & 0x3FFFF) >> 4) << 16
         | (unsigned long long)((stride & 0x3FFFF) >> 4) << 32;
}}

// Start copying rows [row0, row0 + ROWS) of a K-contiguous matrix, K columns [k0, k0 + BLOCK_K), into the
// tile in core-matrix order: 16 bytes per thread and step, asynchronously (cp.async, waited for by group).
template <int ROWS>
__device__ __forceinline__ void stage(element_t* tile, const element_t* __restrict__ matrix, long ld, int row0, int k0) {{
    for (int v = threadIdx.x; v < ROWS * (BLOCK_K / CHUNK); v += THREADS) {{
        int row = v / (BLOCK_K / CHUNK), chunk = v % (BLOCK_K / CHUNK);
        const element_t* from = matrix + (row0 + row) * ld + k0 + chunk * CHUNK;
        int core = (row / 8) * (BLOCK_K / CHUNK) + chunk;
        unsigned to = (unsigned)__cvta_generic_to_shared(tile + (core * 8 + row % 8) * CHUNK);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"(to), "l"(from) : "memory");
    }}
}}

extern "C" __global__ void __launch_bounds__(THREADS) {name}(
        const element_t* __restrict__ A, const element_t* __restrict__ B, float* __restrict__ C,
        int M, int N, int K) {{
    extern __shared__ __align__(128) unsigned char shared[];          // STAGES tiles of A, then of B
    element_t* a_tiles = reinterpret_cast<element_t*>(shared);
    element_t* b_tiles = a_tiles + STAGES * BLOCK_M * BLOCK_K;
    float acc[{params.accumulators}];
    #pragma unroll
    for (int i = 0; i < {params.accumulators}; ++i) acc[i] = 0.0f;
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N, tiles = K / BLOCK_K;
    for (int s = 0; s < STAGES - 1; ++s) {{                             // the first tiles in flight
        if (s < tiles) {{
            stage<BLOCK_M>(a_tiles + s * BLOCK_M * BLOCK_K, A, K, m0, s * BLOCK_K);
            stage<BLOCK_N>(b_tiles + s * BLOCK_N * BLOCK_K, B, K, n0, s * BLOCK_K);
        }}
        asm volatile("cp.async.commit_group;\\n" ::: "memory");
    }}
    for (int t = 0; t < tiles; ++t) {{
        const int ahead = t + STAGES - 1;
        if (ahead < tiles) {{                                           // into the buffer freed last
            stage<BLOCK_M>(a_tiles + (ahead % STAGES) * BLOCK_M * BLOCK_K, A, K, m0, ahead * BLOCK_K);
            stage<BLOCK_N>(b_tiles + (ahead % STAGES) * BLOCK_N * BLOCK_K, B, K, n0, ahead * BLOCK_K);
        }}
        asm volatile("cp.async.commit_group;\\n" ::: "memory");          // (empty groups keep the count)
        asm volatile("cp.async.wait_group %0;\\n" :: "n"(STAGES - 1) : "memory");   // tile t is there
        __syncthreads();
        asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");   // the copies, seen by wgmma
        asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
        const element_t* a_tile = a_tiles + (t % STAGES) * BLOCK_M * BLOCK_K;
        const element_t* b_tile = b_tiles + (t % STAGES) * BLOCK_N * BLOCK_K;
        #pragma unroll
        for (int step = 0; step < BLOCK_K / {params.instruction_k}; ++step) {{   // 32 bytes of K: two core matrices
            unsigned long long da = descriptor(a_tile + step * 2 * 8 * CHUNK, {CORE_BYTES}, ROW_GROUP_BYTES);
            unsigned long long db = descriptor(b_tile + step * 2 * 8 * CHUNK, {CORE_BYTES}, ROW_GROUP_BYTES);
            {_instruction(params)}
        }}
        asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
        __syncthreads();                                               // its buffer is loaded again next
    }}
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long row = m0 + warp * 16 + lane / 4;
    #pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) {{
        const int col = n0 + j * 8 + 2 * (lane % 4);
        C[row * N + col] = acc[4 * j];
        C[row * N + col + 1] = acc[4 * j + 1];
        C[(row + 8) * N + col] = acc[4 * j + 2];
        C[(row + 8) * N + col + 1] = acc[4 * j + 3];
    }}
}}
"""
    return Rendered(source, name, params)
