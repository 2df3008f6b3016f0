"""The tables the CLI prints, laid out for the terminal's width without cutting a value.

A :class:`Listing` holds a title, column names and rows of plain text (or styled
:class:`rich.text.Text`). :meth:`Listing.render` picks, for the console's width:

- a grid at the columns' natural widths when it fits;
- else a grid whose last column wraps at spaces, the others at their natural widths, when
  the last column still gets room for its longest word;
- else one block per row, ``column  value`` lines, values wrapping at spaces.

No value is ever shortened with an ellipsis; only a single word longer than the whole line
is folded. Titles and captions are printed as lines of their own, wrapped the same way.
``rich`` is imported when a listing is rendered, not when the command line is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

_GAP = 3  # columns between two grid columns: padding 1 + divider 1 + padding 1


def console(width: int | None = None) -> Console:
    """A console on stdout (``width`` fixed for tests; default: the terminal's)."""
    from rich.console import Console

    return Console(width=width)


def _text(cell: str | Text) -> Text:
    from rich.text import Text

    return cell.copy() if isinstance(cell, Text) else Text(str(cell))


def _longest_word(text: Text) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for w in text.plain.split()), default=0)


@dataclass
class Listing:
    """A table to print: ``rows`` of cells under ``columns``; ``right`` names the columns
    aligned right (numbers)."""

    title: str
    columns: Sequence[str]
    rows: list[Sequence[str | Text]] = field(default_factory=list)
    caption: str | None = None
    right: frozenset[str] = frozenset()

    def add(self, *cells: str | Text) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(cells)

    def print(self, out: Console | None = None, *, stacked: bool = False) -> None:
        """Print the listing on ``out`` (default: stdout), as blocks if ``stacked``."""
        target = out or console()
        for part in self.render(target.width, stacked=stacked):
            target.print(part)

    def render(self, width: int, *, stacked: bool = False) -> list[RenderableType]:
        """The renderables that show the listing within ``width`` columns."""
        from rich.text import Text

        parts: list[RenderableType] = [Text(self.title, style="bold", overflow="fold")]
        cells = [[_text(c) for c in row] for row in self.rows]
        if cells:
            parts.append(self._blocks(cells) if stacked else self._layout(cells, width))
        if self.caption:
            parts.append(Text(self.caption, style="dim", overflow="fold"))
        return parts

    def _layout(self, cells: list[list[Text]], width: int) -> RenderableType:
        natural = [
            max([len(name), *(row[i].cell_len for row in cells)])
            for i, name in enumerate(self.columns)
        ]
        gaps = _GAP * (len(self.columns) - 1)
        if sum(natural) + gaps <= width:
            return self._grid(cells, natural)
        last = width - gaps - sum(natural[:-1])
        longest = max([len(self.columns[-1]), *(_longest_word(row[-1]) for row in cells)])
        if last >= max(longest, 12):
            return self._grid(cells, [*natural[:-1], last])
        return self._blocks(cells)

    def _grid(self, cells: list[list[Text]], widths: list[int]) -> RenderableType:
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
        for name, width in zip(self.columns, widths, strict=True):
            justify = "right" if name in self.right else "left"
            table.add_column(name, width=width, justify=justify, overflow="fold")
        for row in cells:
            table.add_row(*row)
        return table

    def _blocks(self, cells: list[list[Text]]) -> RenderableType:
        from rich.console import Group
        from rich.table import Table

        key_width = max(len(name) for name in self.columns)
        blocks: list[RenderableType] = []
        for row in cells:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold", width=key_width, no_wrap=True)
            grid.add_column(overflow="fold")
            for name, cell in zip(self.columns, row, strict=True):
                grid.add_row(name, cell)
            blocks.append(grid)
            blocks.append("")
        return Group(*blocks[:-1])


def print_fields(title: str, fields: Sequence[tuple[str, str | Text]],
                 out: Console | None = None) -> None:  # fmt: skip
    """Print one record as ``name  value`` lines (an operation's outcome)."""
    listing = Listing(title, [name for name, _ in fields])
    listing.add(*(value for _, value in fields))
    listing.print(out, stacked=True)


def styled(value: str, style: str) -> Text:
    """``value`` shown in ``style`` (e.g. a health level in its colour)."""
    from rich.text import Text

    return Text(value, style=style)
