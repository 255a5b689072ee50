"""The Lab screen (ctrl+t): the ``distribution`` acceptance model seen one context at a time
(docs/app.md; issue #28).

For a context of the model's family at the first draft position (left and right step
through them): the target's most probable tokens as bars of ``p`` and ``q`` with
``min(p, q)``, the mass rejection sampling keeps, marked; the acceptance every rule gives
this context; and the residual a rejected position draws from, ``norm(max(0, p - q))``.
Under it, the per-position rates the model implies for the scenario's rule and K; ``f``
sends them to the form as a ``per_position`` model (the form keeps the rest). Then the
acceptance by rank at a tree node of ``RANKS`` candidates (the multi-candidate rule); ``r``
sends it to the form's ``shape.rank_probs``. A scenario on another acceptance model is
offered the distribution model (``d``).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from spectui.widgets.footer import KeysFooter

TOP = 8  # tokens shown of a context
RANKS = 4  # candidates at a tree node
BAR = 24  # characters of a full bar


class LabScreen(ModalScreen[Any]):
    """The lab on the scenario ``config`` (module docstring); dismissed with a scenario for
    the form (``f``, ``d``) or None (Escape)."""

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("left", "step(-1)", "Previous context"),
        Binding("right", "step(1)", "Next context"),
        Binding("f", "send", "Rates to the form"),
        Binding("r", "send_ranks", "Ranks to the form"),
        Binding("d", "use_model", "Use this model", show=False),
    ]

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config
        self.index = 0
        self.contexts: list[tuple[Any, Any, str]] = []
        self.rates: Any = None
        self.ranks: Any = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="lab-body"):
            yield Static(id="lab-context")
            yield Static(id="lab-rates")
        yield KeysFooter()

    def on_mount(self) -> None:
        if self.config.draft_model != "distribution":
            self.query_one("#lab-context", Static).update(
                Text(
                    f"The lab needs the distribution acceptance model; the form's is "
                    f"{self.config.draft_model}. d: set the form's model to distribution "
                    "(then ctrl+t again); Escape: close."
                )
            )
            return
        self.query_one("#lab-context", Static).update(Text("computing the contexts…"))
        self._load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def _load(self) -> None:
        """The family's contexts and the implied rates, off the app's thread (a large
        vocabulary takes seconds)."""
        from engine.core.config import ConfigError

        try:
            self._compute()
        except ConfigError as error:  # the form's values are checked, but a file may change
            self.app.call_from_thread(
                self.query_one("#lab-context", Static).update, Text(f"lab: {error}")
            )
            return
        self.app.call_from_thread(self._show)

    def _compute(self) -> None:
        from engine.acceptance.distribution import (
            check,
            difficulty_weights,
            family_contexts,
            family_of,
            rank_rates,
        )
        from engine.core.parts import ACCEPTANCE

        check(self.config)
        family = family_of(self.config)
        for g, weight in enumerate(difficulty_weights(self.config)):
            if weight == 0.0:
                continue
            name = ("easy", "hard")[g] if not self.config.dist_file else "file"
            for p_block, q_block in family_contexts(family, g, 1):
                self.contexts.extend((p, q, name) for p, q in zip(p_block, q_block, strict=True))
        self.rates = ACCEPTANCE.of(self.config).position_probs(self.config, int(self.config.k))
        rule = self.config.accept_rule
        self.ranks = rank_rates(self.config, RANKS, (rule,))[rule]

    def _show(self) -> None:
        import numpy as np

        from engine.acceptance.rules import RULES, acceptance

        p, q, difficulty = self.contexts[self.index]
        lines = Text()
        lines.append(
            f"Lab · context {self.index + 1} of {len(self.contexts)} ({difficulty}) at "
            f"position 1 · {self.config.accept_rule}, temperature {self.config.temperature:g}\n",
            style="bold",
        )
        lines.append("token  p" + " " * (BAR - 1) + "q" + " " * (BAR - 1) + "min(p, q)\n")
        scale = max(float(p.max()), float(q.max()), 1e-12)
        for token in np.argsort(-p, kind="stable")[:TOP]:
            kept = min(p[token], q[token])
            lines.append(f"{int(token):>5}  ")
            lines.append(_bar(p[token], kept, scale))
            lines.append(_bar(q[token], kept, scale))
            lines.append(f"{kept:.3f}\n")
        lines.append("█ min(p, q): what rejection sampling keeps; ░ the rest\n")
        values = {rule: float(acceptance(p[None], q[None], rule)[0]) for rule in RULES}
        lines.append(
            "acceptance here: " + ", ".join(f"{rule} {v:.3f}" for rule, v in values.items()) + "\n"
        )
        residual = np.maximum(p - q, 0.0)
        if residual.sum() > 0:
            residual /= residual.sum()
            top = np.argsort(-residual, kind="stable")[:3]
            lines.append(
                "residual norm(max(0, p - q)): "
                + ", ".join(f"token {int(t)} {residual[t]:.3f}" for t in top)
            )
        else:
            lines.append("residual: none (p = q: every draft is kept)")
        self.query_one("#lab-context", Static).update(lines)
        rates = ", ".join(f"{r:.3f}" for r in self.rates)
        self.query_one("#lab-rates", Static).update(
            Text(
                f"\nrates the model implies at positions 1..{len(self.rates)} "
                f"({self.config.accept_rule}): {rates}\n"
                f"by rank at a tree node of {RANKS} candidates: "
                + ", ".join(f"{r:.3f}" for r in self.ranks)
                + "\nf: send the rates to the form as per_position rates · r: the ranks as the "
                "tree's rank p · ←/→: context · Escape: close"
            )
        )

    def action_step(self, delta: int) -> None:
        if self.contexts and self.rates is not None:
            self.index = (self.index + delta) % len(self.contexts)
            self._show()

    def action_send(self) -> None:
        if self.rates is None:
            return
        from engine.acceptance.per_position import rates_text

        self.app.notify(f"per_position rates from the lab ({self.config.accept_rule})")
        self.dismiss(
            self.config.replace(
                **{"draft_model": "per_position", "acceptance.rates": rates_text(self.rates)}
            )
        )

    def action_send_ranks(self) -> None:
        if self.ranks is None:
            return
        from engine.acceptance.distribution import rank_probs_text

        self.app.notify(f"tree rank p from the lab ({self.config.accept_rule})")
        self.dismiss(self.config.replace(**{"shape.rank_probs": rank_probs_text(self.ranks)}))

    def action_use_model(self) -> None:
        if self.config.draft_model != "distribution":
            self.dismiss(self.config.replace(draft_model="distribution"))


def _bar(value: float, kept: float, scale: float) -> Text:
    """A bar of ``value`` whose first ``kept`` is solid (the rest shaded)."""
    solid = round(BAR * kept / scale)
    total = max(round(BAR * value / scale), solid)
    return Text("█" * solid + "░" * (total - solid) + " " * (BAR - total))
