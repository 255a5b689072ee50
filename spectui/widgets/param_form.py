"""The parameter form: one field per configuration value, validated as the person types."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Horizontal, VerticalScroll
from textual.validation import ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

# engine.config, not engine.draft_models: the form must not pull numpy into the start-up.
from engine.config import (
    FIELD_SPECS,
    MODEL_PARAMETERS,
    MODEL_READS,
    ConfigError,
    SpecConfig,
    parse_value,
)
from spectui.messages import ConfigChanged

# Text fields in form order; the model's own parameters sit right after the acceptance rate.
TEXT_FIELDS: tuple[str, ...] = (
    "k",
    "acceptance_rate",
    "decay_base",
    "decay_factor",
    "entropy_high",
    "entropy_low",
    "entropy_frac",
    "draft_cost_us",
    "verify_cost_us",
    "n_sequences",
    "tokens_per_seq",
    "seed",
)
# At most LABEL_CHARS characters each: a label never wraps (a wrapped label shows its first line).
LABEL_CHARS = 9
LABELS: dict[str, str] = {
    "draft_model": "model",
    "k": "K",
    "acceptance_rate": "accept",
    "decay_base": "first p",
    "decay_factor": "decay ×",
    "entropy_high": "p easy",
    "entropy_low": "p hard",
    "entropy_frac": "hard frac",
    "draft_cost_us": "draft us",
    "verify_cost_us": "verify us",
    "n_sequences": "sequences",
    "tokens_per_seq": "tok/seq",
    "seed": "seed",
    "tail": "tail",
}


# The glyph before a label: it carries focus and errors where colours do not (16 colours,
# NO_COLOR). An error outranks focus; the focused row is also shown in reverse video.
MARK_INVALID = "✗"
MARK_FOCUS = "▶"


def label_text(name: str, focused: bool, invalid: bool) -> str:
    """A field's label with its marker glyph (a space when neither focused nor invalid)."""
    mark = MARK_INVALID if invalid else MARK_FOCUS if focused else " "
    return mark + LABELS[name]


def parse_field(name: str, text: str) -> Any:
    """The value of one field from its text; ConfigError (naming the field) if wrong."""
    return parse_value(name, text)


