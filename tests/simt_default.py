"""A simt configuration that fits the test device, for tests of the simt family's own behaviour: the class
default, or on a CPU of wide vectors (whose class default is the cpu family's) the simt one other CPUs
take."""

from autogemm.blas import default_params, defaults
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES

CPU_SIMT = defaults._CPU["s"]


def simt_default(device) -> SimtParams:
    """float32's simt configuration for ``device``."""
    params = default_params(device, DTYPES["s"])
    return params if isinstance(params, SimtParams) else CPU_SIMT
