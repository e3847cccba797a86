"""``GemmPlan``: RaijinCL's four-step low-level API, for programs that reuse buffers and operands.

1. ``GemmPlan(device, dtype, m, n, k, ...)`` chooses the configuration, builds the kernels and allocates
   the temporary buffers the problem needs, once.
2. ``copy_a`` / ``copy_b`` bring an operand into the form the kernel reads (packed, transposed, padded,
   converted, or read in place when it already is).
3. ``compute(c)`` enqueues the product on the operands last copied; it can be enqueued any number of
   times, so A times B, then A times another B, copies A once.
4. ``release()`` frees the temporaries (also on leaving a ``with`` block).

Nothing blocks: every step enqueues on the device's in-order queue and returns its events."""

from __future__ import annotations

import numpy as np

from ..blas import GemmProblem, LaunchPlan, Op
from ..blas.plans import gemm_plan
from ..codelets.registry import KernelParams
from ..dtypes import get_dtype, with_precision
from ..engine.operands import event_list, events_of, hand_events, scalar
from ..errors import ArgumentError, ShapeError
from ..runtime import Device, context_for
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.memory import reports_full_memory

Memory = ocl.DeviceArray | ocl.Buffer


class GemmPlan:
    """C = alpha op(A) op(B) + beta C for one problem on one device, in RaijinCL's four steps.

    ``dtype`` is a letter or numpy dtype as ``gemm`` takes (with ``precision`` for the reduced modes);
    A, B and C are row-major with leading dimensions ``lda``, ``ldb``, ``ldc`` (default: dense) in the
    stored shapes (A is k x m when ``trans_a`` is 'T' or 'C'). Operands are ``pyopencl.array.Array`` s of
    those shapes and strides, or ``pyopencl.Buffer`` s with an element offset. ``config`` and ``edge`` as
    for ``gemm``; by default the configuration comes from the device's profile. ``offset_a`` and
    ``offset_b`` are offsets like those the operands will have (the plan holds for any offset divisible by
    the same powers of two, up to 64): a kernel that reads an operand where it lies may read it in
    16-byte pieces, and ``copy_a`` refuses an offset the plan was not made for.
    """

    def __init__(self, device: Device | str | int | None, dtype: object, m: int, n: int, k: int,
                 trans_a: str = "N", trans_b: str = "N", *, lda: int | None = None, ldb: int | None = None,
                 ldc: int | None = None, precision: str | None = None, config: KernelParams | None = None,
                 edge: str = "auto", offset_a: int = 0, offset_b: int = 0) -> None:
        ctx = context_for(device)
        dt = with_precision(get_dtype(dtype), precision)
        dense = GemmProblem.dense(dt, m, n, k, Op.from_letter(trans_a, "trans_a"), Op.from_letter(trans_b, "trans_b"))
        problem = GemmProblem(dt, m, n, k, dense.op_a, dense.op_b, lda=dense.lda if lda is None else lda,
                              ldb=dense.ldb if ldb is None else ldb, ldc=dense.ldc if ldc is None else ldc,
                              offset_a=offset_a, offset_b=offset_b).aligned()
        self._plan = gemm_plan(ctx, problem, config, edge)
        self._plan.allocate()
        self._operands: dict[str, tuple] = {}
        self._held: dict[str, Memory] = {}

    @property
    def problem(self) -> GemmProblem:
        return self._plan.problem

    @property
    def launch_plan(self) -> LaunchPlan:
        """The ``LaunchPlan`` underneath: its configuration, launches and whole-product ``enqueue``."""
        return self._plan

    @property
    def queue(self) -> ocl.Queue:
        """The in-order queue every step is enqueued on (device arrays should be made on it)."""
        return self._plan.ctx.queue

    def describe(self) -> str:
        """The launches of the copies and of the product, for logs."""
        return self._plan.describe()

    @reports_full_memory
    def copy_a(self, a: Memory, offset: int = 0, wait_for: list[ocl.Event] | None = None) -> list[ocl.Event]:
        """Step 2 for A: pack it for the kernel (its events returned), or keep it to read in place (no
        events: ``a`` must then stay unchanged while products use it)."""
        return self._copy("A", a, offset, wait_for)

    @reports_full_memory
    def copy_b(self, b: Memory, offset: int = 0, wait_for: list[ocl.Event] | None = None) -> list[ocl.Event]:
        """Step 2 for B, as ``copy_a``."""
        return self._copy("B", b, offset, wait_for)

    @reports_full_memory
    def compute(self, c: Memory, alpha: complex | float = 1.0, beta: complex | float = 0.0, offset: int = 0,
                wait_for: list[ocl.Event] | None = None) -> list[ocl.Event]:
        """Step 3: C = alpha op(A) op(B) + beta C on the operands last copied; C a device array (its events
        gain the product's) or a buffer from element ``offset``. May be enqueued any number of times."""
        missing = [name for name in "AB" if name not in self._operands]
        if missing and not self._plan.nothing_to_multiply(alpha):
            raise ArgumentError(f"copy {' and '.join(missing)} before compute (copy_{missing[0].lower()})")
        dt = self.problem.dtype
        alpha, beta = scalar(alpha, "alpha", dt), scalar(beta, "beta", dt)
        buffer, offset = self._memory("C", c, offset)
        events = self._plan.enqueue_product(self._operands, buffer, offset, alpha, beta, self._events(c, wait_for))
        if isinstance(c, ocl.DeviceArray):
            hand_events(c, events[-1:], self.queue)
        return events

    def release(self) -> None:
        """Step 4: free the temporary buffers now (operands must be copied again before a new compute)."""
        self._plan.release()
        self._operands.clear()
        self._held.clear()

    def __enter__(self) -> GemmPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _copy(self, name: str, x: Memory, offset: int, wait_for: list[ocl.Event] | None) -> list[ocl.Event]:
        buffer, offset = self._memory(name, x, offset)
        events, operand = self._plan.enqueue_copy(name, buffer, offset, self._events(x, wait_for))
        self._operands[name] = operand
        self._held[name] = x            # read in place, or until the pack is done
        return events

    def _memory(self, name: str, x: object, offset: int) -> tuple[ocl.Buffer, int]:
        """(buffer, element offset) of operand ``name``: a device array of the stored shape, dtype and
        leading dimension, or a buffer large enough from ``offset``."""
        pr = self.problem
        rows, cols = pr.stored_shape(name)
        itemsize = (pr.dtype.output if name == "C" else pr.dtype).itemsize
        needed = pr.member_elements(name)
        if isinstance(x, ocl.DeviceArray):
            if x.context != self.queue.context:
                raise ArgumentError(f"{name.lower()} is a device array of another OpenCL context than the plan's")
            expected = (pr.dtype.output if name == "C" else pr.dtype).numpy
            if x.dtype != expected:
                raise ArgumentError(f"{name.lower()} is {x.dtype}; the plan's {name} is {expected}")
            if x.shape != (rows, cols) or (rows > 1 and x.strides != (pr.ld(name) * itemsize, itemsize)):
                raise ShapeError(f"{name.lower()} has shape {x.shape} and strides {x.strides}; the plan's {name} is "
                                 f"{rows}x{cols}, row-major with leading dimension {pr.ld(name)}")
            if x.base_data is None:
                raise ShapeError(f"{name.lower()} is empty; the plan's {name} is {rows}x{cols}")
            return x.base_data, x.offset // itemsize
        if not isinstance(x, ocl.Buffer):
            raise ArgumentError(f"{name.lower()} must be a pyopencl array or buffer, not {type(x).__name__}")
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
            raise ArgumentError(f"offset must be a non-negative integer, not {offset!r}")
        if (offset + needed) * itemsize > x.size:
            raise ShapeError(f"{name.lower()} holds {x.size} bytes; the plan's {name} needs "
                             f"{(offset + needed) * itemsize} "
                             f"from element {offset}")
        return x, int(offset)

    def _events(self, x: object, wait_for: object) -> list[ocl.Event] | None:
        """``wait_for``, checked, with the pending events of a device array on another queue (the
        plan's in-order queue orders its own)."""
        events = event_list(wait_for) + events_of([x], self.queue)
        return events or None
