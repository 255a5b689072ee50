"""The parameter form, generated from the field table (``engine.core.config.FIELD_SPECS``).

Each field a person can choose gets a row whose label, tooltip (help, unit, allowed values),
kind (a select among the field's choices or the known hardware/model ids, else a text field)
and visibility (shown only while the chosen parts read it: :func:`engine.core.config.reads`) come
from the table, so a new field or cost model appears here with no edit. Values are validated
as the person types.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Select, Static

from engine.core.config import SpecConfig

# The field table, re-exported: the app, its screens and the tests import it from here.
from spectui.widgets.param_fields import (
    _KEYS,
    FORM_FIELDS,
    IDS,
    LABEL_CHARS,
    LABEL_WIDTH,
    LABELS,
    MARK_FOCUS,
    MARK_INVALID,
    NARROW_LABEL_WIDTH,
    SELECT_CHROME,
    SELECT_WIDTH,
    SELECTORS,
    FieldInput,
    FieldValidator,
    _form_order,
    _has_row,
    _is_select,
    _key,
    _options,
    _reason,
    _refresh,
    _text,
    _update,
    field_help,
    label_text,
    parse_field,
    tooltip_text,
)
from spectui.widgets.param_values import FormValues

__all__ = [
    "FORM_FIELDS",
    "IDS",
    "LABELS",
    "LABEL_CHARS",
    "LABEL_WIDTH",
    "MARK_FOCUS",
    "MARK_INVALID",
    "NARROW_LABEL_WIDTH",
    "SELECTORS",
    "SELECT_CHROME",
    "SELECT_WIDTH",
    "_KEYS",
    "FieldInput",
    "FieldValidator",
    "ParamForm",
    "_form_order",
    "_has_row",
    "_is_select",
    "_key",
    "_options",
    "_reason",
    "_refresh",
    "_text",
    "_update",
    "field_help",
    "label_text",
    "parse_field",
    "tooltip_text",
]


class ParamForm(FormValues, VerticalScroll, can_focus=False):
    """Side panel. Posts :class:`ConfigChanged` whenever the set of values changes.

    Kept light because it is most of the app's start-up: a field's error line is mounted the
    first time the field is wrong, and the border shows focus without a ``:focus-within``
    rule (that rule re-styles every widget in the form on each focus move). The focused row
    and every invalid row carry a class and a marker glyph in their label (see
    :func:`label_text`), so they show in any terminal, with or without colours.

    Errors are kept by field key: ``reasons`` (a field's own text is wrong), and errors of
    the configuration as a whole that name a field (a cost table required but not given,
    or one that cannot be read: :meth:`reject`).
    """

    # A select of long names (position_decay, roofline_max, model ids) keeps every column
    # for the name: no space before its arrow, so the name stays whole beside the scrollbar.
    DEFAULT_CSS = """
    ParamForm Select.-long-names > SelectCurrent .arrow {
        padding: 0;
    }
    """

    def __init__(self, config: SpecConfig, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._base = self._composed_from = config
        self._loading = True  # until mounted: the fields' initial Changed events are not edits
        self._mounted = False
        self._pending_focus = "draft_model"  # focused on mount, unless focus is elsewhere
        self._focus_within = False
        self._focused_row: str | None = None  # the field whose row shows the focus marker
        self.reasons: dict[str, str] = {}  # why each wrong field is wrong, shown or not
        # Fields changed since the last _settle (True: edited, not a new row's own value).
        self._dirty: dict[str, bool] = {}
        self._settling = False  # a _settle is queued
        self.settled = 0  # texts validated (the tests count them)
        self.errors: dict[str, str] = {}
        self._whole: dict[str, str] = {}  # errors of the whole configuration, by field
        self._rejected: tuple[SpecConfig, dict[str, str]] | None = None
        # Rows by field key. A row is built the first time its field is shown: the
        # start-up builds only the chosen parts' fields.
        self._rows: dict[str, Horizontal] = {}
        self._labels: dict[str, Label] = {}
        self._fields: dict[str, Input | Select[str]] = {}
        self._fresh: dict[str, str] = {}  # rows built later: their first Changed is no edit
        self._error_boxes: dict[str, Static] = {}  # a field's error line, once it had one
        self._shown_for: dict[str, Any] | None = None  # the parts whose fields are shown

    def compose(self) -> ComposeResult:
        base = self._composed_from = self._base
        chosen = {selector: base.get(selector) for selector in SELECTORS}
        for key in FORM_FIELDS:
            if self._reads(key, chosen):  # the other fields' rows are built when shown
                yield self._row(key, _text(base.get(key)))
        # Below the fields, in sight however far the form is scrolled; shown when wrong.
        status = self._status = Static("", id="form-status")
        status.styles.dock = "bottom"
        status.display = False
        yield status

    def on_mount(self) -> None:
        self.border_title = "Configuration"
        self._show_part_fields()
        self.watch(self.screen, "focused", self._focus_moved)
        self.watch(self.app, "theme", lambda _: self._paint_border(), init=False)
        self._mounted = True
        if self.screen.focused is None or self._pending_focus != "draft_model":
            self.focus_field(self._pending_focus)
        if self._base is not self._composed_from:  # a preset loaded while the form mounted
            self.load_config(self._base)
        self.call_after_refresh(self._ready)

    @property
    def focused_field(self) -> str | None:
        """The key of the field that holds the focus (a select's open list included)."""
        return self._focused_row

    @property
    def ready(self) -> bool:
        """Mounted, with every field in place."""
        return self._mounted

    def focus_field(self, name: str) -> None:
        """Focus one field, by key or widget id (before the form has mounted: as soon as it
        has)."""
        key = _key(name)
        if not self._mounted:
            self._pending_focus = key
            return
        if key in self._fields:  # (a field whose row is not built is not shown)
            self._fields[key].focus()

    def _ready(self) -> None:
        self._loading = False
        self._emit()

    @property
    def model(self) -> str:
        return str(self._fields["draft_model"].value)

    def on_input_changed(self, event: Input.Changed) -> None:
        """A field's text changed: validated, and the form posted, once the keys queued now
        are handled (:meth:`_settle`). A burst of keys (an unbracketed paste arrives as one
        key each) thus costs one validation and one computation of the figures, not one
        per key, each reading the whole text so far."""
        event.stop()
        key = _KEYS[event.input.id or ""]
        first = self._fresh.pop(key, None) == event.value  # a new row's own value: no edit
        self._dirty[key] = self._dirty.get(key, False) or not first
        if not self._settling:
            self._settling = True
            self.call_later(self._settle)

    def _settle(self) -> None:
        """Validate the fields changed since the last time, mark them, and post the form
        if one of them was edited."""
        self._settling = False
        dirty, self._dirty = self._dirty, {}
        for key in dirty:
            field = self._fields.get(key)
            if not isinstance(field, Input):
                continue
            self.settled += 1
            result = field.validate(field.value)
            if result is None or result.is_valid:
                self.reasons.pop(key, None)
            else:
                self.reasons[key] = result.failure_descriptions[0]
            self._show_error(key)
        if not self._loading and any(dirty.values()):
            self._emit()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if _KEYS.get(event.select.id or "") in SELECTORS and event.value != Select.NULL:
            self._show_part_fields()
        if not self._loading:
            self._emit()
