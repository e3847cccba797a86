"""``render``: the CUDA C++ source of a ``WgmmaParams`` and its launch geometry.

Blocks are persistent (one per multiprocessor), each computing blocks of C in turn, taken in groups of
rows of blocks for L2 reuse. A block is warp-specialized. Its first warpgroup is the producer: one thread issues TMA copies
(``cp.async.bulk.tensor``) of each tile of A and B into a free stage of shared memory, each completing
on that stage's "full" mbarrier with the bytes it brought. The other warpgroups are consumers: each
waits for a stage to be full, multiplies its 64 rows of A by the tile of B with wgmma (asynchronous,
one group in flight), and once the group before has finished reading its stage, arrives on that stage's
"empty" mbarrier, which the producer waits for before loading it again. The producer runs on into the
next block of C while the consumers store the last.

TMA writes the tiles in the 128-byte swizzle (rows of 128 bytes of K, the 16-byte chunks of each row
permuted by the row's index within 8), the layout wgmma reads without bank conflicts; a shared-memory
matrix descriptor names it (layout 1), with 1024 bytes from one group of 8 rows to the next. A step of K
within the 128 bytes moves the descriptor's start address. The accumulators follow the instruction's
layout: warp w of a consumer holds rows 16w..16w+15 of its 64, each thread two rows 8 apart and, in
every 8 columns, two neighbours."""

from __future__ import annotations

from dataclasses import dataclass

from .params import CONSUMER_REGISTERS, PRODUCER_REGISTERS, ROW_BYTES, WARPGROUP, WgmmaParams

#: CUDA's names of the operands' element types in a tensor map (``runtime.cuda.tensor_map``).
TENSOR_TYPES = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "3xtf32": "float32"}
#: The products of 3xtf32's parts (plane 0 big, 1 small), the small ones first; one plane's single one.
PRODUCTS = {1: ((0, 0),), 2: ((1, 0), (0, 1), (0, 0))}