class FieldValidator(Validator):
    """Checks one configuration field with the engine's own rules and messages."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.field_name = name

    def validate(self, value: str) -> ValidationResult:
        try:
            parse_field(self.field_name, value)
        except ConfigError as err:
            return self.failure(str(err).split(": ", 1)[1])
        return self.success()


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    return str(value)


class ParamForm(VerticalScroll, can_focus=False):
    """Side panel. Posts :class:`ConfigChanged` whenever the set of values changes.

    Kept light because it is most of the app's start-up: a field's error line is mounted the
    first time the field is wrong, and the border shows focus without a ``:focus-within``
    rule (that rule re-styles every widget in the form on each focus move). The focused row
    and every invalid row carry a class and a marker glyph in their label (see
    :func:`label_text`), so they show in any terminal, with or without colours.
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

    def compose(self) -> ComposeResult:
        base = self._composed_from = self._base
        yield from self._choice_row("draft_model", base.draft_model)
        for name in TEXT_FIELDS:
            spec = FIELD_SPECS[name]
            with Horizontal(classes="field", id=f"row-{name}"):
                yield Label(label_text(name, False, False), classes="field-label")
                yield Input(
                    _text(getattr(base, name)),
                    id=name,
                    compact=True,
                    validators=[FieldValidator(name)],
                    validate_on=["changed"],
                    tooltip=spec.help + (f" ({spec.unit})" if spec.unit else ""),
                )
        yield from self._choice_row("tail", base.tail)
        yield Static("", id="form-status")

    @staticmethod
    def _choice_row(name: str, value: str) -> ComposeResult:
        """A select among the field's choices (the draft model, the tail rule)."""
        with Horizontal(classes="field", id=f"row-{name}"):
            yield Label(label_text(name, False, False), classes="field-label")
            yield Select(
                [(c, c) for c in FIELD_SPECS[name].choices],
                value=value,
                allow_blank=False,
                compact=True,
                id=name,
                tooltip=FIELD_SPECS[name].help,
            )

    def on_mount(self) -> None:
        self.border_title = "Configuration"
        self._show_model_fields(self._base.draft_model)
        self.watch(self.screen, "focused", self._focus_moved)
        self.watch(self.app, "theme", lambda _: self._paint_border(), init=False)
        self._mounted = True
        if self.screen.focused is None or self._pending_focus != "draft_model":
            self.query_one(f"#{self._pending_focus}").focus()
        if self._base is not self._composed_from:  # a preset loaded while the form mounted
            self.load_config(self._base)
        self.call_after_refresh(self._ready)

    @property
    def ready(self) -> bool:
        """Mounted, with every field in place."""
        return self._mounted

    def focus_field(self, name: str) -> None:
        """Focus one field (before the form has mounted: as soon as it has)."""
        if not self._mounted:
            self._pending_focus = name
            return
        self.query_one(f"#{name}").focus()

    def _focus_moved(self, focused: Widget | None) -> None:
        row = None  # the field whose row holds the focus (a select's open list included)
        for node in focused.ancestors_with_self if focused is not None else ():
            if node is self:
                break
            if node.id and node.id.startswith("row-"):
                row = node.id[4:]
        if row != self._focused_row:
            previous, self._focused_row = self._focused_row, row
            for name in (previous, row):
                if name is not None:
                    self._paint_row(name)
        within = focused is not None and self in focused.ancestors
        if within == self._focus_within:
            return
        self._focus_within = within
        self._paint_border()

    def _paint_row(self, name: str) -> None:
        """The row's classes and label marker, from its focus and its error."""
        focused, invalid = name == self._focused_row, name in self.reasons
        row = self.query_one(f"#row-{name}")
        row.set_class(focused, "-focused")
        row.set_class(invalid, "-invalid")
        row.query_one(".field-label", Label).update(label_text(name, focused, invalid))

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

    def _show_model_fields(self, model: str) -> None:
        reads = set(MODEL_READS[model])
        for name in MODEL_PARAMETERS:
            self.query_one(f"#row-{name}").display = name in reads
            for error in self.query(f"#error-{name}"):  # back with its row, reason and all
                error.display = name in reads and name in self.reasons

    def visible_fields(self) -> list[str]:
        reads = set(MODEL_READS[self.model])
        return [n for n in TEXT_FIELDS if n not in MODEL_PARAMETERS or n in reads]

    @property
    def model(self) -> str:
        return str(self.query_one("#draft_model", Select).value)

    def load_config(self, config: SpecConfig) -> None:
        """Show ``config`` in every field (e.g. a loaded preset)."""
        if not self._mounted:  # compose, or on_mount, picks it up
            self._base = config
            return
        self._loading = True
        try:
            self._base = config
            self.query_one("#draft_model", Select).value = config.draft_model
            self.query_one("#tail", Select).value = config.tail
            for name in TEXT_FIELDS:
                field_input = self.query_one(f"#{name}", Input)
                field_input.value = _text(getattr(config, name))
                field_input.validate(field_input.value)
                self._set_error(name, None)
            self._show_model_fields(config.draft_model)
        finally:
            self._loading = False
        self._emit()

    def set_field(self, name: str, text: str) -> None:
        """Type ``text`` into one field (used by tests and the sweep's cell selection)."""
        self.query_one(f"#{name}", Input).value = text

    def _set_error(self, name: str, message: str | None) -> None:
        if message:
            self.reasons[name] = message
        else:
            self.reasons.pop(name, None)
        self._paint_row(name)
        found = self.query(f"#error-{name}")
        if not found:
            if not message:
                return
            box = Static("", classes="field-error", id=f"error-{name}")
            self.mount(box, after=self.query_one(f"#row-{name}"))
        else:
            box = found.first(Static)
        box.update(f"{MARK_INVALID} {message}" if message else "")
        box.display = bool(message) and bool(self.query_one(f"#row-{name}").display)

    def current_config(self) -> tuple[SpecConfig | None, dict[str, str]]:
        """The configuration the form holds, or None and the reasons per field."""
        values: dict[str, Any] = {
            "draft_model": self.model,
            "tail": str(self.query_one("#tail", Select).value),
        }
        errors: dict[str, str] = {}
        for name in TEXT_FIELDS:
            text = self.query_one(f"#{name}", Input).value
            try:
                values[name] = parse_field(name, text)
            except ConfigError as err:
                if name in self.visible_fields():
                    errors[name] = str(err).split(": ", 1)[1]
                else:  # an inert, hidden field keeps its last valid value
                    values[name] = getattr(self._base, name)
        if errors:
            return None, errors
        try:
            return SpecConfig(**values), {}
        except ConfigError as err:  # pragma: no cover - fields are checked one by one above
            return None, {err.field: str(err)}

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        name = event.input.id or ""
        result = event.validation_result
        failure = None if result is None or result.is_valid else result.failure_descriptions[0]
        self._set_error(name, failure)
        if not self._loading:
            self._emit()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.select.id == "draft_model" and event.value != Select.NULL:
            self._show_model_fields(str(event.value))
        if not self._loading:
            self._emit()

    def _emit(self) -> None:
        config, errors = self.current_config()
        self.errors = errors
        status = self.query_one("#form-status", Static)
        if errors:
            names = ", ".join(LABELS[n] for n in errors)
            status.update(f"{MARK_INVALID} invalid: {names} — fix to run")
            status.add_class("-invalid")
        else:
            status.update("")
            status.remove_class("-invalid")
        self.post_message(ConfigChanged(config, errors))
