"""The form's values in and out: loading a configuration, reading one back, and showing
what is wrong with it (a mixin of :class:`spectui.widgets.param_form.ParamForm`).
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Select, Static
from textual.widgets.select import InvalidSelectValueError

from engine.core.config import FIELD_SPECS, ConfigError, SpecConfig
from spectui.confined import OutsideFiles, confine
from spectui.messages import ConfigChanged
from spectui.widgets.param_fields import (
    IDS,
    LABELS,
    MARK_INVALID,
    _key,
    _options,
    _reason,
    _text,
    _update,
    parse_field,
)
from spectui.widgets.param_rows import FormRows


class FormValues(FormRows):
    """Mixin for ParamForm: its values in and out, and its errors."""

    _loading: bool
    _mounted: bool
    reasons: dict[str, str]
    errors: dict[str, str]
    _whole: dict[str, str]
    _rejected: tuple[SpecConfig, dict[str, str]] | None

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
