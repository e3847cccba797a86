"""An imported profile is measured here before it counts (issue 57, D15): every configuration of its
entries built, checked and timed on the device, ranked by what it measured; what fails is left out;
and it replaces a profile's own entry only where it measured faster."""

from __future__ import annotations

from dataclasses import replace

from faulty_family import faulty

from autogemm.codelets.simt import SimtParams
from autogemm.profiles import Profile, Ranked, SizeClassEntry
from autogemm.tuning.evaluation import WorkerProcess
from autogemm.tuning.imported import faster_over, same_classes, timed_here

SIMT = SimtParams("NN", "consecutive", 4, 4, 2, 2, 4, 2, False, False)
CLAIMED = 9_999_999.0


def _profile(device, entries: dict[str, list[SizeClassEntry]]) -> Profile:
    return Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                   "2026-11-28T10:00:00+00:00", "60s", dtypes={k: tuple(v) for k, v in entries.items()})


def _entry(name: str, *ranked: Ranked) -> SizeClassEntry:
    return SizeClassEntry(name, (64, 64, 64), ranked, "model", 3, 1.0)


def test_configurations_are_timed_here_and_what_fails_is_left_out(device):
    wrong = faulty(SIMT, "wrong")
    forged = _profile(device, {"s": [_entry("small", Ranked(wrong, CLAIMED), Ranked(SIMT, CLAIMED)),
                                     _entry("medium", Ranked(wrong, CLAIMED))]})
    said = []
    with WorkerProcess(device, preload=("faulty_family",)) as worker:
        timed = timed_here(forged, worker, runs=2, say=said.append)
    (small,) = timed.dtypes["s"]
    assert small.name == "small" and [r.config for r in small.ranked] == [SIMT]
    assert 0 < small.ranked[0].gflops < CLAIMED
    assert len(said) == 2 and "left out" in said[0] and "wrong" in said[0]
    assert said[1].startswith("s medium 64x64x64: left out, no configuration computes right here")


def test_an_entry_replaces_the_profiles_own_only_where_it_ran_faster_in_the_same_session(device):
    """Compared with the profile's own entries as timed in the same session (``now``), not as stored: an
    own entry that failed then is replaced; the entries kept are the profile's as they were."""
    own = _profile(device, {"s": [_entry("small", Ranked(SIMT, 5.0)), _entry("large", Ranked(SIMT, 5.0)),
                                  _entry("skinny", Ranked(SIMT, 5.0))]})
    now = _profile(device, {"s": [_entry("small", Ranked(SIMT, 4.0)), _entry("large", Ranked(SIMT, 8.0))]})
    other = replace(SIMT, tile_k=8)
    imported = _profile(device, {"s": [_entry("small", Ranked(other, 4.5)), _entry("large", Ranked(other, 7.0)),
                                       _entry("skinny", Ranked(other, 0.5)), _entry("medium", Ranked(other, 1.0))]})
    assert same_classes(own, imported).dtypes["s"] == own.dtypes["s"]
    assert [e.name for e in same_classes(own, _profile(device, {"s": [_entry("large")]})).dtypes["s"]] == ["large"]
    merged = faster_over(own, imported, now)
    best = {entry.name: entry.ranked[0] for entry in merged.dtypes["s"]}
    assert best == {"small": Ranked(other, 4.5), "large": Ranked(SIMT, 5.0), "skinny": Ranked(other, 0.5),
                    "medium": Ranked(other, 1.0)}
