"""Issue 5: the rate mma.sync itself reaches on the H100 from OpenCL, with no memory traffic: each warp
runs CHAINS independent accumulator chains of one shape for ITERATIONS steps on operands held in
registers. The ceiling every nvidia_mma kernel of that shape lies under. Prints a table and writes
$OUT/mma-peak.json. Run from the repository root with src/ on PYTHONPATH after `source .gpu/prelude.sh`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

import autogemm
from autogemm.codelets.nvidia_mma import OPERANDS, SHAPES
from autogemm.runtime import context_for
from autogemm.runtime.timing import median, time_enqueue

CHAINS, ITERATIONS, WARPS_PER_GROUP, GROUPS_PER_SM = 8, 4096, 4, 4


def kernel(operand: str, shape: str, chains: int = CHAINS) -> str:
    """A kernel of ``chains`` x ITERATIONS instructions per warp whose sum is stored (so none is dropped)."""
    facts, geometry = OPERANDS[operand], SHAPES[shape]
    real = "double" if operand == "f64" else "float"
    value = "uint" if facts.pack == 2 else real          # 16-bit operands: two to a register
    registers = geometry.k_per_lane // facts.pack
    a_count, b_count, c_count = geometry.row_halves * registers, registers, 2 * geometry.row_halves
    bits = "as_uint" if value == "float" else ""

    def fill(index: str) -> str:
        """A varied operand value (16-bit pairs near 1 in float16, 1/128 in bfloat16: never NaN)."""
        return f"0x3c003c00u + ({index})" if value == "uint" else f"seed * ({index})"
    c_list = ", ".join(f"%{i}" for i in range(c_count))
    a_list = ", ".join(f"%{c_count + i}" for i in range(a_count))
    b_list = ", ".join(f"%{c_count + a_count + i}" for i in range(b_count))
    outputs = ", ".join(f'"+{facts.accumulator_register}"(c[{i}])' for i in range(c_count))
    inputs = ", ".join(f'"{facts.register}"({bits}(a[{i}]))' for i in range(a_count)) + ", " + \
        ", ".join(f'"{facts.register}"({bits}(b[{i}]))' for i in range(b_count))
    return f"""
{"#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if real == "double" else ""}
inline void mma({real}* c, const {value}* a, const {value}* b) {{
    asm volatile("mma.sync.aligned.{shape}.row.col.{facts.ptx_types} {{{c_list}}}, {{{a_list}}}, {{{b_list}}}, {{{c_list}}};"
        : {outputs} : {inputs});
}}
__kernel void peak(__global {real}* out, const {real} seed) {{
    {value} a[{a_count}], b[{b_count}];
    {real} c[{chains}][{c_count}];
    for (int i = 0; i < {a_count}; ++i) a[i] = {fill("get_local_id(0) + i")};
    for (int i = 0; i < {b_count}; ++i) b[i] = {fill("get_local_id(0) - i")};
    for (int j = 0; j < {chains}; ++j) for (int i = 0; i < {c_count}; ++i) c[j][i] = 0;
    for (int it = 0; it < {ITERATIONS}; ++it) {{
        #pragma unroll
        for (int j = 0; j < {chains}; ++j) mma(c[j], a, b);
    }}
    {real} sum = 0;
    for (int j = 0; j < {chains}; ++j) for (int i = 0; i < {c_count}; ++i) sum += c[j][i];
    out[get_global_id(0)] = sum;
}}
"""


def main() -> None:
    gpu = autogemm.find_device(os.environ.get("TUNE_DEVICE", "gpu"))
    ctx = context_for(gpu)
    groups = gpu.compute_units * GROUPS_PER_SM
    local = 32 * WARPS_PER_GROUP
    rows = []
    print("| operand | shape | TFLOP/s (no memory traffic) |")
    print("| --- | --- | --- |")
    for operand, facts in OPERANDS.items():
        real = np.float64 if operand == "f64" else np.float32
        out = cl.Buffer(ctx.context, cl.mem_flags.WRITE_ONLY, groups * local * 8)
        for shape in facts.shapes:
            geometry = SHAPES[shape]
            program = cl.Program(ctx.context, kernel(operand, shape)).build(options=["-cl-nv-maxrregcount=255"])
            knl = program.peak
            knl.set_args(out, real(1e-3))
            times = time_enqueue(lambda: [cl.enqueue_nd_range_kernel(ctx.queue, knl, (groups * local,), (local,))],
                                 warmup=1, runs=5)
            flops = 2 * geometry.m * geometry.n * geometry.k * CHAINS * ITERATIONS * groups * WARPS_PER_GROUP
            rate = flops / median(times) / 1e12
            rows.append({"operand": operand, "shape": shape, "tflops": rate})
            print(f"| {operand} | {shape} | {rate:.1f} |", flush=True)
        out.release()
    Path(os.environ.get("OUT", "."), "mma-peak.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
