"""A kernel family for tests alone: simt kernels with a fault put in on purpose, to prove that tuning
survives its candidates. Importing this module registers the family ``faulty`` (the evaluation worker
imports it too, when told to). Each fault is a statement added at the end of the kernel (or text that is
not OpenCL), with nothing the compiler could prove about it:

- ``none``: the simt kernel itself;
- ``build``: does not compile;
- ``wrong``: overwrites C's first element;
- ``crash``: writes far outside any buffer (the process dies on a CPU; on NVIDIA the context is lost);
- ``oob_read``: reads far outside A;
- ``hang``: never finishes (a loop that stores, so that no compiler may take it out: NVIDIA's removed
  one that only read a volatile local);
- ``edge_crash``: crashes only where M is not a whole number of blocks (as on the verification's shapes)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from autogemm.codelets import simt
from autogemm.codelets.fields import params_from_fields, params_to_dict
from autogemm.codelets.kernel import KernelSource
from autogemm.codelets.registry import Family, register
from autogemm.codelets.simt import SimtParams
from autogemm.errors import ConfigError

FAULTS = ("build", "wrong", "crash", "oob_read", "hang", "none")
#: Faults that show only off the tuning problem's shape: there the kernel is right, so it reaches verification.
EDGE_FAULTS = ("edge_crash",)
STATEMENTS = {
    "none": "",
    "wrong": "if (get_global_id(0) == 0 && get_global_id(1) == 0) C[0] = (real)12345;",
    "crash": "C[(long)M << 40] = (real)1;",
    "oob_read": "if (get_global_id(0) == 0) C[0] += A[(long)K << 36] * (real)0;",
    "hang": "while (M > 0) ((volatile __global real*)C)[0] = (real)0;",
    "edge_crash": "if (M % BLOCK_ROWS) C[(long)M << 40] = (real)1;",
}


@dataclass(frozen=True)
class FaultyParams(SimtParams):
    family: ClassVar[str] = "faulty"
    fault: str = "none"

    def to_dict(self) -> dict:
        return params_to_dict(self, self.family)

    @classmethod
    def from_dict(cls, data: dict) -> FaultyParams:
        params = params_from_fields(cls, data, cls.family)
        if params.fault not in FAULTS + EDGE_FAULTS:
            raise ConfigError(f"unknown fault {params.fault!r}")
        return params


def faulty(base: SimtParams, fault: str) -> FaultyParams:
    """``base`` with ``fault`` put in."""
    return FaultyParams(**{**base.__dict__, "fault": fault})


def render(params: FaultyParams, dtype, guarded: bool = True, stream: bool = False) -> KernelSource:
    kernel = simt.render(params, dtype, guarded, stream)
    if params.fault == "build":
        return replace(kernel, source=kernel.source + "\nthis is not OpenCL C;\n")
    body_end = kernel.source.rstrip().rfind("}")
    source = kernel.source[:body_end] + "    " + STATEMENTS[params.fault] + "\n" + kernel.source[body_end:]
    return replace(kernel, source=source)


# no tuning space of its own: tests search spaces they build from ``faulty``
register(Family(FaultyParams.family, FaultyParams, simt.check, render, lambda facts: None))
