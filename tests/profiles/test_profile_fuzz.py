"""A fuzz of profiles (issue 57): a valid profile's text damaged at random (bytes flipped, inserted or cut,
any value of its JSON replaced by another of any type or size) is either still a valid profile, which
writes back as it reads, or a ``ProfileError`` naming its source; never another exception. The same
through the file reader, for bytes that are no text at all."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autogemm.codelets.gemv import GemvParams
from autogemm.codelets.simt import SimtParams
from autogemm.errors import ProfileError
from autogemm.profiles import HybridEntry, Predictor, Profile, Ranked, Sample, SizeClassEntry, read

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
#: JSON values of every kind, of sizes and magnitudes a forger would try.
JUNK = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70)
                    | st.floats(allow_nan=False) | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=8)


def _profile_text(device) -> str:
    simt = SimtParams("NT", "offset", 4, 8, 1, 2, 2, 1, True, False, mac="mul_add")
    entries = {"s": (SizeClassEntry("small", (32, 32, 32), (Ranked(simt, 1.5),), "model", 10, 3.0),)}
    gemv = {"d": (SizeClassEntry("n-square", (1024, 1024, 1), (Ranked(GemvParams("N", 16, 2, 2, 4, 0), 3.5),),
                                 "model", 20, 4.0),)}
    hybrid = {"s": (HybridEntry((512, 512, 512), 8, 3, simt, 12.0, 9, 1.5),)}
    predictors = {"s": Predictor((simt,), (Sample("NT", (64, 512, 256), (((1, 10.0),),)),), 3.0)}
    return Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                   "2026-11-22T10:00:00+00:00", "90s", {"s4": "fma"}, entries, gemv, hybrid,
                   predictors=predictors).to_json()


def _leaves(value, path=()):
    """The path of every value inside a JSON document (containers too)."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _leaves(inner, (*path, index))


def _replaced(document, path, junk):
    if not path:
        return junk
    holder = document
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = junk
    return document


def _holds_or_refuses(text: str) -> None:
    try:
        profile = Profile.from_json(text, source="fuzzed.json")
    except ProfileError as error:
        assert "fuzzed.json" in str(error)
        return
    assert Profile.from_json(profile.to_json()) == profile


@FUZZ
@given(data=st.data())
def test_any_value_replaced_gives_a_profile_or_a_profile_error(device, data):
    document = json.loads(_profile_text(device))
    paths = list(_leaves(document))
    for _ in range(data.draw(st.integers(1, 3))):
        document = _replaced(document, data.draw(st.sampled_from(paths)), data.draw(JUNK))
        paths = list(_leaves(document))
    _holds_or_refuses(json.dumps(document))


def test_numbers_with_more_decimals_than_the_writer_keeps_read_as_it_writes_them(device):
    """The fuzz found a predictor's launch cost of 0.5 read as 0.5 and written as 0 (the writer keeps
    whole flops, rates and seconds to 3 decimals): the reader keeps what the writer would."""
    document = json.loads(_profile_text(device))
    document["predictor"]["s"]["launch"] = 0.5
    document["dtypes"]["s"][0]["seconds"] = 1.23456
    document["dtypes"]["s"][0]["ranked"][0]["gflops"] = 7.0004
    profile = Profile.from_json(json.dumps(document))
    assert profile.predictors["s"].launch == 0 and profile.dtypes["s"][0].seconds == 1.235
    _holds_or_refuses(json.dumps(document))


@FUZZ
@given(data=st.data())
def test_damaged_text_gives_a_profile_or_a_profile_error(device, data):
    text = _profile_text(device)
    at = data.draw(st.integers(0, len(text)))
    damage = data.draw(st.sampled_from(["cut", "insert", "flip"]))
    if damage == "cut":
        text = text[:at]
    elif damage == "insert":
        text = text[:at] + data.draw(st.text(max_size=6)) + text[at:]
    else:
        text = text[:at] + data.draw(st.characters()) + text[at + 1:]
    _holds_or_refuses(text)


@FUZZ
@given(raw=st.binary(max_size=200))
def test_a_file_of_any_bytes_is_refused_with_a_profile_error(tmp_path_factory, raw):
    path = Path(tmp_path_factory.mktemp("fuzz")) / "profile.json"
    path.write_bytes(raw)
    try:
        read(path)
    except ProfileError as error:
        assert str(path) in str(error)
    else:
        raise AssertionError("random bytes read as a profile")
