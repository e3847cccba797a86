"""Tests set the ``Thresholds`` that route and shape a call, as a device's profile would."""

import dataclasses

from autogemm.profiles import thresholds


def set_thresholds(monkeypatch, **fields) -> None:
    """Every device follows these ``Thresholds`` fields for the rest of the test (the others as its
    class's defaults), where its profile holds none of its own."""
    for name, row in list(thresholds.DEFAULTS.items()):
        monkeypatch.setitem(thresholds.DEFAULTS, name, dataclasses.replace(row, **fields))
