"""Tables that read well in a plain log at 80 columns as well as in a terminal: a rule under the header
and none around or between the cells (each border costs a log three columns), every cell on one line
except in the columns named to fold (a kernel's configuration), which wrap at spaces under themselves."""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text


class PlainTable(Table):
    """A ``Table`` whose ``heading`` is printed on its own line(s) above it, wrapped at the console's
    width: a table's own title wraps at the table's width, which splits the heading of a narrow table
    into lines of a few words."""

    def __init__(self, heading: str | None, **options: object) -> None:
        super().__init__(**options)
        self.heading = heading

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.heading:
            yield Text(self.heading)
        yield from super().__rich_console__(console, options)


def plain_table(title: str | None, columns: Iterable[str], *, right: Iterable[str] = (),
                fold: Iterable[str] = (), header: bool = True) -> PlainTable:
    """A table headed ``title`` (above it, on the left) of ``columns``, the ``right`` ones aligned right
    (numbers), the ``fold`` ones allowed to wrap."""
    right, fold = set(right), set(fold)
    table = PlainTable(title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                       show_header=header)
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", no_wrap=column not in fold,
                         overflow="fold" if column in fold else "ellipsis")
    return table
