"""A step's price from the scenario's cost model, at the batch's composition (docs/model.md,
"Serving under load").

Drafting runs in lockstep: the requests drafting at least j tokens make the j-th pass (a
shorter draft idles), or one pass over the longest k when the draft is parallel. The verify
pass covers every token of the step (each decode's k + 1, each prefill chunk) at the
requests' mean context, so that the KV read is priced at the sum of their contexts.

Decode steps repeat the same batch and widths while only the contexts grow, so their
prices are tabulated: a cost model that is affine in the context at a fixed batch and
width (the additive roofline, the linear and table models) is evaluated twice per (batch,
width) and then priced for a whole segment of steps at once; one that is not (the max
form, sliding windows) is called step by step. Both give the same numbers to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Contexts at which affinity is tested and the line fitted.
_L1, _L2 = 10_000.0, 37_000.0
_CACHE_MAX = 1 << 12  # lines kept (a full cache is emptied)


class Pricer:
    """Draft and verify times of the scenario's cost model, in microseconds."""

    def __init__(self, cost: Any) -> None:
        self.cost = cost
        self.parallel = bool(getattr(getattr(cost, "draft_run", None), "parallel", False))
        self._lines: dict[tuple[str, float, int], tuple[float, float] | None] = {}
        # A sliding window bends the price at its window, wherever that is: priced directly.
        models = (getattr(cost, "target", None), getattr(cost, "draft", None))
        self.affine = not any(getattr(m, "sliding_window", None) for m in models)

    def _line(self, kind: str, width: float, batch: int) -> tuple[float, float] | None:
        """(time at context 0, time per context token) of a pass, or None if the cost model
        is not affine in the context there."""
        key = (kind, width, batch)
        found = self._lines.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        if len(self._lines) > _CACHE_MAX:
            self._lines.clear()
        f = self._direct(kind, width, batch, np.array([0.0, _L1, _L2]))
        slope = (f[1] - f[0]) / _L1
        line: tuple[float, float] | None = (float(f[0]), float(slope))
        if abs(f[0] + slope * _L2 - f[2]) > 1e-9 * abs(f[2]):
            line = None
        self._lines[key] = line
        return line

    def _direct(self, kind: str, width: float, batch: int, contexts: np.ndarray) -> np.ndarray:
        if kind == "verify":
            times = self.cost.verify_us(width, batch, contexts)
        else:
            times = self.cost.draft_us(width, batch, contexts)
        return np.broadcast_to(np.asarray(times, dtype=np.float64), contexts.shape)

    def price(self, kind: str, width: float, batch: int, contexts: np.ndarray) -> np.ndarray:
        """A pass (``verify``: ``width`` tokens per sequence; ``draft``: ``width`` draft
        passes) over ``batch`` sequences at each mean context in ``contexts``."""
        line = self._line(kind, width, batch) if self.affine else None
        if line is None:
            return self._direct(kind, width, batch, contexts)
        return line[0] + line[1] * contexts

    def draft(self, k: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """Lockstep drafting of the decoders' ``k`` (a row per decoder) at their contexts
        ``contexts`` (decoders x steps): one time per step."""
        steps = contexts.shape[1] if contexts.ndim == 2 else 1
        total = np.zeros(steps)
        if k.size == 0 or int(k.max()) == 0:
            return total
        contexts = contexts.reshape(k.size, steps)
        if self.parallel:
            longest = int(k.max())
            return self.price("draft", longest, int(k.size), contexts.mean(axis=0))
        if int(k.min()) == int(k.max()):  # every decoder drafts the same k
            return self.price("draft", int(k[0]), int(k.size), contexts.mean(axis=0))
        done = 0
        for level in np.unique(k[k > 0]):
            rows = k >= level
            mean = contexts[rows].mean(axis=0)
            total = total + self.price("draft", int(level) - done, int(rows.sum()), mean)
            done = int(level)
        return total

    def verify(self, tokens: int, batch: int, contexts: np.ndarray) -> np.ndarray:
        """One target pass over ``tokens`` tokens of ``batch`` requests at each mean context."""
        return self.price("verify", tokens / batch, batch, contexts)

    def step(
        self,
        k: np.ndarray,
        draft_contexts: np.ndarray,
        tokens: int,
        batch: int,
        means: np.ndarray,
        tax_us: float,
        lookup_us: float = 0.0,
    ) -> np.ndarray:
        """A step's microseconds, for each step of a segment: the decoders' lockstep
        drafting (:meth:`draft`, decoders x steps contexts) and one verify pass over
        ``tokens`` tokens of ``batch`` requests at each mean context, plus speculation's
        fixed cost ``tax_us`` and a model-free proposer's CPU look-ups ``lookup_us`` (all
        of the step's, one per decoder that looked up). The one place a serving step's
        time is added up."""
        total = self.draft(k, draft_contexts) + self.verify(tokens, batch, means) + tax_us
        return total + lookup_us if lookup_us else total
