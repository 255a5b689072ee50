"""The parameter form, generated from the field table (``engine.core.config.FIELD_SPECS``).

Each field a person can choose gets a row whose label, tooltip (help, unit, allowed values),
kind (a select among the field's choices or the known hardware/model ids, else a text field)
and visibility (shown only while the chosen parts read it: :func:`engine.core.config.reads`) come
from the table, so a new field or cost model appears here with no edit. Values are validated
as the person types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Horizontal, VerticalScroll
from textual.validation import ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static
from textual.widgets.select import InvalidSelectValueError

from engine.core.config import (
    CONFIG_FIELDS,
    FIELD_SPECS,
    PARTS,
    ConfigError,
    FieldSpec,
    SpecConfig,
    known_spec_ids,
    parse_value,
    reads,
)

# engine.core.config, not engine.acceptance.draft_models: the form must not pull numpy into the
# start-up.
from engine.core.parts import on_change
from spectui.confined import OutsideFiles, confine
from spectui.messages import ConfigChanged

# The fields that choose a part of the scenario (draft model, cost model, policy, shape).
SELECTORS: frozenset[str] = frozenset(selector for selector, _ in PARTS.values())


def _has_row(spec: FieldSpec) -> bool:
    """A choice among fewer than two names has nothing to choose: no row."""
    return spec.kind != "choice" or len(spec.choices) >= 2


def _form_order() -> tuple[str, ...]:
    """The form's fields: the original's first (as it always showed them), then the workload,
    then each newer part's selector and its fields.

    Within a section, fields in table order, except that the fields a part reads sit
    together where the first of them is (the draft models' parameters after the acceptance
    rate, the linear costs after them).
    """
    keys = list(FIELD_SPECS)

    def section(key: str) -> int:
        spec = FIELD_SPECS[key]
        if key in CONFIG_FIELDS:
            return 0
        return 1 if spec.part is None and key not in SELECTORS else 2

    def place(key: str) -> tuple[int, int, int]:
        spec = FIELD_SPECS[key]
        anchor = keys.index(key)
        if spec.part is not None:  # first field of the same part in the same section
            anchor = min(
                i
                for i, other in enumerate(keys)
                if section(other) == section(key)
                and (part := FIELD_SPECS[other].part) is not None
                and part[0] == spec.part[0]
            )
        return section(key), anchor, keys.index(key)

    return tuple(sorted((k for k in keys if _has_row(FIELD_SPECS[k])), key=place))


# The form's fields, widget ids and labels: kept up to date as parts register (the lists
# and dicts are changed in place, so that every module holding them sees a new part).
FORM_FIELDS: list[str] = []
# A field's widget id: its attribute name (a dotted key is not a valid id).
IDS: dict[str, str] = {}
_KEYS: dict[str, str] = {}
# At most LABEL_CHARS characters each: a label never wraps (a wrapped label shows its first line).
LABEL_CHARS = 9
LABELS: dict[str, str] = {}


def _refresh() -> None:
    FORM_FIELDS[:] = _form_order()
    IDS.clear()
    IDS.update((key, FIELD_SPECS[key].attr) for key in FORM_FIELDS)
    _KEYS.clear()
    _KEYS.update((widget_id, key) for key, widget_id in IDS.items())
    LABELS.clear()
    LABELS.update(
        (key, FIELD_SPECS[key].label or key.rsplit(".", 1)[-1][:LABEL_CHARS]) for key in FIELD_SPECS
    )


_refresh()
on_change(_refresh)
LABEL_WIDTH = 11  # the label column: marker glyph, label, a space (app.tcss)
SELECT_WIDTH = 11  # what is left of the side panel (and its scrollbar) beside a full label
NARROW_LABEL_WIDTH = 7  # beside a select of long names (as app.tcss's for the draft model)
SELECT_CHROME = 2  # a compact select's arrow and the space before it


# The glyph before a label: it carries focus and errors where colours do not (16 colours,
# NO_COLOR). An error outranks focus; the focused row is also shown in reverse video.
MARK_INVALID = "✗"
MARK_FOCUS = "▶"


def _update(widget: Static, text: str) -> None:
    """Show ``text`` in ``widget``, unless it shows it already: each update lays the screen
    out again, and most keys typed into a field change no label, error or status line."""
    if widget.content != text:
        widget.update(text)


def label_text(name: str, focused: bool, invalid: bool) -> str:
    """A field's label with its marker glyph (a space when neither focused nor invalid)."""
    mark = MARK_INVALID if invalid else MARK_FOCUS if focused else " "
    return mark + LABELS[_key(name)]


