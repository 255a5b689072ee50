"""The form's rows: building a field's row, showing the fields the chosen parts read, and
painting the focus and error marks (a mixin of :class:`spectui.widgets.param_form.ParamForm`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from textual.color import Color
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from engine.core.config import FIELD_SPECS, SpecConfig, reads
from spectui.widgets.param_fields import (
    _KEYS,
    FORM_FIELDS,
    IDS,
    LABELS,
    NARROW_LABEL_WIDTH,
    SELECT_CHROME,
    SELECT_WIDTH,
    SELECTORS,
    FieldInput,
    FieldValidator,
    _is_select,
    _options,
    _text,
    _update,
    label_text,
    tooltip_text,
)

if TYPE_CHECKING:
    from textual.containers import VerticalScroll

    _Widget = VerticalScroll
else:
    _Widget = object


class FormRows(_Widget):
    """Mixin for ParamForm: its rows, which of them are shown, and their marks."""

    _base: SpecConfig
    _status: Static
    _focus_within: bool
    _focused_row: str | None
    _rows: dict[str, Horizontal]
    _labels: dict[str, Label]
    _fields: dict[str, Input | Select[str]]
    _fresh: dict[str, str]
    _error_boxes: dict[str, Static]
    _shown_for: dict[str, Any] | None

    if TYPE_CHECKING:

        def _reason_of(self, key: str) -> str | None: ...

    def _row(self, key: str, text: str) -> Horizontal:
        """A field's row: its label and its input (or select), showing ``text``."""
        widget_id = IDS[key]
        label = Label(label_text(key, False, False), classes="field-label")
        field: Input | Select[str]
        if _is_select(key):
            options = _options(key, text)
            long_names = max(len(name) for name in options) + SELECT_CHROME > SELECT_WIDTH
            if long_names:  # a narrower label column
                label.styles.width = max(NARROW_LABEL_WIDTH, len(LABELS[key]) + 2)
            field = Select(
                [(name, name) for name in options],
                value=text,
                allow_blank=False,
                compact=True,
                id=widget_id,
                tooltip=tooltip_text(key),
                classes="-long-names" if long_names else "",
            )
        else:
            field = FieldInput(
                text,
                id=widget_id,
                max_length=FIELD_SPECS[key].text_max,
                compact=True,
                validators=[FieldValidator(key)],
                validate_on=[],  # the form validates a burst of keys once (_settle)
                tooltip=tooltip_text(key),
            )
        row = Horizontal(label, field, classes="field", id=f"row-{widget_id}")
        self._rows[key], self._labels[key], self._fields[key] = row, label, field
        return row

    def _add_row(self, key: str, text: str | None = None) -> None:
        """Build and mount a field's row in its place (the base's value, or ``text``)."""
        if text is None:
            text = _text(self._base.get(key))
            if not _is_select(key):
                self._fresh[key] = text  # the first Changed of an input, if it is its own
        row = self._row(key, text)
        later = FORM_FIELDS[FORM_FIELDS.index(key) + 1 :]
        before = next((self._rows[k] for k in later if k in self._rows), None)
        self.mount(row, before=before or self._status)

    def _focus_moved(self, focused: Widget | None) -> None:
        row = None  # the field whose row holds the focus (a select's open list included)
        for node in focused.ancestors_with_self if focused is not None else ():
            if node is self:
                break
            if node.id and node.id.startswith("row-"):
                row = _KEYS[node.id[4:]]
        if row != self._focused_row:
            previous, self._focused_row = self._focused_row, row
            for key in (previous, row):
                if key is not None:
                    self._paint_row(key)
        within = focused is not None and self in focused.ancestors
        if within == self._focus_within:
            return
        self._focus_within = within
        self._paint_border()

    def _paint_row(self, key: str) -> None:
        """The row's classes and label marker, from its focus and its error."""
        focused, invalid = key == self._focused_row, self._reason_of(key) is not None
        row = self._rows[key]
        row.set_class(focused, "-focused")
        row.set_class(invalid, "-invalid")
        _update(self._labels[key], label_text(key, focused, invalid))

    def _paint_border(self) -> None:
        if self._focus_within:  # as app.tcss's ParamForm border, at full strength
            primary = Color.parse(self.app.theme_variables["primary"])
            self.styles.border = ("round", primary)
        else:
            for edge in ("top", "right", "bottom", "left"):
                self.styles.clear_rule(f"border_{edge}")
            self.refresh(layout=True)

    # --- what is chosen and what is shown --------------------------------------------------
    def _chosen(self) -> dict[str, Any]:
        """The parts chosen now: each selector's value (the form's, else the base's)."""
        return {
            selector: str(self._fields[selector].value)
            if selector in self._fields
            else self._base.get(selector)
            for selector in SELECTORS
        }

    @staticmethod
    def _reads(key: str, chosen: Mapping[str, Any]) -> bool:
        # engine.core.config.reads looks only at the chosen parts, through .get(selector).
        return reads(cast(SpecConfig, chosen), key)

    def _show_part_fields(self, *, again: bool = False) -> None:
        """Show the fields the chosen parts read (building rows shown for the first time);
        nothing to do if the same parts are chosen as last time, unless ``again``."""
        chosen = self._chosen()
        if chosen == self._shown_for and not again:
            return
        self._shown_for = chosen
        for key in FORM_FIELDS:
            shown = self._reads(key, chosen)
            row = self._rows.get(key)
            if row is None:
                if shown:
                    self._add_row(key)
                continue
            row.display = shown
            error = self._error_boxes.get(key)
            if error is not None:  # back with its row, reason and all
                error.display = shown and self._reason_of(key) is not None

    def visible_fields(self) -> list[str]:
        """The keys of the fields shown now (the chosen parts read them), in form order."""
        chosen = self._chosen()
        return [key for key in FORM_FIELDS if self._reads(key, chosen)]
