"""The child process ``BuildPool`` compiles in (``child.serve``): its first request names the device
(``{"device": "P:D", "fingerprint": ...}``, answered ``{"ready": true}`` once its context is open); each
later one, ``{"source": ..., "options": [...]}``, is answered ``{"binary": base64 or null, "log": ...}``."""

from __future__ import annotations

import base64
import warnings

import pyopencl as cl

from ..child import serve
from .discovery import same_device


class Compiler:
    """A context on the device, made by the first request; builds on it for the rest."""

    def __init__(self) -> None:
        self.context: cl.Context | None = None

    def handle(self, request: dict, reply) -> None:
        if self.context is None:
            self.context = cl.Context([same_device(request["device"], request["fingerprint"]).cl_device])
            reply({"ready": True})
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(self.context, request["source"]).build(options=request["options"])
        except cl.RuntimeError as exc:
            reply({"binary": None, "log": str(exc)})
            return
        reply({"binary": base64.b64encode(bytes(program.binaries[0])).decode("ascii"), "log": ""})


if __name__ == "__main__":
    serve(Compiler().handle)