def tooltip_text(key: str) -> str:
    """A field's help, its unit and what it allows, from the table."""
    spec = FIELD_SPECS[key]
    unit = f" ({spec.unit})" if spec.unit else ""
    return f"{spec.help}{unit}\n{key}: {spec.allowed()}"


def field_help(key: str) -> str:
    """What F1 shows for the focused field (Markdown): its label, key and flag, its help,
    unit and allowed values, from the table (the tooltip's text, for the keyboard)."""
    spec = FIELD_SPECS[key]
    lines = [
        f"## Field `{LABELS[key]}`: `{key}` (`spectui run {spec.cli_flag}`)",
        "",
        spec.help[:1].upper() + spec.help[1:] + ".",
        "",
        f"* allowed: {spec.allowed()}",
    ]
    if spec.unit:
        lines.insert(4, f"* unit: {spec.unit}")
    if spec.part is not None:
        selector, names = spec.part
        lines.append(f"* read when `{LABELS[selector]}` is {' or '.join(names)}")
    return "\n".join(lines)


def _key(name: str) -> str:
    """A field's key from its key or its widget id (attribute name)."""
    return name if name in FIELD_SPECS else _KEYS[name]


def parse_field(name: str, text: str) -> Any:
    """The value of one field from its text; ConfigError (naming the field) if wrong."""
    return parse_value(_key(name), text)


def _reason(err: ConfigError) -> str:
    return str(err).split(": ", 1)[1]


