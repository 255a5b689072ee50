"""goodput (vLLM's dynamic speculative decoding): the k that maximises estimated goodput
from the batch's recent acceptance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.config import WINDOW_MAX, field
from engine.core.parts import POLICY
from engine.policies.base import K_MAX_FIELD, Chooser, PolicyPart

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Acceptance, Policy


class GoodputChooser(Chooser):
    """Per-position acceptance estimates over the last ``window`` steps of each batch group.

    The window is a ring of each row's two lengths per step: ``min(k, n + 1)`` (the cycle
    reached positions 1..that) and ``n`` (accepted 1..n), int16, 0 for rows not running.
    Each group keeps histograms of these lengths over the window, ``(K_max + 1, groups)``;
    the count of cycles that reached (or accepted) position i is the histogram's tail sum
    from i. Positions run along axis 0 so that every scan over them is vectorised across
    the groups.
    """

    def __init__(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> None:
        import numpy as np

        self.policy = policy
        self.group = np.arange(rows) // batch
        self.groups = int(self.group[-1]) + 1
        width = cycle_us.shape[1]  # lengths 0..K_max
        self.reach_len = np.zeros((policy.window, rows), dtype=np.int16)
        self.acc_len = np.zeros((policy.window, rows), dtype=np.int16)
        self.reach_hist = np.zeros((width, self.groups), dtype=np.int64)
        self.acc_hist = np.zeros((width, self.groups), dtype=np.int64)
        # The price of each k the policy may choose, (k_max + 1, T + 1).
        self.price = np.ascontiguousarray(cycle_us[:, : policy.k_max + 1].T)

    def _count(self, hist: np.ndarray, lengths: np.ndarray, sign: int) -> None:
        """Add (sign 1) or remove (-1) one step's lengths; length 0 counts at no position."""
        import numpy as np

        rows = np.flatnonzero(lengths)
        np.add.at(hist.reshape(-1), lengths[rows] * self.groups + self.group[rows], sign)

    def observe(
        self, step: int, drafted: np.ndarray, accepted: np.ndarray, running: np.ndarray
    ) -> None:
        import numpy as np

        slot = step % self.policy.window
        reach = (np.minimum(drafted, accepted + 1) * running).astype(np.int16)
        acc = (accepted * running).astype(np.int16)
        for hist, ring, lengths in (
            (self.reach_hist, self.reach_len, reach),
            (self.acc_hist, self.acc_len, acc),
        ):
            self._count(hist, ring[slot].astype(np.int64), -1)
            self._count(hist, lengths.astype(np.int64), 1)
            ring[slot] = lengths

    def choose(self, r: np.ndarray, regime: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        import numpy as np

        k_max = self.policy.k_max
        chosen = np.full(r.size, self.policy.k, dtype=np.int64)
        live = np.flatnonzero(r > 0)
        if not live.size or not k_max:
            return chosen
        groups = np.unique(self.group[live])
        reached, accepted = _tail_sums(self.reach_hist[:, groups], self.acc_hist[:, groups], k_max)
        depth = (reached > 0).sum(axis=0)  # positions with data: 1..depth (reach shrinks)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = accepted / reached
        # Positions deeper than the data take the deepest estimate.
        deepest = rate[np.maximum(depth - 1, 0), np.arange(groups.size)]
        rate = np.where(np.arange(k_max)[:, None] < depth, rate, deepest)
        # Goodput's numerator 1 + sum_{i <= k} prod_{l <= i} p_l, by k = 0..k_max. A loop
        # over positions: numpy's scans along axis 0 are not vectorised across columns.
        gain = np.ones((k_max + 1, groups.size))
        reach_all, total = np.ones(groups.size), np.zeros(groups.size)
        for i in range(k_max):
            reach_all *= rate[i]
            total += reach_all
            gain[i + 1] += total
        # Each live row at its own r; argmax takes the smallest k on ties.
        at = np.searchsorted(groups, self.group[live])
        best = np.argmax(gain[:, at] / self.price[:, r[live]], axis=0)
        # Groups without data (nothing drafted in the window) draft policy.k.
        chosen[live] = np.where(depth[at] > 0, best, self.policy.k)
        return chosen


def _tail_sums(
    reach_hist: np.ndarray, acc_hist: np.ndarray, k_max: int
) -> tuple[np.ndarray, np.ndarray]:
    """Cycles that reached and that accepted positions 1..k_max, ``(k_max, groups)``: the
    histograms' tail sums from each position (the lengths reach K_max at most)."""
    import numpy as np

    reached = np.empty((k_max, reach_hist.shape[1]), dtype=np.int64)
    accepted = np.empty_like(reached)
    reach_tail = reach_hist[k_max:].sum(axis=0)
    acc_tail = acc_hist[k_max:].sum(axis=0)
    reached[k_max - 1], accepted[k_max - 1] = reach_tail, acc_tail
    for i in range(k_max - 1, 0, -1):
        reach_tail += reach_hist[i]
        acc_tail += acc_hist[i]
        reached[i - 1], accepted[i - 1] = reach_tail, acc_tail
    return reached, accepted


@POLICY.register
class Goodput(PolicyPart):
    name = "goodput"
    description = "vLLM's dynamic speculation: the k of the best estimated goodput"
    brief = "vLLM's dynamic speculation"
    fields = (
        K_MAX_FIELD,
        field(
            "policy.window",
            16,
            label="window",
            kind="int",
            low=1,
            high=WINDOW_MAX,
            help="goodput: cycles of history (of the whole batch) behind its estimates",
        ),
    )

    def check(self, config: Any) -> None:
        self._starts_at_k(config)

    def label(self, config: Any) -> str:
        return f"goodput w={config.window}"

    def detail_text(self, config: Any) -> str:
        return f" K0={config.k}"

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        return GoodputChooser(policy, rows, batch, cycle_us)

    def check_run(self, policy: Policy, acceptance: Acceptance, k_table: int, tokens: int) -> None:
        super().check_run(policy, acceptance, k_table, tokens)
        if policy.window < 1:
            raise ValueError(f"goodput window must be >= 1, got {policy.window}")
