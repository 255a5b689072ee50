"""The form's acceptance from the catalog: a method field and a dataset field.

:class:`MethodFields` holds two selects, the catalog's methods
(engine.acceptance.catalog.METHODS) and datasets (engine.acceptance.nearest.dataset_names),
and posts :class:`MethodFields.Chosen` when either changes. :class:`CatalogProvenance` is
what the form's host keeps: :meth:`~CatalogProvenance.choose` gives the configuration with
the acceptance fields the nearest rows' fit sets (engine.acceptance.nearest.
catalog_acceptance, as ``spectui run --method`` does), and :meth:`~CatalogProvenance.line`
the line the Exact panel shows under its figures (:meth:`spectui.widgets.exact_panel.
ExactPanel.set_provenance`): which rows, their sources and how near, or, once an
acceptance field was edited after, that the edit won and the catalog is no longer used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, Select

from engine.core.config import DEFAULTS, SpecConfig

METHOD_ID, DATASET_ID = "catalog-method", "catalog-dataset"
NO_METHOD = "none"  # the form's own acceptance (one line in the side panel's width)
ANY_DATASET = "any"
NO_METHOD_HINT = "assumed unless measured: a method takes it from the catalog"


def _acceptance_label(config: SpecConfig) -> str:
    from engine.core.parts import ACCEPTANCE

    return str(ACCEPTANCE.of(config).label(config))


class CatalogProvenance:
    """Where the form's acceptance comes from: nothing chosen, the catalog's fit for a
    method (and dataset), or an edit made after it."""

    def __init__(self) -> None:
        self.method: str | None = None
        self.fitted: dict[str, Any] = {}  # the fit's values, as the form was given them
        self.text: str | None = None  # the catalog's line for them

    def choose(
        self, method: str | None, dataset: str | None, config: SpecConfig
    ) -> SpecConfig | None:
        """``config`` with the acceptance of ``method``'s nearest rows for its target (and
        draft, when not the default), or None when nothing changes: no method, or nothing
        near (the line then says what is assumed)."""
        from engine.acceptance.catalog import load_catalog
        from engine.acceptance.nearest import catalog_acceptance

        self.method, self.fitted, self.text = method, {}, None
        if method is None:
            return None
        draft = str(config.get("cost.draft"))
        found = catalog_acceptance(
            load_catalog(),
            method,
            config,
            target=str(config.get("cost.target")),
            draft=None if draft == DEFAULTS["cost.draft"] else draft,
            dataset=dataset,
        )
        target = f"target {config.get('cost.target')}"
        if not found.found:
            self.text = (
                f"acceptance: {found.text}; {target}; assumed {_acceptance_label(config)}, "
                "as the form says"
            )
            return None
        self.fitted = dict(found.values)
        self.text = f"acceptance: {found.text}; {target}"
        if found.assumed:
            self.text += f"; assumed: {found.assumed}"
        return config.replace(**self.fitted)

    def line(self, config: SpecConfig | None) -> str | None:
        """The line under the figures of ``config`` (what the form now holds): the
        catalog's, or, when an acceptance field no longer holds the fit's value, that the
        edit won; without a method, that the form's acceptance is the form's own (None for
        an invalid form)."""
        if config is None:
            return None
        if self.method is None:
            return f"acceptance: {_acceptance_label(config)}, as the form says ({NO_METHOD_HINT})"
        if self.fitted and any(config.get(k) != v for k, v in self.fitted.items()):
            return (
                f"acceptance: {_acceptance_label(config)}, as edited: the catalog's fit for "
                f"{self.method} is no longer used"
            )
        return self.text


class MethodFields(Vertical):
    """A method and a dataset of the acceptance catalog, chosen for the form."""

    DEFAULT_CSS = """
    MethodFields { height: auto; }
    MethodFields Horizontal { height: 1; }
    MethodFields Label { width: 8; color: $text-muted; }
    MethodFields Select { width: 1fr; }
    MethodFields Select.-textual-compact > SelectCurrent { padding: 0; }
    MethodFields SelectCurrent #label { text-wrap: nowrap; text-overflow: ellipsis; }
    MethodFields Select > SelectOverlay { width: 32; border: round $primary; }
    """

    @dataclass
    class Chosen(Message):
        """A method (None: none) or dataset (None: any) was chosen."""

        method: str | None
        dataset: str | None

    def compose(self) -> ComposeResult:
        from engine.acceptance.catalog import METHODS, load_catalog
        from engine.acceptance.nearest import dataset_names

        with Horizontal():
            yield Label("method")
            yield Select(
                [(name, name) for name in METHODS], prompt=NO_METHOD, compact=True, id=METHOD_ID
            )
        with Horizontal():
            yield Label("dataset")
            yield Select(
                [(name, name) for name in dataset_names(load_catalog())],
                prompt=ANY_DATASET,
                compact=True,
                id=DATASET_ID,
            )

    def _value(self, widget_id: str) -> str | None:
        value = self.query_one(f"#{widget_id}", Select).value
        return None if value == Select.NULL else str(value)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.post_message(self.Chosen(self._value(METHOD_ID), self._value(DATASET_ID)))
