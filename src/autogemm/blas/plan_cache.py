"""Plans (GEMM's and GEMV's) kept between calls of the high-level API: making one compiles nothing new
but still renders and looks up kernels and creates kernel objects, which takes the host longer than a
small product takes the device.

A plan that leaves the cache is only forgotten, never released here: another thread may be enqueueing on
it (threads that ask for a new problem at once all make a plan, and once freed its temporaries and kernel
arguments crashed PoCL), and its buffers are freed when the last user lets go of it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from ..codelets.gemv import GemvParams
from ..codelets.registry import KernelParams
from ..profiles import profile_for, still_current
from ..runtime.opencl.context import DeviceContext
from .gemv import GemvLaunchPlan, GemvProblem
from .launch_plan import LaunchPlan
from .plans import gemv_plan, plan_for
from .problem import GemmProblem
from .vectors import VectorsPlan

Plan = TypeVar("Plan", LaunchPlan, VectorsPlan, GemvLaunchPlan)

#: Plans kept, least recently used first out (each may hold temporary buffers on its device).
CAPACITY = 32

_plans: OrderedDict[tuple, tuple[object, LaunchPlan | VectorsPlan | GemvLaunchPlan]] = OrderedDict()
#: id of each plan in ``_plans`` -> (its context, the profile it was made under, whether it depends on it)
_kept: dict[int, tuple[DeviceContext, object, bool]] = {}
_lock = threading.Lock()


def cached_plan(ctx: DeviceContext, problem: GemmProblem, params: KernelParams | None,
                edge: str) -> LaunchPlan | VectorsPlan:
    """The plan of ``plan_for``, made once per (device, problem, configuration, edge mode) and kept while
    the device's profile stays the same (a plan without ``params`` took its configuration from it)."""
    return _cached(ctx, (problem, params, edge), params, lambda: plan_for(ctx, problem, params, edge))


def cached_gemv_plan(ctx: DeviceContext, problem: GemvProblem, params: GemvParams | None) -> GemvLaunchPlan:
    """``cached_plan`` for GEMV: a plan per (device, problem, configuration)."""
    return _cached(ctx, (problem, params), params, lambda: gemv_plan(ctx, problem, params))


def _cached(ctx: DeviceContext, key: tuple, params: object, make: Callable[[], Plan]) -> Plan:
    profile = profile_for(ctx.device) if params is None else None
    key = (id(ctx), *key)
    with _lock:
        found = _plans.get(key)
        if found is not None and found[0] is profile:
            _plans.move_to_end(key)
            return found[1]
    plan = make()
    with _lock:
        found = _plans.get(key)
        if found is not None and found[0] is profile:   # another thread made it meanwhile: one plan per key
            _plans.move_to_end(key)
            return found[1]
        old = _plans.pop(key, None)
        _plans[key] = (profile, plan)
        _kept[id(plan)] = (ctx, profile, params is None)
        evicted = [old[1]] if old else []
        while len(_plans) > CAPACITY:
            evicted.append(_plans.popitem(last=False)[1][1])
        for stale in evicted:
            del _kept[id(stale)]
    return plan


def is_current(plan: LaunchPlan | VectorsPlan | GemvLaunchPlan) -> bool:
    """True while ``plan`` is kept here and, made from the device's profile, that profile is still the
    device's: what the lookup that returned it would return again (a caller holding a plan checks this
    instead of looking it up)."""
    kept = _kept.get(id(plan))
    if kept is None:
        return False
    ctx, profile, from_profile = kept
    return not from_profile or still_current(ctx.device, profile)


def clear() -> None:
    """Forget every kept plan."""
    with _lock:
        _plans.clear()
        _kept.clear()
