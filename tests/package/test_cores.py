"""The cores the process may run on: its affinity where the system gives one, else the machine's."""

from __future__ import annotations

import os

from autogemm import cores


def test_usable_cores_follow_the_affinity_of_the_process(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 128)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5, 9}, raising=False)
    assert cores.usable_cores() == 3                     # a container given 3 of 128 cores


def test_usable_cores_without_an_affinity_are_the_machines(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert cores.usable_cores() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cores.usable_cores() == 1
