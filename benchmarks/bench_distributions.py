"""Time the distribution model's exact acceptance and the losslessness lab, and print seconds,
ratios, peak memory and PASS/FAIL (issue #28; not part of the test run).

    .venv/bin/python benchmarks/bench_distributions.py [--repeat N] [--direct-positions N]

Goal 1: exact acceptance for V = 32,000 tokens, 1,000 contexts, 16 positions in under a
second. Timed: the model's survival over 16 positions (the mismatch grows, so every position
is its own), from cold caches (the Zipf entropy curve too), for 1,000 contexts of each of
the two difficulties (2,000 in all), by rule and with top-p. The closed form
(engine.acceptance.power_law) takes it; the baseline is the direct vectorised computation on
whole distributions (rules.sampled, rules.acceptance over family_contexts, blocks of 2^21
entries), timed on ``--direct-positions`` positions of one difficulty and compared position
for position. The noise mismatch has no closed form: its direct time is printed too.

Goal 2: the lab's chi-square run over 1,000,000 emitted tokens in under 5 s (rejection on
one context of 32,000 tokens: draw, accept or correct, bin, test).

A figure is the best of ``--repeat`` runs. Peak RSS is the process's (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.acceptance import distribution as dist
from engine.acceptance import rules
from engine.acceptance.lab import chi_square, emit

VOCAB, CONTEXTS, POSITIONS = 32_000, 1_000, 16
GOAL_S, LAB_GOAL_S, LAB_TOKENS = 1.0, 5.0, 1_000_000


def family(rule: str, top_p: float = 1.0, mismatch: str = "temperature") -> dist.Family:
    size = 1.3 if mismatch == "temperature" else 0.5
    return dist.Family(VOCAB, 1.5, 5.0, mismatch, size, 0.2, rule, 1.0, 0, top_p, 0.0, "hf",
                       CONTEXTS, ())  # fmt: skip


def cold() -> None:
    for cached in (dist.position_rate, dist._survival, dist._target_side, rules._entropy_curve):
        cached.cache_clear()


def closed_form(f: dist.Family) -> list[float]:
    cold()
    return list(dist._survival(f, (0.7, 0.3), POSITIONS))


def direct_rate(f: dist.Family, difficulty: int, position: int) -> float:
    total = sum(
        float(rules.acceptance(p, q, f.rule).sum())
        for p, q in dist.family_contexts(f, difficulty, position)
    )
    return total / f.contexts


def best_of(repeat: int, work):  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--direct-positions", type=int, default=1)
    args = parser.parse_args()
    closed_form(family("rejection"))  # imports and first calls
    ok = True
    print(f"exact acceptance: V = {VOCAB:,}, {CONTEXTS:,} contexts x 2 difficulties, "
          f"{POSITIONS} positions (goal < {GOAL_S:g} s)")  # fmt: skip
    print(f"{'case':<28} {'closed s':>9} {'direct s/pos':>13} {'x16 pos':>9} {'ratio':>8} "
          f"{'max |diff|':>11}")  # fmt: skip
    for rule, top_p in (("rejection", 1.0), ("rejection", 0.95), ("exact_match", 0.95),
                        ("typical", 1.0)):  # fmt: skip
        f = family(rule, top_p)
        seconds, _ = best_of(args.repeat, lambda f=f: closed_form(f))
        positions = range(1, args.direct_positions + 1)
        start = time.perf_counter()
        direct = [direct_rate(f, 1, i) for i in positions]
        per_position = (time.perf_counter() - start) / len(positions)
        diff = max(
            abs(dist.position_rate(f, 1, i) - r) for i, r in zip(positions, direct, strict=True)
        )
        # Closed form for 2 x 16 (difficulty, position) rates against direct for 1.
        ratio = per_position * 2 * POSITIONS / seconds
        ok &= seconds < GOAL_S and diff < 1e-12
        print(f"{rule + ', top_p ' + format(top_p, 'g'):<28} {seconds:9.3f} {per_position:13.2f} "
              f"{per_position * 2 * POSITIONS:9.1f} {ratio:7.0f}x {diff:11.1e}")  # fmt: skip
    noisy = family("rejection", mismatch="noise")
    start = time.perf_counter()
    direct_rate(noisy, 1, 1)
    noise_s = time.perf_counter() - start
    print(f"noise mismatch (no closed form), direct: {noise_s:.2f} s a position and difficulty, "
          f"{noise_s * 2 * POSITIONS:.1f} s for the goal's size")  # fmt: skip

    rng = np.random.default_rng(0)
    target = rules.sampled(rules.zipf_logits(rules.zipf_exponent(np.array([5.0]), VOCAB), VOCAB),
                           1.0)  # fmt: skip
    draft = rules.softmax(np.log(target) / 1.3)

    def lab() -> float:
        emitted, _ = emit(target[0], draft[0], "rejection", LAB_TOKENS, rng)
        return chi_square(np.bincount(emitted, minlength=VOCAB), target[0]).p_value

    lab_s, p_value = best_of(args.repeat, lab)
    ok &= lab_s < LAB_GOAL_S
    print(f"lab: {LAB_TOKENS:,} tokens over {VOCAB:,}, rejection, chi-square p = {p_value:.3f}: "
          f"{lab_s:.2f} s (goal < {LAB_GOAL_S:g} s)")  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
