"""``tune`` measures how calls are routed (``tuning.routes``): the multiply-adds below which a product
reads A and B where they lie rather than packing them, and below which a product from numpy to numpy runs
on the host's BLAS, from squares timed both ways as a program's loop runs them; kept in the profile's
thresholds."""

from __future__ import annotations

import pytest
from limits import set_thresholds

from autogemm.blas import default_params
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES
from autogemm.profiles import read
from autogemm.profiles.store import path_for
from autogemm.profiles.thresholds import DEFAULTS, device_class
from autogemm.tuning import Budget, TuneListener, routes, tuner
from autogemm.tuning.evaluation import WorkerProcess
from autogemm.tuning.routes import (
    CPU_SIDES,
    EVERY_PRODUCT,
    GPU_SIDES,
    OWN_MEMORY_HOST_SIDES,
    SHARED_HOST_SIDES,
    HostOrDevice,
    InPlace,
    host_bound,
    host_sides,
    in_place_bound,
)

CONFIG = SimtParams()


def _timed(*pairs: tuple[float | None, float | None]) -> list[InPlace]:
    return [InPlace(side, "NN", CONFIG, packed, in_place)
            for side, (packed, in_place) in zip((32, 64, 128, 256), pairs)]


def test_the_bound_is_the_first_square_from_which_packing_wins_by_its_margin():
    assert in_place_bound(_timed((2.0, 1.0), (3.0, 2.9), (4.0, 4.5), (5.0, 9.0))) == 128**3
    assert in_place_bound(_timed((1.0, 2.0), (3.0, 2.9), (4.0, 4.5), (5.0, 9.0))) == 128**3   # one win: noise
    assert in_place_bound(_timed((2.0, 1.0), (2.0, 1.0), (2.0, 1.0), (1.0, 2.0))) == 256**3   # the last square
    assert in_place_bound(_timed((2.0, 1.0), (4.0, 4.1))) == 64**3 + 1     # within the margin: in place, all
    assert in_place_bound(_timed((None, 1.0), (3.0, None), (2.0, 2.0))) == 128**3 + 1   # failed ways left out
    assert in_place_bound(_timed((None, 1.0))) is None and in_place_bound([]) is None


def test_the_worker_times_a_loop_of_products_and_answers_a_failure(device):
    with WorkerProcess(device, preload=("faulty_family",)) as worker:
        from faulty_family import faulty

        dt = DTYPES["s"]
        seconds = worker.time_calls(default_params(device, dt), dt, (64, 48, 40), "TN", seconds=0.02)
        assert seconds is not None and 0 < seconds < 1
        assert worker.time_calls(faulty(CONFIG, "build"), dt, (64, 64, 64), "NN", seconds=0.02) is None


class _Heard(TuneListener):
    def __init__(self) -> None:
        self.routes: list[tuple[str, list[InPlace], int | None]] = []

    def routes_measured(self, dtype, timed, bound) -> None:
        self.routes.append((dtype.key, timed, bound))


def test_tune_measures_the_in_place_bound_into_the_profile(cache, device):
    heard = _Heard()
    profile = tuner.tune(device, (DTYPES["s"],), Budget(evaluations=6), quick=True, top=1, listener=heard,
                         classes=("small", "routes"))
    ((key, timed, bound),) = heard.routes
    sides = GPU_SIDES if device.is_gpu else CPU_SIDES
    assert key == "s" and [t.side for t in timed] == list(sides)
    assert all(t.layout != t.config.layout for t in timed)           # the configuration packs them
    assert bound == in_place_bound(timed) and bound in {side**3 for side in sides} | {sides[-1] ** 3 + 1}
    assert profile.thresholds.in_place_multiply_adds == bound
    assert read(path_for(device.fingerprint)).thresholds.in_place_multiply_adds == bound


def _host(*pairs: tuple[float | None, float | None]) -> list[HostOrDevice]:
    return [HostOrDevice(side, device, host) for side, (device, host) in zip((32, 64, 128, 256), pairs)]


@pytest.mark.parametrize("shared", [True, False])
def test_the_host_bound_is_the_first_square_from_which_the_device_wins_by_its_margin(shared):
    assert host_bound(_host((9.0, 1.0), (5.0, 4.0), (3.0, 4.0), (2.0, 8.0)), shared) == 128**3
    assert host_bound(_host((9.0, 1.0), (3.0, 4.0), (5.0, 4.0), (2.0, 8.0)), shared) == 256**3     # one win: noise
    assert host_bound(_host((1.0, 9.0), (1.0, 9.0)), shared) == 32**3                      # faster from the first
    assert host_bound(_host((1.0, None)), shared) is None


