"""A table wider than its place says so: one line under it names the columns out of sight
and the keys that bring them in.

:class:`HidesColumnsHint` goes before ``DataTable`` in a table's bases; the table keeps the
first :class:`ColumnsHint` among its siblings up to date whenever it scrolls, resizes or
changes its columns. The hint is hidden while every column is in sight.

Such a table also scrolls by whole columns: the first column after the fixed ones (and the
row labels) always starts at its left edge, so a cut column's last figures never stand
beside a row label as if they were part of it ("1" and "3" of "2.03" read "13").
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static

LEFT, RIGHT = "←", "→"  # spectui.ascii stands in "<-" and "->" on an ASCII terminal


def hidden_columns(table: DataTable[Any]) -> tuple[int, int]:
    """How many of ``table``'s scrolling columns are out of sight, to the left and to the
    right of what it shows now; a column whose text is cut at an edge counts as out of sight
    (one cut in its trailing padding alone does not). Fixed columns (and the row labels)
    are always in sight."""
    width = table.scrollable_content_region.width
    if width <= 0:
        return 0, 0
    widths = [column.get_render_width(table) for column in table.ordered_columns]
    fixed = table.fixed_columns
    left_edge = int(table.scroll_x) + table._get_fixed_offset().left
    right_edge = int(table.scroll_x) + width
    x = table._row_label_column_width + sum(widths[:fixed])
    left = right = 0
    for w in widths[fixed:]:
        if x < left_edge:
            left += 1
        elif x + w - table.cell_padding > right_edge:
            right += 1
        x += w
    return left, right


def hint_text(left: int, right: int, focused: bool = True) -> str:
    """The hint for ``left`` and ``right`` columns out of sight ("" for none); the keys
    that bring them in, after Tab when the table does not have the focus."""
    then = "" if focused else "Tab, then "
    if left and right:
        return f"{LEFT} {left} · {right} more columns {RIGHT} ({then}{LEFT}/{RIGHT}, Home/End)"
    if right:
        return f"{RIGHT} {right} more column{'s' * (right > 1)} ({then}{RIGHT} or End)"
    if left:
        return f"{LEFT} {left} more column{'s' * (left > 1)} ({then}{LEFT} or Home)"
    return ""


class ColumnsHint(Static):
    """The line under a table that says which of its columns are out of sight."""

    DEFAULT_CSS = """
    ColumnsHint {
        height: 1;
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        display: none;
    }
    """

    def show_hint(self, text: str) -> None:
        self.display = bool(text)
        self.update(Text(text))


def column_starts(table: DataTable[Any]) -> list[int]:
    """The scroll positions at which a scrolling column of ``table`` starts right after the
    fixed ones: 0, the first's width, the first two's, ... up to all of them."""
    widths = [column.get_render_width(table) for column in table.ordered_columns]
    starts = [0]
    for w in widths[table.fixed_columns :]:
        starts.append(starts[-1] + w)
    return starts


class HidesColumnsHint:
    """Mixin for a DataTable: keeps the first ColumnsHint beside it saying which columns are
    out of sight (the table scrolls to them by keyboard: arrows, Home/End), and scrolls by
    whole columns."""

    @property
    def max_scroll_x(self) -> int:
        """Far enough that the last column is whole with the first shown whole too."""
        assert isinstance(self, DataTable)
        furthest = super().max_scroll_x  # type: ignore[misc]
        if furthest <= 0:
            return 0
        return min((s for s in column_starts(self) if s >= furthest), default=furthest)

    def _snap(self, value: float) -> float:
        """``value`` moved to a column's start, in the direction it moves from now."""
        assert isinstance(self, DataTable)
        starts = column_starts(self)
        if value >= self.scroll_x:
            return float(min((s for s in starts if s >= value), default=value))
        return float(max((s for s in starts if s <= value), default=0))

    def validate_scroll_target_x(self, value: float) -> float:
        return self._snap(super().validate_scroll_target_x(value))  # type: ignore[misc]

    def validate_scroll_x(self, value: float) -> float:
        return self._snap(super().validate_scroll_x(value))  # type: ignore[misc]

    def _scroll_to(self, *args: Any, **kwargs: Any) -> bool:
        # Never animated: an animation's steps between two columns' starts would be snapped
        # back and forth.
        kwargs["animate"] = False
        return bool(super()._scroll_to(*args, **kwargs))  # type: ignore[misc]

    def _columns_hint(self) -> ColumnsHint | None:
        parent = getattr(self, "parent", None)
        if parent is None:
            return None
        for child in parent.children:
            if isinstance(child, ColumnsHint):
                return child
        return None

    def update_columns_hint(self) -> None:
        hint = self._columns_hint()
        if hint is not None:
            assert isinstance(self, DataTable)
            hint.show_hint(hint_text(*hidden_columns(self), focused=self.has_focus))

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)  # type: ignore[misc]
        self.update_columns_hint()

    def watch_virtual_size(self) -> None:
        self.update_columns_hint()

    def on_resize(self) -> None:
        self.update_columns_hint()

    def on_focus(self) -> None:
        self.call_after_refresh(self.update_columns_hint)  # once the focus has moved

    def on_blur(self) -> None:
        self.call_after_refresh(self.update_columns_hint)
