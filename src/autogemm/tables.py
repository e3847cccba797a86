"""Tables that read well in a plain log at 80 columns as well as in a terminal: a rule under the header
and none around or between the cells (each border costs a log three columns), every cell on one line
except in the columns named to fold (a kernel's configuration), which wrap at spaces under themselves."""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.table import Table


def plain_table(title: str | None, columns: Iterable[str], *, right: Iterable[str] = (),
                fold: Iterable[str] = (), header: bool = True) -> Table:
    """A table titled ``title`` (on its left) of ``columns``, the ``right`` ones aligned right (numbers),
    the ``fold`` ones allowed to wrap."""
    right, fold = set(right), set(fold)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  padding=(0, 1, 0, 0),
                  show_header=header)
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", no_wrap=column not in fold,
                         overflow="fold" if column in fold else "ellipsis")
    return table
