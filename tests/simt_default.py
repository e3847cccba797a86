"""A simt configuration that fits the test device, for tests of the simt family's own behaviour: the GPU
class default, or on a CPU (whose class default is the cpu family's) the register-blocked one without
local memory that was the CPU class default before."""

from autogemm.blas import default_params
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES

CPU_SIMT = SimtParams("TN", "consecutive", 8, 8, 4, 8, 4, 4, False, False)


def simt_default(device) -> SimtParams:
    """float32's simt configuration for ``device``."""
    params = default_params(device, DTYPES["s"])
    return params if isinstance(params, SimtParams) else CPU_SIMT
