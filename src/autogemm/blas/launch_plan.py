"""``LaunchPlan``: the launches that compute one ``GemmProblem`` with one ``KernelParams`` configuration,
as its ``Routing`` decides them (packs, the GEMM kernel, a merge), with the kernels built and the
temporary buffers held.
A strided batch is one launch of each kernel, one layer of work-groups per product (dimension 2);
its operands are read through buffers, so configurations with images are refused for it.
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np

from ..codelets import helpers
from ..codelets.kernel import (
    GEMM_SIGNATURE,
    SLICED_SIGNATURE,
    STREAM_K_SIGNATURE,
    SUMMED_SIGNATURE,
    KernelSource,
    round_up,
)
from ..codelets.registry import KernelParams, check, family_of, render
from ..codelets.stream_k import STREAM_K
from ..codelets.writer import fence_options
from ..errors import ArgumentError, ConfigError, ShapeError
from ..profiles import Thresholds, thresholds_for
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.arguments import KernelArguments
from ..runtime.opencl.context import DeviceContext
from .coverage import MAX_SLICES, planned_slices
from .problem import INT32_MAX, GemmProblem
from .routing import OperandRoute, Routing

EDGES = ("auto", "pad", "guard")
TILE_GROUP = (helpers.TILE, helpers.TILE, 1)    # the helper kernels' work-group


def check_edge(edge: object) -> None:
    """``ArgumentError`` unless ``edge`` is one of ``EDGES``."""
    if edge not in EDGES:
        raise ArgumentError(f"edge must be one of {EDGES}, not {edge!r}")


class LaunchPlan(Routing):
    """Launch sequence for one problem on one device: packs, the GEMM kernel, and a merge if needed.
    ``params`` is its configuration (``blas.plans`` makes a plan from the device's selection where a
    caller names none), ``source`` where it came from, ``split_k`` how K is shared (None: as
    ``coverage.auto_slices`` says). Kernels are built here; temporary buffers are allocated at the first
    ``enqueue`` and reused by later ones; ``release`` frees them."""

    def __init__(self, ctx: DeviceContext, problem: GemmProblem, params: KernelParams, edge: str = "auto",
                 split_k: int | None = None, source: str = "given") -> None:
        problem.validate()
        check_edge(edge)
        self.ctx = ctx
        self.problem = problem
        self.dtype = problem.dtype
        self.params, self.params_source = params, source
        reason = check(self.params, ctx.device, problem.dtype)
        if reason:
            raise ConfigError(f"configuration rejected for {ctx.device.name.strip()}: {reason}")
        if problem.batch > 1 and (self.params.image_a or self.params.image_b):
            raise ConfigError("a batch reads its operands from buffers; this configuration uses images")
        # a product the device takes in place (A and B as they lie) is guarded too: one launch in all
        limits = thresholds_for(ctx.device)
        super().__init__(problem, self.params, self._choose_split(split_k, limits), ctx.device.compute_units,
                         edge, limits)
        self._check_temporaries()
        self._temps: list[ocl.Buffer | ocl.Image] = []
        self._allocated = False       # True from ``allocate`` to ``release`` (a plan may need no temporaries)
        self._epilogues: dict[str, ocl.Kernel] = {}
        self._arguments = KernelArguments(problem.dtype.scalar_numpy.type)
        #: the last ``enqueue``'s memory, offsets and scalars, the arguments' count of changes after it,
        #: and its launches: a call that repeats them while no argument changed enqueues them again as
        #: they are (a loop of products on the same arrays, the call path's commonest case)
        self._last_call: tuple | None = None
        self._lock = threading.Lock()
        #: the kernel copies A and B 16 bytes at a time, wherever they lie (rows aligned, and a family that can)
        self.copies_aligned = self.aligned and family_of(self.params).aligned_rows
        self.kernel_source: KernelSource = render(self.params, self.dtype, guarded=self.guarded, stream=self.stream,
                                                  summed=self.summed, sliced=self.sliced, aligned=self.copies_aligned,
                                                  stored_c=self.c_stored)
        if self.problem.m and self.problem.n and self.problem.k and self.problem.batch:
            self._build()

    # ----- decisions ----------------------------------------------------------------------------
    def _choose_split(self, requested: int | None, limits: Thresholds) -> int:
        """How K is shared: as asked (K slices computed in parallel, or ``STREAM_K``), else
        ``planned_slices`` for the device's ``limits``."""
        p, pr = self.params, self.problem
        if requested is not None:
            if (isinstance(requested, bool) or not isinstance(requested, int)
                    or not (1 <= requested <= MAX_SLICES or requested == STREAM_K)):
                raise ArgumentError(f"split_k must be an integer from 1 to {MAX_SLICES}, or {STREAM_K} for "
                                    f"stream-K, not {requested!r}")
            schedule = "stream-K" if requested == STREAM_K else "split K"
            if requested != 1 and (p.image_a or p.image_b):
                raise ConfigError(f"{schedule} reads its operands from buffers; this configuration uses images")
            if requested != 1 and pr.batch > 1:
                raise ArgumentError(f"{schedule} is for single products: a batch fills the device by itself")
            return requested
        return planned_slices(p, pr, self.ctx.device, limits)

    # ----- resources ----------------------------------------------------------------------------
    def _buffer(self, size: int) -> ocl.Buffer:
        buf = ocl.device_buffer(self.ctx.context, size)
        self._temps.append(buf)
        return buf

    def _image_shape(self, st: OperandRoute) -> tuple[int, int]:
        """(width, height) in texels of operand ``st`` as an image; ConfigError if the device's limits
        are too small for it."""
        width, height = self.image_texels(st)
        max_w, max_h = self.ctx.device.image2d_max
        if width > max_w or height > max_h:
            raise ConfigError(f"{st.name} as an image needs {width}x{height} texels; the device allows {max_w}x{max_h}")
        return width, height

    def _image(self, st: OperandRoute) -> ocl.Image:
        img = ocl.read_only_image(self.ctx.context, self._image_shape(st), bits=self.dtype.needs_fp64)
        self._temps.append(img)
        return img

    def _build(self) -> None:
        """Compile (or fetch from the cache) every kernel the plan launches; check image limits."""
        src = self.kernel_source
        fence = fence_options(self.ctx.device) if self.summed else ()
        self.gemm_kernel = self.ctx.kernel(src.source, src.name, src.options + fence)
        self.pack_kernels: dict[str, ocl.Kernel] = {}
        for name, st in self.staging.items():
            if not st.packed:
                continue
            helper = helpers.pack(self.dtype, st.transpose, st.conjugate, st.convert)
            self.pack_kernels[name] = self.ctx.kernel(helper.source, helper.name)
            if st.image:
                self._image_shape(st)

    def allocate(self) -> None:
        """Create the temporary buffers and images (``enqueue`` does on first use, so that plans can be
        built ahead, on other threads, without holding device memory)."""
        if self._allocated:
            return
        sizes = self.temporary_bytes()
        self.pack_buffers: dict[str, ocl.Buffer] = {}
        self.images: dict[str, ocl.Image] = {}
        for name, st in self.staging.items():
            if st.packed:
                self.pack_buffers[name] = self._buffer(sizes[name])
                if st.image:
                    self.images[name] = self._image(st)
        if self.c_temp:
            self.c_buffer = self._buffer(sizes["C"])
        # the stream-K tiles' partial sums (none where no tile is shared), or the K slices' where the kernel
        # adds them up, with the count of slices arrived at each tile (zero between launches)
        self.partials = self._buffer(sizes["partials"]) if "partials" in sizes else None
        if "arrivals" in sizes:
            self.arrivals = ocl.buffer_of(self.ctx.context, np.zeros(sizes["arrivals"] // 4, np.int32))
            self._temps.append(self.arrivals)
        self._allocated = True

    @property
    def allocated(self) -> bool:
        """True while the plan holds its temporary buffers (from ``allocate`` to ``release``)."""
        return self._allocated

    def _check_temporaries(self) -> None:
        """``ShapeError`` where a temporary (an operand padded to the tiles) would span more reals than the
        kernels' 32-bit indices reach, though the operands themselves do not."""
        c_real = self.dtype.scalar_numpy.itemsize // self.dtype.reals_per_element
        real_bytes = {"A": self.kernel_dtype.real_bytes, "B": self.kernel_dtype.real_bytes, "C": c_real,
                      "partials": c_real, "arrivals": 4}
        for name, size in self.temporary_bytes().items():
            if size // real_bytes[name] > INT32_MAX:
                raise ShapeError(f"the padded copy of {name} would span {size // real_bytes[name]} reals, beyond "
                                 "this kernel's 32-bit indexing")

    def _layer_strides(self) -> tuple[int, ...]:
        """The gemm kernel's A, B and C strides between layers: between the K slices of a split product
        (for A and B a slice's depth along their K, for C one padded C of the temporary), or under
        stream-K one K step's, else between the products of a batch as the kernel reads them (packed or
        in place)."""
        pr = self.problem
        strides = {}
        for name in ("A", "B"):
            st = self.staging[name]
            if self.slices > 1 or self.stream:
                depth = self.slice_k if self.slices > 1 else self.params.tile_k
                k_contiguous = (self._letter(name) == "N") == (name == "A")
                strides[name] = depth if k_contiguous else depth * (st.dst_ld if st.packed else pr.ld(name))
            elif st.packed:
                strides[name] = st.dst_rows * st.dst_ld if self._packed_layers(name) > 1 else 0
            else:
                strides[name] = pr.stride(name)
        strides["C"] = self.padded_m * self.padded_n if self.c_temp else 0 if self.summed else pr.stride_c
        return tuple(strides[name] for name in "ABC")

    def _epilogue(self, name: str) -> ocl.Kernel:
        """The plan's own ``merge`` or ``scale`` kernel object (made once: creating one costs time)."""
        if name not in self._epilogues:
            src = helpers.epilogues(self.dtype.output)
            self._epilogues[name] = self.ctx.kernel(src.source, name)
        return self._epilogues[name]

    def release(self) -> None:
        """Free the temporary buffers and images now rather than at garbage collection (a later
        ``enqueue`` allocates them again)."""
        for mem in self._temps:
            mem.release()
        self._temps.clear()
        self._allocated = False
        self._arguments.clear()
        self._last_call = None

    # ----- launching ----------------------------------------------------------------------------
    def enqueue(self, a: ocl.Buffer, b: ocl.Buffer, c: ocl.Buffer, alpha: complex | float = 1.0,
                beta: complex | float = 0.0, wait_for: list[ocl.Event] | None = None,
                offsets: tuple[int, int, int] | None = None) -> list[ocl.Event]:
        """Enqueue C = alpha op(A) op(B) + beta C on the device's queue; returns the events, first to last
        (empty when m or n is 0: there is nothing to do). ``offsets`` are A's, B's and C's element offsets
        when they are not the problem's: of the same alignment class (``GemmProblem.aligned``: all the
        plan's choices depend on), within the buffers and int32 range (``GemmProblem.validate`` with them)."""
        pr = self.problem
        offset_a, offset_b, offset_c = offsets or (pr.offset_a, pr.offset_b, pr.offset_c)
        if self.nothing_to_multiply(alpha):
            return self.enqueue_product({}, c, offset_c, alpha, beta, wait_for)
        with self._lock:
            if not self._allocated:
                self.allocate()
            bound = (offset_a, offset_b, offset_c, alpha, beta)
            last = self._last_call
            if (last is not None and last[0] is a and last[1] is b and last[2] is c and last[3] == bound
                    and last[4] == self._arguments.changes):
                return self._launch(last[5], wait_for)
            # Every kernel's arguments are set first and the launches enqueued after, back to back:
            # setting arguments takes long enough that doing it between launches would leave the device
            # idle.
            launches: list[tuple] = []
            operands = {"A": self._stage_operand("A", a, offset_a, launches),
                        "B": self._stage_operand("B", b, offset_b, launches)}
            launches += self._product_launches(operands, c, offset_c, alpha, beta)
            self._last_call = (a, b, c, bound, self._arguments.changes, launches)
            return self._launch(launches, wait_for)

    def enqueue_copy(self, name: str, user: ocl.Buffer, offset: int | None = None,
                     wait_for: list[ocl.Event] | None = None) -> tuple[list[ocl.Event], tuple]:
        """Bring operand ``name`` ('A' or 'B', in ``user`` from element ``offset``) into the form the
        product reads: packed into the plan's own buffer (returning the pack's events), or read in place
        (no events: ``user`` must then hold it until the products are done). Returns the events and the
        operand for ``enqueue_product``. A later copy of the same operand replaces the earlier one."""
        if name not in self.staging:
            raise ArgumentError(f"name must be 'A' or 'B', not {name!r}")
        with self._lock:
            self.allocate()
            launches: list[tuple] = []
            operand = self._stage_operand(name, user, self.problem.offset(name) if offset is None else offset,
                                          launches)
            return self._launch(launches, wait_for), operand

    def enqueue_product(self, operands: dict[str, tuple], c: ocl.Buffer, offset_c: int | None = None,
                        alpha: complex | float = 1.0, beta: complex | float = 0.0,
                        wait_for: list[ocl.Event] | None = None) -> list[ocl.Event]:
        """The product and its merge on operands from ``enqueue_copy``: C = alpha op(A) op(B) + beta C."""
        pr = self.problem
        offset_c = pr.offset_c if offset_c is None else offset_c
        with self._lock:
            if self.nothing_to_multiply(alpha):
                if pr.m == 0 or pr.n == 0 or pr.batch == 0 or beta == 1:   # (BLAS's quick return: C as it is)
                    return []
                scale = self._epilogue("scale")
                self._arguments.set(scale, helpers.SCALE_SIGNATURE, pr.m, pr.n, c, offset_c, pr.ldc, beta, pr.stride_c)
                return self._launch([(scale, self._tiles_of_c(), TILE_GROUP)], wait_for)
            self.allocate()
            return self._launch(self._product_launches(operands, c, offset_c, alpha, beta), wait_for)

    def nothing_to_multiply(self, alpha: complex | float) -> bool:
        """True when no product is computed: C is empty, or scaled by beta alone (K or alpha 0)."""
        return self._no_product or alpha == 0

    @functools.cached_property
    def _no_product(self) -> bool:
        """Whether the problem has no product whatever alpha is (asked on every enqueue)."""
        pr = self.problem
        return pr.m == 0 or pr.n == 0 or pr.batch == 0 or pr.k == 0

    def _tiles_of_c(self) -> tuple[int, int, int]:
        """The NDRange of helper work-groups covering C (each C of a batch)."""
        pr = self.problem
        return round_up(pr.n, helpers.TILE), round_up(pr.m, helpers.TILE), pr.batch

    def _stage_operand(self, name: str, user: ocl.Buffer, offset: int, launches: list[tuple]) -> tuple:
        """Add the launches that bring operand ``name`` to the kernel (none when it is read in place) and
        return its kernel arguments: memory, offset, leading dimension."""
        st = self.staging[name]
        if not st.packed:
            self._check_offset(name, offset)
            return user, offset, self.problem.ld(name)
        kern, dst = self.pack_kernels[name], self.pack_buffers[name]
        rows, cols, ld, dst_args, size = self._pack_constants[name]
        self._arguments.set(kern, helpers.PACK_SIGNATURE, rows, cols, user, offset, ld, dst, *dst_args)
        launches.append((kern, size, TILE_GROUP))
        if st.image:
            launches.append((self.images[name], dst))
            return self.images[name], 0, 0
        return dst, 0, st.dst_ld

    @functools.cached_property
    def _offset_unit(self) -> int:
        """The elements an operand read where it lies must start at a multiple of: 16 bytes' where the
        kernel copies that many at once (``copies_aligned``), the vector width where it is unguarded."""
        return max(self._aligned_elements if self.copies_aligned else 1,
                   1 if self.guarded else self.params.vector_width)

    def _check_offset(self, name: str, offset: int) -> None:
        """``ArgumentError`` unless operand ``name``, read where it lies from element ``offset``, starts where
        the kernel's reads assume (``_offset_unit``: the plan's choices hold for its problem's offsets'
        alignment class only)."""
        unit = self._offset_unit
        if offset % unit:
            raise ArgumentError(f"{name} at element offset {offset}: this plan reads {name} where it lies in pieces "
                                f"of {unit} elements, from offsets that are multiples of {unit} (the offset it "
                                f"was made for is {self.problem.offset(name)}); make the plan for such an offset")

    @functools.cached_property
    def _pack_constants(self) -> dict[str, tuple]:
        """Per packed operand, what its pack's launch takes that no call changes: the source's shape and
        leading dimension, the destination's arguments after its buffer, the NDRange."""
        pr = self.problem
        return {name: (st.rows, st.cols, pr.ld(name),
                       (0, st.dst_rows, st.dst_cols, st.dst_ld, pr.stride(name), st.dst_rows * st.dst_ld),
                       (round_up(st.dst_cols, helpers.TILE), round_up(st.dst_rows, helpers.TILE),
                        self._packed_layers(name)))
                for name, st in self.staging.items() if st.packed}

    @functools.cached_property
    def _gemm_constants(self) -> tuple[tuple, tuple, tuple, tuple]:
        """What the GEMM kernel's launch takes that no call changes: its size arguments, the layer
        strides, its global and local sizes."""
        pr = self.problem
        # (a kernel that reads its slices in place takes the whole K and finds its slice's depth itself)
        k_given = self.padded_k if self.sliced else self.slice_k
        dims = (pr.m, pr.n, pr.k) if self.guarded else (self.padded_m, self.padded_n, k_given)
        local = self.kernel_source.local_size
        if self.partition:
            global_size = (self.partition.launched * local[0], local[1], 1)
        else:
            global_size = (*self.kernel_source.global_size(dims[0], dims[1]), self.slices * pr.batch)
        return dims, self._layer_strides(), global_size, (*local, 1)

    @property
    def work_groups(self) -> int:
        """The work-groups the product's kernel launches (how many compute units it can keep busy)."""
        _, _, global_size, local_size = self._gemm_constants
        return math.prod(g // max(size, 1) for g, size in zip(global_size, local_size))

    @functools.cached_property
    def _gemm_signature(self) -> str:
        return GEMM_SIGNATURE + (STREAM_K_SIGNATURE if self.partition else SUMMED_SIGNATURE if self.summed
                                 else SLICED_SIGNATURE if self.sliced else "")

    def _product_launches(self, operands: dict[str, tuple], c: ocl.Buffer, offset_c: int, alpha, beta) -> list[tuple]:
        """The GEMM kernel's launch on staged operands and, into a temporary C, the merge's."""
        pr = self.problem
        dims, strides, global_size, local_size = self._gemm_constants
        target = (self.c_buffer, 0, self.padded_n) if self.c_temp else (c, offset_c, pr.ldc)
        # into a temporary the kernel writes op(A) op(B) alone; the merge applies alpha and beta
        kernel_alpha, kernel_beta = (1.0, 0.0) if self.c_temp else (alpha, beta)
        # a stream-K kernel that shares no tile writes no partial sum: C stands in for the temporary
        partials = ((target[0] if self.partials is None else self.partials, self.partition.groups)
                    if self.partition else
                    (self.partials, self.arrivals, self.slice_k) if self.summed else
                    (self.slice_k,) if self.sliced else ())
        self._arguments.set(self.gemm_kernel, self._gemm_signature, *dims, kernel_alpha, kernel_beta,
                            *operands["A"], *operands["B"], *target, *strides, *partials)
        launches = [(self.gemm_kernel, global_size, local_size)]
        if self.partition and self.partition.most_pieces():
            fixup = self._epilogue("fixup")
            p, part = self.params, self.partition
            self._arguments.set(fixup, helpers.FIXUP_SIGNATURE, *dims[:2], p.block_rows, p.block_cols, part.steps,
                                part.groups, self.partials, self.padded_n, self.padded_m * self.padded_n,
                                kernel_alpha, *target, kernel_beta)
            launches.append((fixup, (round_up(dims[1], helpers.TILE), round_up(dims[0], helpers.TILE), 1),
                             TILE_GROUP))
        if self.c_temp:
            merge = self._epilogue("merge")
            self._arguments.set(merge, helpers.MERGE_SIGNATURE, pr.m, pr.n, self.c_buffer, self.padded_n,
                                self.padded_m * self.padded_n, self.slices, alpha, c, offset_c, pr.ldc, beta,
                                pr.stride_c, 1)     # one work-item an element: lanes are the GEMV merge's
            launches.append((merge, self._tiles_of_c(), TILE_GROUP))
        return launches

    def _launch(self, launches: list[tuple], wait_for: list[ocl.Event] | None) -> list[ocl.Event]:
        """Enqueue kernel launches (kernel, global size, local size) and image fills (image, buffer) in
        order, the first after ``wait_for``; their events."""
        q = self.ctx.queue
        events: list[ocl.Event] = []
        for launch in launches:
            first = None if events else wait_for
            if isinstance(launch[0], ocl.Kernel):
                kern, size, local = launch
                events.append(ocl.launch(q, kern, size, local, wait_for=first))
            else:
                img, src = launch
                events.append(ocl.copy(q, img, src, offset=0, origin=(0, 0), region=img.shape, wait_for=first))
        return events

    def launches(self) -> list[str]:
        """What ``enqueue`` launches, in the order of the events it returns (for a problem with a
        product to compute)."""
        steps = []
        for name, st in self.staging.items():
            if st.packed:
                steps.append(f"pack {name}" + (" (transpose)" if st.transpose else "")
                             + (" (conjugate)" if st.conjugate else "")
                             + (f" (to {self.kernel_dtype.numpy})" if st.convert else ""))
                if st.image:
                    steps.append(f"copy {name} to an image")
        steps.append(f"gemm [{self.params.describe()}] ({self.params_source}) "
                     f"{'guarded' if self.guarded else 'whole tiles'}"
                     + (", 16-byte copies" if self.copies_aligned else "")
                     + (", stream-K" if self.stream else f", K split in {self.split}" if self.split > 1 else "")
                     + (", summed in the kernel" if self.summed else ", slices read in place" if self.sliced else "")
                     + (f", a batch of {self.problem.batch}" if self.problem.batch > 1 else ""))
        if self.partition and self.partition.most_pieces():
            steps.append("fix up shared tiles")
        if self.c_temp:
            rounds = self.dtype.output.numpy != self.dtype.scalar_numpy
            steps.append("merge C" + (f" (to {self.dtype.output.numpy})" if rounds else ""))
        return steps

    def describe(self) -> str:
        """What this plan launches, for logs and ``autogemm run``."""
        return " ; ".join(self.launches())
