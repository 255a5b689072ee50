"""The form's field table: which fields it shows, in what order, their widget ids, labels,
tooltips and help, and the validator and input a text field gets (from
``engine.core.config.FIELD_SPECS``, kept up to date as parts register).
"""

from __future__ import annotations

from typing import Any

from textual.validation import ValidationResult, Validator
from textual.widgets import Input, Static

from engine.core.config import (
    CONFIG_FIELDS,
    FIELD_SPECS,
    PARTS,
    ConfigError,
    FieldSpec,
    known_spec_ids,
    parse_value,
)

# engine.core.config, not engine.acceptance.draft_models: the form must not pull numpy into the
# start-up.
from engine.core.parts import on_change

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
    paste past it is refused whole; keys typed (one by one, or a burst of them: an
    unbracketed paste, :meth:`type_text`) fill it to its length and the rest is refused. A
    toast says so, once for the same text (100 KB of keys into a full field made 100,000
    toasts, each of which looked through all the others).

    Its text is validated by the form, once a burst of keys is handled
    (``ParamForm._settle``), not on each key: a long text is read once, not once per key.
    """

    _refused: str | None = None  # the text the last refusal was shown for

    def type_text(self, text: str) -> None:
        """``text`` typed, as its keys one by one would type it: in place of the selection,
        else at the cursor; the characters past ``max_length`` refused (one toast)."""
        self._restart_blink()
        start, end = sorted(self.selection)
        room = self.max_length - (len(self.value) - (end - start)) if self.max_length else len(text)
        taken = text[: max(room, 0)]
        if taken:
            self.replace(taken, start, end)
        if len(taken) < len(text):
            self.restricted()

    def restricted(self) -> None:
        if self._refused == self.value:
            return
        self._refused = self.value
        key = _KEYS[self.id or ""]
        self.notify(
            f"{LABELS[key]}: at most {self.max_length:,} characters: the text was not taken",
            severity="warning",
        )
