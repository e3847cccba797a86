"""The routes of recent calls by their signature: a program that repeats a call (on the same arrays, or
on arrays of the same shapes, strides and dtypes, with the same options) finds its resolved route here
and only binds the new call's memory, scalars and events, skipping the checks and every lookup."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

#: Routes kept, least recently used first out.
CAPACITY = 64


class Route(Protocol):
    def current(self) -> bool:
        """Whether the route still holds (its plan is the device's choice under today's profile)."""


class Resolved:
    """Routes by call signature, at most ``CAPACITY``; safe to share among threads."""

    def __init__(self) -> None:
        self._routes: OrderedDict[tuple, Route] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple | None) -> Route | None:
        """The route kept for ``key`` while it is current, else None (a key of None has none)."""
        if key is None:
            return None
        route = self._routes.get(key)
        return route if route is not None and route.current() else None

    def keep(self, key: tuple | None, route: Route) -> Route:
        """Keep ``route`` for ``key`` (not for a key of None) and return it."""
        if key is not None:
            with self._lock:
                self._routes[key] = route
                self._routes.move_to_end(key)
                while len(self._routes) > CAPACITY:
                    self._routes.popitem(last=False)
        return route

    def clear(self) -> None:
        with self._lock:
            self._routes.clear()


#: The routes of every GEMM call of this process.
ROUTES = Resolved()
