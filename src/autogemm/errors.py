"""The exceptions autogemm raises: one small hierarchy, so callers can catch ``AutogemmError``."""

from __future__ import annotations


class AutogemmError(Exception):
    """Base of every error autogemm raises on purpose."""


class ShapeError(AutogemmError, ValueError):
    """Operands whose shapes do not conform, or a size or leading dimension out of range."""


class DtypeError(AutogemmError, TypeError):
    """An unsupported or mixed dtype, or a scalar that does not fit the dtype."""


class ArgumentError(AutogemmError, ValueError):
    """Any other invalid argument (a wrong trans letter, an unknown option)."""


class DeviceError(AutogemmError, RuntimeError):
    """No OpenCL device, a device that cannot be found, or one lacking a needed feature."""


class HostMemoryError(AutogemmError, MemoryError):
    """A product whose result or copies would not fit the host's available memory, refused before it runs."""


class ConfigError(AutogemmError, ValueError):
    """A kernel configuration that is malformed or that ``check()`` rejects for the device."""


#: A compiler that cannot build anything for this CPU says so in its log; the message then says why.
_UNKNOWN_CPU = "unknown target CPU"


def driver_fault(log: str) -> str:
    """What a build log says of the driver rather than of the kernel, or "" when it says nothing of it."""
    if _UNKNOWN_CPU in log:
        return ("the driver's compiler does not know this CPU, so it builds no kernel at all (PoCL from PyPI "
                "is built on LLVM 14, older than AMD's Zen 5 and other recent CPUs); install a driver whose "
                "compiler knows it, e.g. Debian's or Ubuntu's PoCL: apt-get install pocl-opencl-icd "
                "(autogemm then prefers it; tools/ensure-opencl-driver.sh of its repository does this)")
    return ""


class BuildError(AutogemmError, RuntimeError):
    """The OpenCL compiler rejected a generated kernel; carries the build log."""

    def __init__(self, message: str, log: str = "", source: str = "") -> None:
        fault = driver_fault(log)
        super().__init__(message + (f": {fault}" if fault else "") + (f"\n--- build log ---\n{log}" if log else ""))
        self.log = log
        self.source = source


class ProfileError(AutogemmError, ValueError):
    """A device profile that cannot be read, fails validation, or belongs to another device."""


class TuningError(AutogemmError, RuntimeError):
    """A tuning run that cannot start or found no working configuration."""
