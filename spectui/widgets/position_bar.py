"""Per-position acceptance: observed in the run against the model's p_i."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

MAX_POSITIONS = 16
BLOCKS = " ▁▂▃▄▅▆▇█"


def _glyph(value: float) -> str:
    if value != value:
        return " "
    return BLOCKS[round(max(0.0, min(1.0, value)) * (len(BLOCKS) - 1))]


def _two(value: float) -> str:
    """A probability in three characters: .80, 1.0, or — for no data."""
    if value != value:
        return " — "
    return "1.0" if value >= 0.995 else f"{value:.2f}"[1:]


class PositionBar(Static):
    """One line per draft position: a block glyph of the observed rate, and both numbers."""

    def on_mount(self) -> None:
        self.border_title = "acc@i"
        self.reset()

    def reset(self) -> None:
        """No run shown: say what the bar will show."""
        self.update("observed\nvs p_i")

    def show(self, observed: list[float], model_probs: list[float]) -> None:
        table = Table.grid(padding=(0, 0))
        table.add_column(justify="right")
        table.add_column()
        table.add_column(justify="right")
        table.add_column(justify="right")
        table.add_row("i", "", "obs", " p_i")
        for i, (obs, prob) in enumerate(zip(observed, model_probs, strict=False), start=1):
            if i > MAX_POSITIONS:
                table.add_row("…", "", f"+{len(model_probs) - MAX_POSITIONS}", "")
                break
            table.add_row(str(i), Text(_glyph(obs), style="bold"), _two(obs), " " + _two(prob))
        self.update(table)
