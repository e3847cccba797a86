"""Tables as ``autogemm.tables.plain_table`` draws them for logs and terminals."""

from __future__ import annotations

import io

from rich.console import Console

from autogemm.tables import plain_table


def _rendered(table, width: int = 80) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.export_text().splitlines()


def test_a_narrow_table_keeps_its_heading_on_one_line():
    """The heading wraps at the console's width, not at the table's (a table of two short columns
    under a heading of 60 characters used to split it into lines of a few words)."""
    heading = "sgemm numpy to numpy, us a product (the device against the host's BLAS)"
    table = plain_table(heading, ["n", "us"], right=["n", "us"])
    table.add_row("32", "1.6")
    lines = [line.rstrip() for line in _rendered(table)]
    assert lines[0] == heading
    assert lines[1].split() == ["n", "us"] and set(lines[2]) == {"─"} and lines[3].split() == ["32", "1.6"]
    longer = _rendered(plain_table(heading + " " + heading, ["n"]), width=80)
    assert max(len(line.rstrip()) for line in longer) <= 80 and len(longer) >= 3
