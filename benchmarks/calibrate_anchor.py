"""The calibration anchor: vLLM's EAGLE sweep on Llama-3.1-8B (vllm-project/vllm#20780).

Run: ``.venv/bin/python benchmarks/calibrate_anchor.py`` (a second). For EAGLE 1 and
EAGLE 3 at K = 2..7 (batch size 1, H100, MT-Bench; tests/fixtures/anchors/vllm_20780.csv)
it fits the linear cost, fixed + per_token x K target steps per cycle, from the measured
(K, mean acceptance length M, time per output token) points and the no-speculation TPOT
(``engine.calibrate.fit.fit_linear_cost``), then prints for each K:

* ``measured``: baseline TPOT / TPOT;
* ``per-K M``: the engine's long-run speedup (``speedup_limit``) with the fitted cost as
  the ``linear`` cost model (``linear_cost_values``) and the fixed acceptance solved from
  that K's measured M (so tokens per cycle is the measured M): M / (fixed + per_token x K);
* ``one model``: the same with a single ``position_decay`` acceptance fitted to all six
  M by least squares (two parameters for six K), and its M beside the measured one;

and the best K of each column. Figures for the README.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.calibrate.fit import (  # noqa: E402
    fit_linear_cost,
    fixed_from_mean,
    linear_cost_values,
)
from engine.core.config import SpecConfig  # noqa: E402
from engine.simulate.exact import exact_metrics_many, tokens_per_cycle  # noqa: E402

ANCHOR = ROOT / "tests" / "fixtures" / "anchors" / "vllm_20780.csv"
NAMES = {"eagle": "EAGLE 1", "eagle3": "EAGLE 3"}


def read_anchor() -> dict[str, list[tuple[int, float, float, float]]]:
    lines = [line for line in ANCHOR.read_text().splitlines() if not line.startswith("#")]
    out: dict[str, list[tuple[int, float, float, float]]] = {}
    for row in csv.DictReader(lines):
        out.setdefault(row["method"], []).append(
            (
                int(row["k"]),
                float(row["mean_length"]),
                float(row["tpot_ms"]),
                float(row["baseline_tpot_ms"]),
            )
        )
    return out


def decay_mean_length(base: np.ndarray, factor: np.ndarray, k: int) -> np.ndarray:
    """M at K of position_decay: 1 + sum_j prod_{i<=j} base factor^(i-1), on a grid."""
    steps = np.arange(k)
    rates = base[..., None] * factor[..., None] ** steps
    return 1.0 + np.cumprod(rates, axis=-1).sum(axis=-1)


def fit_decay(points: list[tuple[int, float]]) -> tuple[float, float]:
    """position_decay (base, factor) whose M(K) is closest to the measured M (least squares,
    a 0.0025 grid refined once to 0.0001)."""
    lo_b, hi_b, lo_f, hi_f, step = 0.0, 1.0, 0.0, 1.0, 0.0025
    best = (0.0, 0.0)
    for _ in range(2):
        base, factor = np.meshgrid(
            np.arange(lo_b, hi_b + step / 2, step), np.arange(lo_f, hi_f + step / 2, step)
        )
        error = sum((decay_mean_length(base, factor, k) - m) ** 2 for k, m in points)
        i = np.unravel_index(np.argmin(error), error.shape)
        best = (float(base[i]), float(factor[i]))
        lo_b, hi_b = max(0.0, best[0] - step), min(1.0, best[0] + step)
        lo_f, hi_f = max(0.0, best[1] - step), min(1.0, best[1] + step)
        step /= 25
    return best


def main() -> None:
    worst = 0.0
    for method, rows in read_anchor().items():
        baseline_ms = rows[0][3]
        cost = fit_linear_cost([(k, m, tpot) for k, m, tpot, _ in rows], baseline_ms)
        base, factor = fit_decay([(k, m) for k, m, _, _ in rows])
        scenario = SpecConfig().replace(**linear_cost_values(cost, baseline_ms * 1000.0))
        per_k = [
            scenario.replace(k=k, acceptance_rate=fixed_from_mean(m, k)) for k, m, _, _ in rows
        ]
        decay = scenario.replace(draft_model="position_decay", decay_base=base, decay_factor=factor)
        one = [decay.replace(k=k) for k, *_ in rows]
        limits = exact_metrics_many(per_k + one)["speedup_limit"]
        n = len(rows)
        print(
            f"{NAMES[method]} (vllm#20780, Llama-3.1-8B, BS 1): cost per cycle "
            f"{cost[0]:.3f} + {cost[1]:.4f} K target steps; position_decay fitted to M: "
            f"base {base:.4f}, factor {factor:.4f}"
        )
        print("   K  M meas  M model  measured  per-K M  one model")
        measured = [baseline_ms / tpot for _, _, tpot, _ in rows]
        for i, (k, m, _, _) in enumerate(rows):
            m_model = tokens_per_cycle(one[i])
            worst = max(worst, abs(limits[i] - measured[i]), abs(limits[n + i] - measured[i]))
            print(
                f"  {k:2d}  {m:6.2f}  {m_model:7.3f}  {measured[i]:8.3f}  "
                f"{limits[i]:7.3f}  {limits[n + i]:9.3f}"
            )
        ks = [k for k, *_ in rows]
        best = [ks[int(np.argmax(v))] for v in (measured, limits[:n], limits[n:])]
        print(f"  best K: measured {best[0]}, per-K M {best[1]}, one model {best[2]}\n")
    print(f"largest |predicted - measured| speedup: {worst:.3f}")


if __name__ == "__main__":
    main()
