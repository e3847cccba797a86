"""The child process ``nvrtc.compile_cuda`` compiles in (``child.serve``): its first request is answered
``{"ready": true}``; each later one, ``{"source", "name", "arch", "options"}``, is answered
``{"image": base64 or null, "log": NVRTC's log, or why it did not compile}``."""

from __future__ import annotations

import base64

from ...errors import BuildError
from ..child import serve
from .nvrtc import compile_here


class Compiler:
    def __init__(self) -> None:
        self.greeted = False

    def handle(self, request: dict, reply) -> None:
        if not self.greeted:
            self.greeted = True
            reply({"ready": True})
            return
        try:
            cubin = compile_here(request["source"], request["name"], request["arch"], request["options"])
        except BuildError as exc:
            reply({"image": None, "log": str(exc)})
            return
        reply({"image": base64.b64encode(cubin.image).decode("ascii"), "log": cubin.log})


if __name__ == "__main__":
    serve(Compiler().handle)