@dataclass(frozen=True)
class Rendered:
    """A kernel's source, its entry point, and how to launch it over an M x N x K problem: its arguments
    are the tensor maps of A and B (``tensor_boxes`` give their boxes, rows x elements of K; each of
    ``params.planes`` x M, or N, rows: 3xtf32's parts from ``split``, one above the other), C, M, N
    and K."""

    source: str
    name: str
    params: WgmmaParams

    def grid(self, m: int, n: int, multiprocessors: int) -> tuple[int]:
        """Persistent blocks: one per multiprocessor, or per block of C where there are fewer."""
        blocks = -(-m // self.params.block_m) * -(-n // self.params.block_n)
        return (min(multiprocessors, blocks),)

    @property
    def block(self) -> tuple[int]:
        return (self.params.threads,)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory to launch it with."""
        return self.params.shared_bytes

    @property
    def tensor_type(self) -> str:
        """The element type of A's and B's tensor maps."""
        return TENSOR_TYPES[self.params.operand]

    @property
    def tensor_boxes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The tiles TMA copies of A and of B: (rows, elements of K)."""
        p = self.params
        return (p.block_m, p.block_k), (p.block_n, p.block_k)


def _instruction(params: WgmmaParams, a: str, b: str) -> str:
    """The inline PTX of one wgmma on the accumulators ``acc`` and the descriptors named ``a`` and ``b``
    (both operands K-major: 16-bit types take the transpose flags, 0; tf32 has none)."""
    count = params.accumulators
    registers = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"+f"(acc[{i}])' for i in range(count))
    kind = f"m64n{params.block_n}k{params.instruction_k}.f32.{params.instruction_type}.{params.instruction_type}"
    flags = "1, 1, 1" if params.instruction_type == "tf32" else "1, 1, 1, 0, 0"
    return (f'asm volatile("wgmma.mma_async.sync.aligned.{kind} {{{registers}}}, %{count}, %{count + 1}, {flags};\\n"\n'
            f'                     : {outputs}\n'
            f'                     : "l"({a} + 2 * step), "l"({b} + 2 * step) : "memory");')


def _products(params: WgmmaParams) -> str:
    """The wgmma of one step of K: one, or 3xtf32's three (each term's parts, the small ones first)."""
    return "\n                ".join(_instruction(params, f"a_start{x}", f"b_start{y}") for x, y in PRODUCTS[params.planes])


#: The end of a consumer's tile of K, one group of wgmma in flight: the stage of the tile before is read,
#: and handed back; the last tile's after the loop.
PIPELINED = """            asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");   // the tile before is read
            if (t > 0 && leader) barrier_arrive(&empty[(it - 1) % STAGES]);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
        if (leader) barrier_arrive(&empty[(iteration + k_tiles - 1) % STAGES]);"""
#: The same for 3xtf32: the tensor cores' sums of one tile of K are added to ``sums`` by the CUDA cores
#: in float32 (rounded to nearest), as the tensor cores' own long sums lose more than float32's rounding
#: (on the H100 f16 products summed over 4096 erred 7e-6, cuBLAS's SGEMM 5e-7).
PROMOTED = """            asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");   // this tile's products are in
            if (leader) barrier_arrive(&empty[s]);
            #pragma unroll
            for (int i = 0; i < COUNT; ++i) { sums[i] += acc[i]; acc[i] = 0.0f; }
        }"""


def _registers(params: WgmmaParams, kind: str) -> str:
    """The ``setmaxnreg`` of a producer or a consumer where a block has two consumers (with one, every
    thread has registers enough)."""
    if params.consumers == 1:
        return ""
    count, way = (PRODUCER_REGISTERS, "dec") if kind == "producer" else (CONSUMER_REGISTERS, "inc")
    return f'asm volatile("setmaxnreg.{way}.sync.aligned.u32 {count};\\n" ::: "memory");'


def render(params: WgmmaParams) -> Rendered:
    """The kernel of ``params`` (``ConfigError``-free: check ``malformed`` first)."""
    name = f"wgmma_nt_{params.operand}_m{params.block_m}_n{params.block_n}_s{params.stages}_g{params.group}"
    steps = params.block_k // params.instruction_k
    promoted = params.planes == 2
    count = params.accumulators
    sums_declared = f"\n    float sums[{count}];                              // float32 sums of the tiles' products" if promoted else ""
    zeroed = "{ sums[i] = 0.0f; acc[i] = 0.0f; }" if promoted else "acc[i] = 0.0f;"
    released = (PROMOTED if promoted else PIPELINED).replace("COUNT", str(count))
    result = "sums" if promoted else "acc"
    starts = "\n".join(
        f"            const unsigned long long a_start{p} = descriptor(a_tiles + (s * PLANES + {p}) * A_TILE_BYTES"
        f" + row0 * ROW_BYTES);\n"
        f"            const unsigned long long b_start{p} = descriptor(b_tiles + (s * PLANES + {p}) * B_TILE_BYTES);"
        for p in range(params.planes))
    source = f"""// autogemm wgmma family: C = A B^T on sm_90a, {params.describe()}
// A: PLANES M x K, B: PLANES N x K (both K-contiguous, read through tensor maps), C: M x N float32,
// all row-major.
#define BLOCK_M {params.block_m}
#define BLOCK_N {params.block_n}
#define BLOCK_K {params.block_k}                          // 128 bytes of K: one swizzled row
#define STAGES {params.stages}
#define CONSUMERS {params.consumers}
#define PLANES {params.planes}                            // tiles of each operand: 3xtf32's big and small parts
#define GROUP {params.group}                             // rows of blocks of C taken together
#define THREADS {params.threads}
#define ROW_BYTES {ROW_BYTES}
#define A_TILE_BYTES (BLOCK_M * ROW_BYTES)
#define B_TILE_BYTES (BLOCK_N * ROW_BYTES)

struct __align__(64) TensorMap {{ unsigned long long opaque[16]; }};   // CUtensorMap, made by the host

__device__ __forceinline__ unsigned shared_address(const void* p) {{
    return (unsigned)__cvta_generic_to_shared(p);
}}

__device__ __forceinline__ void barrier_init(unsigned long long* barrier, unsigned arrivals) {{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"(shared_address(barrier)), "r"(arrivals) : "memory");
}}

// One arrival that also says how many bytes copies will complete on the barrier in this phase.
__device__ __forceinline__ void barrier_expect(unsigned long long* barrier, unsigned bytes) {{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n"
                 :: "r"(shared_address(barrier)), "r"(bytes) : "memory");
}}

__device__ __forceinline__ void barrier_arrive(unsigned long long* barrier) {{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"(shared_address(barrier)) : "memory");
}}

// Wait until the barrier's phase of this parity has completed.
__device__ __forceinline__ void barrier_wait(unsigned long long* barrier, unsigned parity) {{
    asm volatile("{{\\n"
                 ".reg .pred done;\\n"
                 "waiting:\\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\\n"
                 "@!done bra waiting;\\n"
                 "}}\\n" :: "r"(shared_address(barrier)), "r"(parity) : "memory");
}}

// Copy the box of the tensor map at (inner, outer) into shared memory; it completes on the barrier.
__device__ __forceinline__ void tile_load(void* to, const TensorMap* map, int inner, int outer,
                                          unsigned long long* barrier) {{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {{%2, %3}}], [%4];\\n"
                 :: "r"(shared_address(to)), "l"((unsigned long long)map), "r"(inner), "r"(outer),
                    "r"(shared_address(barrier)) : "memory");
}}

// A shared-memory matrix descriptor of a tile in the 128-byte swizzle: start address, stride from one
// group of 8 rows to the next (1024 bytes), both in 16-byte units, and the layout (1: 128-byte swizzle).
__device__ __forceinline__ unsigned long long descriptor(const void* tile) {{
    return (unsigned long long)((shared_address(tile) & 0x3FFFF) >> 4)
         | 1ull << 16
         | (unsigned long long)(8 * ROW_BYTES >> 4) << 32
         | 1ull << 62;
}}

// The first row and column of C of block number ``tile``: GROUP rows of blocks at a time, down the rows
// of the group first, so that the blocks working at once share their tiles of B in L2.
__device__ __forceinline__ void place(int tile, int tiles_m, int tiles_n, int* m0, int* n0) {{
    const int per_group = GROUP * tiles_n, first = tile / per_group * GROUP;
    const int rows = min(GROUP, tiles_m - first), within = tile % per_group;
    *m0 = (first + within % rows) * BLOCK_M;
    *n0 = within / rows * BLOCK_N;
}}

extern "C" __global__ void __launch_bounds__(THREADS, 1) {name}(
        const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
        float* __restrict__ C, int M, int N, int K) {{
    extern __shared__ unsigned char shared_bytes[];
    unsigned char* a_tiles = shared_bytes + ((1024 - (shared_address(shared_bytes) & 1023)) & 1023);
    unsigned char* b_tiles = a_tiles + STAGES * PLANES * A_TILE_BYTES;
    unsigned long long* full = reinterpret_cast<unsigned long long*>(b_tiles + STAGES * PLANES * B_TILE_BYTES);
    unsigned long long* empty = full + STAGES;
    const int warpgroup = threadIdx.x / {WARPGROUP};
    // edges: TMA fills what lies past K (and past the last rows of a plane) with zeros or the next
    // plane's rows, which only reach elements of C past M and N, never stored
    const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M, tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
    const int k_tiles = (K + BLOCK_K - 1) / BLOCK_K;
    if (threadIdx.x == 0) {{
        for (int s = 0; s < STAGES; ++s) {{
            barrier_init(&full[s], 1);                  // the producer's arrival, and the copies' bytes
            barrier_init(&empty[s], CONSUMERS);         // one arrival by each consumer
        }}
        asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");
    }}
    __syncthreads();
    // Every block takes blocks of C number blockIdx.x, + gridDim.x, ...; ``iteration`` counts the tiles of
    // K it went through before, which give each tile's stage and the parity of that stage's barriers.
    if (warpgroup == 0) {{                               // the producer
        {_registers(params, "producer")}
        if (threadIdx.x == 0) {{
            int iteration = 0;
            for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x, iteration += k_tiles) {{
                int m0, n0;
                place(tile, tiles_m, tiles_n, &m0, &n0);
                for (int t = 0; t < k_tiles; ++t) {{
                    const int it = iteration + t, s = it % STAGES;
                    if (it >= STAGES) barrier_wait(&empty[s], (it / STAGES - 1) & 1);
                    barrier_expect(&full[s], PLANES * (A_TILE_BYTES + B_TILE_BYTES));
                    for (int p = 0; p < PLANES; ++p) {{           // plane p: rows p M + m0 of A, p N + n0 of B
                        tile_load(a_tiles + (s * PLANES + p) * A_TILE_BYTES, &map_a, t * BLOCK_K, p * M + m0, &full[s]);
                        tile_load(b_tiles + (s * PLANES + p) * B_TILE_BYTES, &map_b, t * BLOCK_K, p * N + n0, &full[s]);
                    }}
                }}
            }}
        }}
        return;
    }}
    {_registers(params, "consumer")}
    const int row0 = (warpgroup - 1) * 64;              // this consumer's rows of the block
    const bool leader = threadIdx.x % {WARPGROUP} == 0;
    const int warp = (threadIdx.x % {WARPGROUP}) / 32, lane = threadIdx.x % 32;
    float acc[{params.accumulators}];{sums_declared}
    int iteration = 0;
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x, iteration += k_tiles) {{
        int m0, n0;
        place(tile, tiles_m, tiles_n, &m0, &n0);
        #pragma unroll
        for (int i = 0; i < {params.accumulators}; ++i) {zeroed}
        for (int t = 0; t < k_tiles; ++t) {{
            const int it = iteration + t, s = it % STAGES;
            barrier_wait(&full[s], (it / STAGES) & 1);
            asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
{starts}
            #pragma unroll
            for (int step = 0; step < {steps}; ++step) {{   // 32 bytes of K each: 2 in 16-byte units
                {_products(params)}
            }}
            asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
{released}
        const long row = m0 + row0 + warp * 16 + lane / 4;
        #pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j) {{
            const int col = n0 + j * 8 + 2 * (lane % 4);
            #pragma unroll
            for (int half = 0; half < 2; ++half) {{          // rows row and row + 8
                const long r = row + 8 * half;
                if (r >= M) continue;
                float* to = &C[r * N + col];
                if (N % 2 == 0 && col + 1 < N) {{
                    *reinterpret_cast<float2*>(to) = make_float2({result}[4 * j + 2 * half], {result}[4 * j + 2 * half + 1]);
                }} else {{
                    if (col < N) to[0] = {result}[4 * j + 2 * half];
                    if (col + 1 < N) to[1] = {result}[4 * j + 2 * half + 1];
                }}
            }}
        }}
    }}
}}
"""
    return Rendered(source, name, params)



#: Threads of a block of ``split``'s kernel.
SPLIT_THREADS = 256


def split() -> tuple[str, str]:
    """The source and name of the kernel that splits float32 values into 3xtf32's parts: ``out[i]`` the
    tf32 nearest ``x[i]`` and ``out[plane + i]`` the rest, for ``i < count`` (``SPLIT_THREADS`` a block).
    The rest is exact in float32; the multiplication rounds it to tf32 in turn."""
    name = "split_3xtf32"
    source = f"""// autogemm wgmma family: float32 values split into 3xtf32's big and small parts
extern "C" __global__ void __launch_bounds__({SPLIT_THREADS}) {name}(
        const float* __restrict__ x, float* __restrict__ out, long long count, long long plane) {{
    const long long i = (long long)blockIdx.x * {SPLIT_THREADS} + threadIdx.x;
    if (i >= count) return;
    unsigned big;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(big) : "f"(x[i]));
    out[i] = __uint_as_float(big);
    out[plane + i] = x[i] - __uint_as_float(big);
}}
"""
    return source, name
