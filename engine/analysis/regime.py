"""The regime map: the optimal K and its speedup over batch size x context length.

For a base scenario (its acceptance model, cost model, hardware, target, draft, tail rule and
length T), :func:`regime_map` computes the exact finite-length speedup
(:func:`engine.simulate.exact.speedup_exact`) of every batch size x prompt length (context already
in the
KV cache when decoding starts) x K, and per (batch, context) cell the optimal K, its speedup and
whether any K pays (best speedup > 1; else speculation should be off there). This answers the
serving engineer's question "at which batch size should speculation turn off?" (docs/model.md,
"Cost models"; under the ``linear`` model nothing depends on batch or context).

One definition of everything, batched: the map does not run 1280 scalar dynamic programs but
one per K, over arrays of every cell at once:

- each cell's baseline is :func:`engine.core.kernel.cycle_costs`'s (one call per cell);
- the cycle times of every (K, batch, context, r) come from the kernel's one cycle-time
  function (``engine.core.kernel.cycle_times``) with the kernel's tail rule and context rule, on
  broadcast arrays;
- the expected time of a sequence is :func:`engine.simulate.exact.expected_over_sequence`, the exact
  DP that :func:`engine.simulate.exact.exact_metrics_many` runs, with a column per cell: every
  addition and product is the same IEEE operation on each cell, so each speedup equals
  ``speedup_exact`` of that cell's configuration bit for bit (tests/engine/test_regime.py
  checks it).

K* is picked by the rule of :func:`engine.analysis.analysis.optimal_k` for exact values: the highest
speedup, ties to the smaller K, ``tie`` when another K has the same speedup
(:func:`engine.analysis.analysis.tied_to_best` with no sampling noise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.analysis.analysis import tied_to_best
from engine.analysis.formatting import LOSE_MARK, TIE_MARK, cost_setting_text, k_star_cell
from engine.core.config import ConfigError, SpecConfig, check_value
from engine.core.kernel import context_length, cycle_costs, cycle_times, draft_count
from engine.core.runs import RunStopped
from engine.cost.models import build_cost
from engine.simulate.exact import accepted_distribution
from engine.simulate.sequence_dp import expected_over_sequence

BATCH_SIZES: tuple[int, ...] = tuple(2**i for i in range(10))  # 1, 2, 4, ..., 512
CONTEXTS: tuple[int, ...] = tuple(1024 * 2**i for i in range(8))  # 1k, 2k, ..., 128k
KS: tuple[int, ...] = tuple(range(1, 17))
# A map's program holds, per cell, T + 1 cycle prices (the cell's costs, its cycle by r)
# and K + 1 rows of the window: about 150 bytes per value at its peak. At most this many
# values (cells x (T + K_max + 2)) in all, so that every accepted map stays under 1 GB
# (measured: 65,536 cells at T = 128, K 1..4 peaked at 1.2 GB). The default map: 80 x 146.
MAP_VALUES_MAX = 1 << 22


def check_map_size(cells: int, tokens_per_seq: int, k_max: int) -> None:
    """ConfigError (field ``map``) unless a map of ``cells`` cells fits
    :data:`MAP_VALUES_MAX`; checked before any of its work."""
    per_cell = tokens_per_seq + k_max + 2
    if cells * per_cell > MAP_VALUES_MAX:
        raise ConfigError(
            "map",
            f"{cells:,} cells x {per_cell:,} values (tokens_per_seq + K max + 2) = "
            f"{cells * per_cell:,}; a map holds at most {MAP_VALUES_MAX:,} (1 GB): give fewer "
            "batch sizes, contexts or K, or a shorter tokens_per_seq",
        )


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
# on_progress(done, total): steps of the map finished (the cells' baselines, then one per K).
ProgressSink = Callable[[int, int], None]

__all__ = [
    "BATCH_SIZES",
    "CONTEXTS",
    "KS",
    "LEGEND",
    "NO_PAY_TEXT",
    "SHORT_LEGEND",
    "RegimeMap",
    "RunStopped",
    "cell_marks",
    "check_axis",
    "context_label",
    "parse_context",
    "regime_map",
]


NO_PAY_TEXT = "no K pays: speculation off"
LEGEND = f"K* and its speedup per cell · {TIE_MARK} tie · {LOSE_MARK} {NO_PAY_TEXT}"
SHORT_LEGEND = f"cell: K* speedup · {TIE_MARK} tie · {LOSE_MARK} no K pays (off)"


def context_label(tokens: int) -> str:
    """A context length as a column heading: 1024 reads ``1k``, 131072 ``128k``, 300 ``300``."""
    return f"{tokens // 1024}k" if tokens and tokens % 1024 == 0 else str(tokens)


def parse_context(text: str) -> int:
    """A context length as typed: ``4096`` or ``4k`` (k = 1024 tokens). ValueError if not."""
    text = text.strip().lower()
    scale = 1024 if text.endswith("k") else 1
    digits = text[:-1] if scale > 1 else text
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(text)
    return int(digits) * scale


def cell_marks(k_opt: int, speedup: float, tie: bool, pays: bool, aligned: bool = False) -> str:
    """One cell of the map: :func:`engine.analysis.formatting.k_star_cell`, with the loss mark on
    every
    cell where no K pays."""
    return k_star_cell(k_opt, speedup, tie, not pays, aligned=aligned)


@dataclass(frozen=True)
class RegimeMap:
    """Exact speedups of ``config`` by batch size x context x K, and each cell's K*.

    ``speedup[i, j, m]`` is ``speedup_exact`` at ``batch_sizes[i]``, ``contexts[j]`` (the
    prompt length) and ``ks[m]``. Per cell (i, j): ``k_opt`` (K*, the highest speedup, ties
    to the smaller K), ``speedup_opt``, ``tie`` (another K has exactly the same speedup),
    ``pays`` (``speedup_opt > 1``: some K beats plain decoding; false marks a cell where
    speculation should be off), ``step_us`` (one plain decoding step at the prompt's
    context, microseconds) and ``verify_ratio`` (K*'s verify pass over that step: how far
    from free verification is there).
    """

    config: SpecConfig
    batch_sizes: tuple[int, ...]
    contexts: tuple[int, ...]
    ks: tuple[int, ...]
    speedup: FloatArray
    k_opt: IntArray
    speedup_opt: FloatArray
    tie: BoolArray
    pays: BoolArray
    step_us: FloatArray
    verify_ratio: FloatArray
    warnings: tuple[str, ...] = field(default=())

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.batch_sizes), len(self.contexts)

    def legend_lines(self) -> list[str]:
        """The scenario in three short lines: length and tail rule, acceptance model, cost
        setting (hardware, target, draft)."""
        c = self.config
        return [f"T={c.tokens_per_seq}, tail {c.tail}", acceptance_text(c), cost_text(c)]

    def legend(self) -> str:
        """The scenario in one line (:meth:`legend_lines` joined)."""
        return "; ".join(self.legend_lines())

    def cell_text(self, i: int, j: int, aligned: bool = False) -> str:
        """Cell (i, j) as printed: :func:`cell_marks`."""
        return cell_marks(
            int(self.k_opt[i, j]),
            float(self.speedup_opt[i, j]),
            bool(self.tie[i, j]),
            bool(self.pays[i, j]),
            aligned,
        )

    def off_from_batch(self) -> list[int | None]:
        """Per context: the smallest batch size from which no K pays at that batch and every
        larger one in the map (speculation should turn off there), or None."""
        out: list[int | None] = []
        for j in range(len(self.contexts)):
            start = None
            for i in reversed(range(len(self.batch_sizes))):
                if self.pays[i, j]:
                    break
                start = self.batch_sizes[i]
            out.append(start)
        return out

    def off_text(self) -> str:
        """Where speculation should turn off, in one line."""
        by_batch: dict[int, list[str]] = {}
        for context, batch in zip(self.contexts, self.off_from_batch(), strict=True):
            if batch is not None:
                by_batch.setdefault(batch, []).append(context_label(context))
        count = int(np.count_nonzero(~self.pays))
        if not count:
            return "some K pays in every cell"
        text = f"no K pays in {count} of {self.pays.size} cells"
        for batch, labels in sorted(by_batch.items()):
            text += f"; off from batch {batch} at context {', '.join(labels)}"
        return text

    def cell_rows(self) -> list[dict[str, Any]]:
        """One record per cell, batch-major: batch_size, prompt_len, k_opt, speedup_opt,
        pays, tie, verify_ratio, then ``speedup_k{K}`` for every K (for CSV and JSON)."""
        rows = []
        for i, batch in enumerate(self.batch_sizes):
            for j, context in enumerate(self.contexts):
                row: dict[str, Any] = {
                    "batch_size": batch,
                    "prompt_len": context,
                    "k_opt": int(self.k_opt[i, j]),
                    "speedup_opt": float(self.speedup_opt[i, j]),
                    "pays": bool(self.pays[i, j]),
                    "tie": bool(self.tie[i, j]),
                    "verify_ratio": float(self.verify_ratio[i, j]),
                }
                for m, k in enumerate(self.ks):
                    row[f"speedup_k{k}"] = float(self.speedup[i, j, m])
                rows.append(row)
        return rows


def acceptance_text(config: SpecConfig) -> str:
    """The acceptance model and its parameters: "fixed a=0.8"."""
    from engine.acceptance.draft_models import get_model

    model = config.draft_model
    params = ", ".join(f"{name}={_value(config.get(name))}" for name in get_model(model).reads)
    return f"{model} {params}".strip()


def _value(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)  # rates are text


def cost_text(config: SpecConfig) -> str:
    """The cost setting without the workload (the map varies batch and context)."""
    text = cost_setting_text(config)
    return text.split(", batch ")[0]


def check_axis(key: str, values: Sequence[Any]) -> tuple[int, ...]:
    """``values`` of the field ``key`` (workload.batch_size, workload.prompt_len, k), each
    checked by the field table, as a sorted tuple without repeats. Raises ConfigError."""
    if not values:
        raise ConfigError(key, "needs at least one value")
    return tuple(sorted({int(check_value(key, v)) for v in values}))


def _best_k(ks: IntArray, speedups: FloatArray) -> tuple[int, float, bool]:
    """K*, its speedup and whether another K ties, by engine.analysis.analysis.optimal_k's rule for
    exact values: speedup descending, then K ascending; ties by :func:`tied_to_best` (no noise)."""
    order = np.lexsort((ks, -speedups))
    ranked = speedups[order]
    noise = np.full(len(order), math.nan)
    tied = tied_to_best(ranked, noise, ranked)
    return int(ks[order[0]]), float(ranked[0]), int(np.count_nonzero(tied)) > 1


def regime_map(
    config: SpecConfig,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    contexts: Sequence[int] = CONTEXTS,
    ks: Sequence[int] = KS,
    on_progress: ProgressSink | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RegimeMap:
    """The regime map of ``config`` (see :class:`RegimeMap`): every other field (acceptance
    model, cost model, hardware, target, draft, T, tail) is the config's.

    ``on_progress(done, total)`` is called after the cells' baselines and after each K;
    ``should_stop()`` is asked as often (and every few thousand tokens of a long
    sequence); when it turns true the map raises :class:`engine.core.runs.RunStopped`.
    Raises :class:`engine.core.config.ConfigError` for a value out of its field's range or a
    cost model that cannot be built.

    Time and memory grow as T x cells x K (arrays of T + 1 floats per cell and K): the
    default 10 x 8 x 16 map at T = 128 takes a fraction of a second.
    """
    batches = check_axis("workload.batch_size", batch_sizes)
    prompts = check_axis("workload.prompt_len", contexts)
    k_values = check_axis("k", ks)
    check_map_size(len(batches) * len(prompts), config.tokens_per_seq, max(k_values))
    total_steps = 1 + len(k_values)

    def stop_if_asked(_r: int = 0) -> None:
        if should_stop is not None and should_stop():
            raise RunStopped

    def check(done: int) -> None:
        stop_if_asked()
        if on_progress is not None:
            on_progress(done, total_steps)

    # Baselines, steps and warnings per cell, from the kernel (one call per cell).
    # A map of fixed K: the form's policy does not enter (spectui arena compares policies).
    config = config.replace(**{"policy.name": "fixed"})
    from engine.simulate.policies import needs_stepwise

    chained = needs_stepwise(config)  # markov acceptance
    cells = [[config.replace(batch_size=b, prompt_len=c) for c in prompts] for b in batches]
    costs = [[cycle_costs(cell) for cell in row] for row in cells]
    baseline = np.array([[c.baseline_us for c in row] for row in costs])
    step = np.array([[c.limit_step_us for c in row] for row in costs])
    warnings = dict.fromkeys(w for row in costs for c in row for w in c.warnings)
    check(1)

    total = config.tokens_per_seq
    r = np.arange(total + 1, dtype=np.int64)
    r[0] = 1  # unused, as in engine.core.kernel.cycle_costs
    # context[j, r] for every prompt length: the kernel's rule, L = prompt_len + (T - r).
    context = np.stack([context_length(cells[0][j], r) for j in range(len(prompts))])
    batch: Any = np.array(batches, dtype=np.float64)[:, None, None]  # every batch at once
    cost = build_cost(config)
    speedup = np.empty((len(batches), len(prompts), len(k_values)))
    verify_at_prompt = np.empty_like(speedup)

    for m, k in enumerate(k_values):
        k_config = config.replace(k=k)
        k_r = np.asarray(draft_count(k_config, r), dtype=np.int64)
        cycle = cycle_times(cost, k_r[None, None, :], batch, context[None, :, :])[2]
        cycle = np.broadcast_to(np.asarray(cycle, dtype=np.float64), (*speedup.shape[:2], r.size))
        # cycle_by_r[r] is every cell's cycle time with r tokens to go, a column per cell.
        cycle_by_r = np.moveaxis(cycle, -1, 0).reshape(r.size, -1)
        if chained:  # cycles tied by a regime: the program over (r, regime), cell by cell
            from engine.simulate.exact import exact_metrics_many

            flat = [cell.replace(k=k) for row in cells for cell in row]
            found = exact_metrics_many(flat)["speedup_exact"]
            speedup[:, :, m] = found.reshape(speedup.shape[:2])
        else:
            dist = accepted_distribution(k_config)[:, None]  # one column, shared by every cell
            f = expected_over_sequence(dist, cycle_by_r, stop_if_asked)
            expected = f[total].reshape(speedup.shape[:2])
            speedup[:, :, m] = baseline / expected
        # The verify pass of a full K cycle at the prompt's context (r = T: L = prompt_len).
        verify_full = np.broadcast_to(
            np.asarray(cost.verify_us(k + 1, batch[:, :, 0], np.array(prompts)[None, :])),
            speedup.shape[:2],
        )
        verify_at_prompt[:, :, m] = verify_full
        check(2 + m)

    ks_arr = np.array(k_values, dtype=np.int64)
    k_opt = np.empty(speedup.shape[:2], dtype=np.int64)
    speedup_opt = np.empty(speedup.shape[:2])
    tie = np.zeros(speedup.shape[:2], dtype=bool)
    verify_ratio = np.empty(speedup.shape[:2])
    for i in range(len(batches)):
        for j in range(len(prompts)):
            k_opt[i, j], speedup_opt[i, j], tie[i, j] = _best_k(ks_arr, speedup[i, j])
            m = int(np.searchsorted(ks_arr, k_opt[i, j]))
            verify_ratio[i, j] = verify_at_prompt[i, j, m] / step[i, j]
    return RegimeMap(
        config=config,
        batch_sizes=batches,
        contexts=prompts,
        ks=k_values,
        speedup=speedup,
        k_opt=k_opt,
        speedup_opt=speedup_opt,
        tie=tie,
        pays=speedup_opt > 1.0,
        step_us=step,
        verify_ratio=verify_ratio,
        warnings=tuple(warnings),
    )
