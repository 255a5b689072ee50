"""Summary cards of one Monte Carlo run."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid
from textual.widgets import Static

from spectui.widgets.common import fmt, half_width

CARDS: tuple[tuple[str, str], ...] = (
    ("speedup", "speedup"),
    ("tokens", "tokens/cyc"),
    ("acceptance", "acceptance"),
    ("waste", "waste"),
    ("draft", "draft time"),
    ("cycles", "cycles"),
)


class SummaryCards(Grid):
    """Six small cards; empty until a run finishes. Class ``-stale``: the run shown is not
    of the form's configuration (struck through, which survives 16 colours and NO_COLOR)."""

    DEFAULT_CSS = """
    SummaryCards.-stale .card {
        color: $text-muted;
        text-style: strike;
    }
    """

    def compose(self) -> ComposeResult:
        for key, title in CARDS:
            card = Static("—", id=f"card-{key}", classes="card")
            card.border_title = title
            yield card

    def clear(self, note: str = "—") -> None:
        for key, _ in CARDS:
            card = self.query_one(f"#card-{key}", Static)
            card.update(note)
            card.border_subtitle = ""

    def show(self, metrics: dict[str, float]) -> None:
        """Show a run's metrics exactly as the engine computed them."""
        text = {
            "speedup": f"{fmt(metrics['speedup'], speedup=True)} "
            + half_width(metrics["speedup_ci95"]),
            "tokens": fmt(metrics["tokens_per_cycle"]),
            "acceptance": fmt(metrics["acceptance_observed"]),
            "waste": fmt(metrics["waste"]),
            "draft": fmt(metrics["draft_time_fraction"]),
            "cycles": f"{int(metrics['cycles']):,}",
        }
        for key, value in text.items():
            self.query_one(f"#card-{key}", Static).update(value)
        # The exact values sit in the bottom border, beside the Monte Carlo ones.
        speedup_card = self.query_one("#card-speedup", Static)
        speedup_card.border_subtitle = f"exact {fmt(metrics['speedup_exact'], speedup=True)}"
        tokens_card = self.query_one("#card-tokens", Static)
        tokens_card.border_subtitle = f"exact {fmt(metrics['tokens_per_cycle_exact'])}"
