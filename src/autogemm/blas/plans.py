"""Plans made from a selection: where a caller names no configuration, the device's choice for the problem
(``selection``) is looked up here and handed to the plan, which never chooses its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..codelets.gemv import GemvParams
from ..codelets.registry import KernelParams
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.device import Device
from .gemv import GemvLaunchPlan, GemvProblem
from .launch_plan import LaunchPlan, check_edge
from .problem import GemmProblem
from .selection import Selection, choose_gemv_params, choose_params, routed
from .vectors import VectorsPlan, VectorsRoute


def gemm_plan(ctx: DeviceContext, problem: GemmProblem, params: KernelParams | None = None, edge: str = "auto",
              split_k: int | None = None) -> LaunchPlan:
    """A ``LaunchPlan`` of ``params``, or of the configuration and K split chosen for ``problem`` on the
    device (``split_k``, where given, overrides the chosen split)."""
    if params is not None:
        return LaunchPlan(ctx, problem, params, edge, split_k)
    chosen = choose_params(ctx.device, problem)
    return LaunchPlan(ctx, problem, chosen.params, edge, chosen.split if split_k is None else split_k, chosen.source)


def gemv_plan(ctx: DeviceContext, problem: GemvProblem, params: GemvParams | None = None) -> GemvLaunchPlan:
    """A ``GemvLaunchPlan`` of ``params``, or of the configuration chosen for ``problem`` on the device."""
    if params is not None:
        return GemvLaunchPlan(ctx, problem, params)
    chosen = choose_gemv_params(ctx.device, problem)
    return GemvLaunchPlan(ctx, problem, chosen.params, chosen.source)


def round_trip(plan: LaunchPlan | VectorsPlan, buffers: list[ocl.Buffer], a: np.ndarray, b: np.ndarray,
               c: np.ndarray) -> Callable[[], None]:
    """One product from host arrays with no more than it needs, on the plan's queue: A and B copied into
    ``buffers``, the plan's launches, C copied back into ``c``, blocking (the least a call from numpy to
    numpy costs, which the call path's benchmark times beside ``gemm``)."""
    queue = plan.ctx.queue

    def run() -> None:
        ocl.copy(queue, buffers[0], a, is_blocking=False)
        ocl.copy(queue, buffers[1], b, is_blocking=False)
        plan.enqueue(*buffers)
        ocl.copy(queue, c, buffers[2], is_blocking=True)
    return run


class Choice(NamedTuple):
    """What the device's profile runs a GEMM problem with: the selection (a GEMM configuration and its K
    split, or a multi-vector GEMV's configuration) and, for a GEMV, the ``route`` there."""

    selection: Selection
    route: VectorsRoute | None = None

    @property
    def key(self) -> tuple:
        """What the plan's launches depend on (where the selection came from does not count)."""
        return self.selection.params, self.selection.split, self.route


def choice_for(device: Device, problem: GemmProblem) -> Choice:
    """The ``Choice`` for ``problem`` on ``device``: the multi-vector GEMV's where ``selection.vectors_route``
    routes it there, else a GEMM's."""
    route, chosen = routed(device, problem)
    if route is not None:
        return Choice(choose_gemv_params(device, route.gemv), route)
    return Choice(chosen or choose_params(device, problem))


def plan_of(ctx: DeviceContext, problem: GemmProblem, choice: Choice, edge: str = "auto") -> LaunchPlan | VectorsPlan:
    """The plan of a ``Choice`` for ``problem``."""
    chosen = choice.selection
    if choice.route is not None:
        return VectorsPlan(ctx, problem, choice.route, chosen.params, chosen.source)
    return LaunchPlan(ctx, problem, chosen.params, edge, chosen.split, chosen.source)


def plan_for(ctx: DeviceContext, problem: GemmProblem, params: KernelParams | None = None,
             edge: str = "auto") -> LaunchPlan | VectorsPlan:
    """The plan a GEMM call of ``problem`` runs on: of ``params`` where given, else of the device's
    ``choice_for`` it."""
    check_edge(edge)
    if params is not None:
        return LaunchPlan(ctx, problem, params, edge)
    return plan_of(ctx, problem, choice_for(ctx.device, problem), edge)
