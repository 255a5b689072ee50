"""Pin and compare (F9): a result kept while the form changes, and how it differs from now.

Pinned: the form's configuration, its exact speedup curve and K* (the Speedup view's, by
:func:`spectui.widgets.speedup_view.exact_curve`), its exact speedup at the form's K (the
Exact panel's) and, when the Run view showed a run of it, that run's Monte Carlo metrics.
The Speedup view draws the pinned curve behind the current one; the Run view says, under
its cards, the difference in speedup and K* then and now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.analysis.formatting import speedup_text
from engine.core.config import FIELD_SPECS, SpecConfig

CHANGES_SHOWN = 2  # changed fields named in the comparison line; "+N more" for the rest


@dataclass(frozen=True)
class Figures:
    """A configuration's exact curve (K values, speedups), its K* and its exact speedup at
    its own K."""

    ks: list[int]
    exact: list[float]
    k_star: int
    speedup: float


@dataclass(frozen=True)
class Pinned:
    config: SpecConfig
    figures: Figures
    run: dict[str, float] | None  # the Monte Carlo metrics of a run of ``config``, if shown

    def curve(self) -> tuple[str, list[int], list[float]]:
        """The Speedup plot's pinned curve: (legend label, ks, speedups)."""
        label = f"pinned K={self.config.k} (K*={self.figures.k_star}): {short_label(self)}"
        return label, self.figures.ks, self.figures.exact


def short_label(pinned: Pinned) -> str:
    from spectui.widgets.speedup_view import config_label

    return config_label(pinned.config)


def figures(config: SpecConfig, cancelled: Callable[[], bool] = lambda: False) -> Figures | None:
    """:class:`Figures` of ``config`` (off the UI thread: it loads the engine); None if
    ``cancelled()`` turned true while the curve was searched for K*."""
    from engine.simulate.exact import exact_metrics
    from spectui.widgets.speedup_view import exact_curve

    found = exact_curve(config, cancelled)
    if found is None:
        return None
    ks, exact = found
    k_star = ks[max(range(len(ks)), key=lambda i: exact[i])]
    return Figures(ks, exact, k_star, float(exact_metrics(config)["speedup_exact"]))


def changed_fields(then: SpecConfig, now: SpecConfig) -> list[str]:
    """``label then→now`` for each field that differs, in the table's order."""
    from spectui.widgets.param_form import LABELS

    changes = []
    for key in FIELD_SPECS:
        old, new = then.get(key), now.get(key)
        if old != new:
            numbers = _number(old) and _number(new)
            changes.append(f"{LABELS[key]} {_short(old)}→{_short(new)}" if numbers else LABELS[key])
    return changes


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _short(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def compare_text(
    pinned: Pinned, now: SpecConfig | None, figures_now: Figures | None, run_now: Any
) -> str:
    """The Run view's lines under the cards: Δ speedup (Monte Carlo when both have a run,
    else exact), K* then and now, and what changed. ``run_now``: the metrics of a run of
    ``now`` shown, or None."""
    then = pinned.figures
    head = f"speedup {speedup_text(then.speedup, 3)} · K* {then.k_star}"
    if now is None:
        return f"pinned: {head} · form invalid"
    if now == pinned.config:
        return f"pinned: {head} · change the form to compare"
    if figures_now is None:
        return f"pinned: {head} · now: computing…"
    if pinned.run is not None and run_now is not None:
        old, new, kind = pinned.run["speedup"], run_now["speedup"], "Monte Carlo"
    else:
        old, new, kind = then.speedup, figures_now.speedup, "exact"
    changes = changed_fields(pinned.config, now)
    more = len(changes) - CHANGES_SHOWN
    changed = ", ".join(changes[:CHANGES_SHOWN]) + (f" +{more} more" if more > 0 else "")
    return (
        f"vs pinned: Δ speedup {new - old:+.3f}x ({speedup_text(old, 3)} → "
        f"{speedup_text(new, 3)}, {kind})\n"
        f"K* then {then.k_star}, now {figures_now.k_star} · changed: {changed} · F9 unpins"
    )
