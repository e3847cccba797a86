"""The ``autogemm`` command group, which every ``commands_*`` module adds its commands to."""

from __future__ import annotations

import warnings

import click

from ..errors import AutogemmError
from ..version import __version__


class Group(click.Group):
    """The command group: a command that meets an error of the library's (a bad ``$AUTOGEMM_CACHE_DIR``,
    say), a file it cannot read or write, or a size the host's memory cannot hold, ends with one line
    saying so and status 2, as its own errors do, not a traceback; a warning is one line too, on standard
    error, without the library's source path."""

    def invoke(self, ctx: click.Context) -> object:
        from .common import fail

        try:
            with warnings.catch_warnings():
                warnings.showwarning = _warning_line
                return super().invoke(ctx)
        except AutogemmError as exc:
            fail(str(exc))
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            fail(f"{exc.strerror or exc}{':' if where else ''}{where}")
        except MemoryError as exc:
            fail(f"the host lacks the memory this needs ({exc or 'numpy could not allocate it'}); ask for "
                 "smaller sizes")


def _warning_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: object = None, line: str | None = None) -> None:
    click.echo(f"warning: {message}", err=True)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autogemm")
def main() -> None:
    """Auto-tuned GEMM for any OpenCL device."""