class FieldValidator(Validator):
    """Checks one configuration field with the engine's own rules and messages."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.field_name = name

    def validate(self, value: str) -> ValidationResult:
        try:
            parse_field(self.field_name, value)
        except ConfigError as err:
            return self.failure(_reason(err))
        return self.success()


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    return str(value)


def _options(key: str, value: str) -> list[str]:
    """What a select offers: the field's choices, or the known ids of its kind (with the
    current value, should it not be among them)."""
    spec = FIELD_SPECS[key]
    names = list(spec.choices if spec.kind == "choice" else known_spec_ids(spec.choices[0]))
    return names if value in names else [*names, value]


def _is_select(key: str) -> bool:
    return FIELD_SPECS[key].kind in ("choice", "spec")


class FieldInput(Input):
    """A form field's input, at most its field's ``text_max`` characters long: a longer
    paste (or keystroke) past it is refused whole, and a toast says so."""

    def restricted(self) -> None:
        key = _KEYS[self.id or ""]
        self.notify(
            f"{LABELS[key]}: at most {self.max_length:,} characters: the text was not taken",
            severity="warning",
        )


class ParamForm(VerticalScroll, can_focus=False):
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
                validate_on=["changed"],
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

    def _ready(self) -> None:
        self._loading = False
        self._emit()

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

    @property
    def model(self) -> str:
        return str(self._fields["draft_model"].value)

    # --- values in and out -----------------------------------------------------------------
    def load_config(self, config: SpecConfig) -> None:
        """Show ``config`` in every field (e.g. a loaded preset)."""
        if not self._mounted:  # compose, or on_mount, picks it up
            self._base = config
            return
        self._loading = True
        try:
            self._base = config
            self._rejected = None
            for key, field in self._fields.items():  # rows not built yet start from the base
                value = config.get(key)
                if isinstance(field, Select):
                    try:
                        field.value = value
                    except InvalidSelectValueError:  # an id the list lacks: added
                        field.set_options([(n, n) for n in _options(key, value)])
                        field.value = value
                    continue
                field.value = _text(value)
                field.validate(field.value)
                self.reasons.pop(key, None)
                self._show_error(key)
            self._show_part_fields()
        finally:
            self._loading = False
        self._emit()

    def set_field(self, name: str, text: str) -> None:
        """Type ``text`` into one field, by key or widget id (used by tests and the sweep's
        cell selection); a select takes one of its options."""
        key = _key(name)
        if key not in self._fields:
            self._add_row(key, text)  # shown if the chosen parts read it
            self._show_part_fields(again=True)
        else:
            self._fields[key].value = text

    def _reason_of(self, key: str) -> str | None:
        return self.reasons.get(key) or self._whole.get(key) or None

    def _show_error(self, key: str) -> None:
        """The row's marker and its error line, from the field's reason (if any)."""
        message = self._reason_of(key)
        self._paint_row(key)
        box = self._error_boxes.get(key)
        if box is None:
            if not message:
                return
            box = Static("", classes="field-error", id=f"error-{IDS[key]}")
            self._error_boxes[key] = box
            self.mount(box, after=self._rows[key])
        _update(box, f"{MARK_INVALID} {message}" if message else "")
        box.display = bool(message) and bool(self._rows[key].display)

    def current_config(self) -> tuple[SpecConfig | None, dict[str, str]]:
        """The configuration the form holds, or None and the reasons per field (by key)."""
        values: dict[str, Any] = self._base.values()  # fields without a row keep theirs
        errors: dict[str, str] = {}
        visible = set(self.visible_fields())
        for key, field in self._fields.items():
            if isinstance(field, Select):
                values[key] = str(field.value)
                continue
            try:
                values[key] = parse_field(key, field.value)
                if FIELD_SPECS[key].kind == "path" and values[key]:
                    confine(values[key])  # a served app opens its own folders only
            except (ConfigError, OutsideFiles) as err:
                if key in visible:
                    errors[key] = _reason(err) if isinstance(err, ConfigError) else str(err)
                else:  # an inert, hidden field keeps its last valid value
                    values[key] = self._base.get(key)
        if errors:
            return None, errors
        try:
            return self._base.replace(**values), {}
        except ConfigError as err:  # e.g. the table cost model without a table file
            return None, {err.field: _reason(err)}

    def reject(self, config: SpecConfig, field: str, reason: str) -> bool:
        """``config`` cannot be used because of ``field`` (e.g. its cost table cannot be read):
        if the form still holds it, mark the field and post the form as invalid. The mark
        goes with the next edit (and comes back if the next configuration fails the same way).
        False if the form has no such field (the caller tells the person otherwise)."""
        if field not in self._rows:
            return False
        if self.current_config()[0] == config:
            self._rejected = (config, {field: reason})
            self._emit()
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        key = _KEYS[event.input.id or ""]
        first = self._fresh.pop(key, None) == event.value  # a new row's own value: no edit
        result = event.validation_result
        failure = None if result is None or result.is_valid else result.failure_descriptions[0]
        if failure:
            self.reasons[key] = failure
        else:
            self.reasons.pop(key, None)
        self._show_error(key)
        if not self._loading and not first:
            self._emit()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if _KEYS.get(event.select.id or "") in SELECTORS and event.value != Select.NULL:
            self._show_part_fields()
        if not self._loading:
            self._emit()

    def _emit(self) -> None:
        config, errors = self.current_config()
        if self._rejected is not None and config is not None:
            if config == self._rejected[0]:
                config, errors = None, dict(self._rejected[1])
            else:  # edited since: the next computation says whether it is still wrong
                self._rejected = None
        # Errors of the whole configuration that name a field: shown at that field.
        whole = {k: why for k, why in errors.items() if k in self._rows and k not in self.reasons}
        previous, self._whole = self._whole, whole
        for key in previous.keys() | whole.keys():
            if previous.get(key) != whole.get(key):
                self._show_error(key)
        self.errors = errors
        status = self._status
        if errors:
            names = ", ".join(LABELS.get(n, n) for n in errors)
            _update(status, f"{MARK_INVALID} invalid: {names} — fix to run")
            status.add_class("-invalid")
            status.display = True
        else:
            status.display = False
            _update(status, "")
            status.remove_class("-invalid")
        self.post_message(ConfigChanged(config, errors))