def test_a_device_never_faster_sends_every_product_to_the_host_only_where_it_shares_its_memory():
    """A GPU with memory of its own that lost every square (its copies and launches outweigh small
    products) takes those larger than the largest measured: the host's BLAS is not extrapolated past it
    (a GPU machine's tune once sent its largest products to numpy)."""
    never = _host((9.0, 1.0), (None, 4.0), (5.0, 4.0))
    assert host_bound(never, shares_memory=True) == EVERY_PRODUCT
    assert host_bound(never, shares_memory=False) == 128**3 + 1


@pytest.mark.parametrize("shared", [True, False])
def test_a_device_of_its_own_memory_is_timed_against_the_host_up_to_where_its_copies_no_longer_count(
        shared, cache, device, monkeypatch):
    monkeypatch.setattr(type(device), "shares_host_memory", property(lambda self: shared))
    asked = []
    monkeypatch.setattr(routes, "measure_in_place", lambda worker, profile, dt, sides: [])
    monkeypatch.setattr(routes, "measure_host", lambda worker, dt, sides: asked.append(sides) or [])
    tuner.tune(device, (DTYPES["s"],), Budget(evaluations=4), quick=True, top=1, classes=("routes",))
    assert asked == [SHARED_HOST_SIDES if shared else OWN_MEMORY_HOST_SIDES]
    assert OWN_MEMORY_HOST_SIDES[-1] >= 2048 > SHARED_HOST_SIDES[-1]


def test_tune_measures_where_the_hosts_blas_is_faster_into_the_profile(cache, device):
    heard = _HeardHost()
    profile = tuner.tune(device, (DTYPES["s"], DTYPES["d"]), Budget(evaluations=4), quick=True, top=1,
                         listener=heard, classes=("routes",))
    assert [key for key, *_ in heard.host] == ["s", "d"]
    for key, timed, bound in heard.host:
        assert [t.side for t in timed] == list(host_sides(device)) and all(t.host > 0 for t in timed)
        assert bound == host_bound(timed, device.shares_host_memory) and profile.thresholds.host_below(key) == bound
    # what it saved: the fields it measured, over which the device follows its class's defaults
    saved, row = read(path_for(device.fingerprint)).thresholds, DEFAULTS[device_class(device)]
    assert saved.given == profile.thresholds.given and saved.over(row) == profile.thresholds.over(row)


class _HeardHost(TuneListener):
    def __init__(self) -> None:
        self.host: list[tuple[str, list[HostOrDevice], int | None]] = []

    def host_measured(self, dtype, timed, bound) -> None:
        self.host.append((dtype.key, timed, bound))


def test_one_in_place_bound_serves_every_dtype_the_least_of_float32s_and_float64s(cache, device, monkeypatch):
    """float32's squares alone once set a bound that made float64's mid-sized products slower."""
    measured = {"s": 2048**3 + 1, "d": 256**3}
    monkeypatch.setattr(routes, "measure_in_place", lambda worker, profile, dt, sides: [dt.key])
    monkeypatch.setattr(routes, "in_place_bound", lambda timed: measured[timed[0]])
    monkeypatch.setattr(routes, "measure_host", lambda worker, dt, sides: [])
    heard = _Heard()
    profile = tuner.tune(device, (DTYPES["s"], DTYPES["d"], DTYPES["c"]), Budget(evaluations=4), quick=True,
                         top=1, listener=heard, classes=("routes",))
    assert [key for key, *_ in heard.routes] == ["s", "d"]
    assert profile.thresholds.in_place_multiply_adds == 256**3


def test_the_routes_step_times_the_device_through_gemm_itself_host_route_aside(discrete, monkeypatch):
    """The routes step times the device's products from numpy to numpy as ``gemm`` runs them (its copies,
    pools and thresholds: a model of them drifted from the engine and made a GPU look slower than its
    calls were), the host route aside even where the profile sends every such product to the host, and
    the host's BLAS after it. Each device product right (the operands fresh and random)."""
    import numpy as np

    from autogemm.accuracy import relative_error
    from autogemm.tuning.evaluation import worker
    from autogemm.tuning.evaluation.requests import TimeHostCalls

    set_thresholds(monkeypatch, host_multiply_adds=(("s", EVERY_PRODUCT), ("z", EVERY_PRODUCT)))
    monkeypatch.setattr(worker, "HOST_SETTLE_SECONDS", 0.0)
    ran, real = [], worker.run_gemm

    def run_gemm(a, b, c, batch, options):
        got = real(a, b, c, batch, options)
        ran.append((options.backend, options.device, relative_error(got, a.astype(np.complex128) @ b)))
        return got
    monkeypatch.setattr(worker, "run_gemm", run_gemm)
    timer = worker.Worker()
    timer.ctx = discrete
    for key, side in (("s", 40), ("z", 23)):
        replies = []
        ran.clear()
        timer._time_host_calls(TimeHostCalls(key, side, 0.002), replies.append)
        (reply,) = replies
        assert reply["device"] > 0 and reply["host"] > 0
        assert ran and {(backend, device) for backend, device, _ in ran} == {("opencl", discrete.device)}
        assert max(error for *_, error in ran) < DTYPES[key].tolerance
