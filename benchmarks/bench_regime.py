"""Time the exact regime map and print seconds and peak memory (not part of the test run).

    .venv/bin/python benchmarks/bench_regime.py [--repeat N] [--tokens T] [--compare-scalar]

The map of issue #10: 10 batch sizes (1..512) x 8 context lengths (1k..128k) x K 1..16 at
T = 128, Llama-3.1-8B verifying on an H100 with Llama-3.2-1B drafting (roofline, and the
ideal roofline), and with issue #26's terms (a 70B target over 4 GPUs; DeepSeek-V3 over 8
with expert parallelism, skewed routing and its MTP module drafting), target: under a
second. Each map is timed in a fresh state (the cost
models' caches hold only the last few configurations), after one untimed map that pays
the imports. Peak RSS is the process's (``ru_maxrss``), imports included; the Python heap
peak of one map (tracemalloc) is printed beside it.

The map and a sweep's exact values run one batched dynamic program
(``engine.simulate.exact.exact_metrics_many``): it is also timed on the 576 configurations of the
``seed-576`` preset (the exact-only sweep's engine time; target: under 10 ms).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.analysis.regime import regime_map
from engine.core.config import SpecConfig
from engine.presets import load_preset
from engine.simulate.exact import exact_metrics_many

SEED_SWEEP_REPEAT = 20  # exact_metrics_many over seed-576 takes milliseconds: time it often


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed maps per cost model")
    parser.add_argument("--tokens", type=int, default=128, help="tokens per sequence (T)")
    parser.add_argument(
        "--compare-scalar",
        action="store_true",
        help="also time speedup_exact called once per configuration (the unbatched way)",
    )
    args = parser.parse_args()
    base = SpecConfig(
        cost_model="roofline",
        gpu="h100",
        target="llama-3.1-8b",
        draft="llama-3.2-1b",
        acceptance_rate=0.8,
        tokens_per_seq=args.tokens,
    )
    regime_map(base.replace(seed=1))  # imports and first-call costs, untimed
    print(f"regime map 10 batch sizes x 8 contexts x K 1..16, T={args.tokens}")
    # Issue #26's terms: tensor parallelism (the 70B target and its head over 4 H100s), and
    # an MoE target with latent attention over 8 H200s, its experts spread over 8 with
    # skewed routing, drafted by its own MoE multi-token-prediction module.
    settings = {
        "roofline": base,
        "roofline_max": base.replace(cost_model="roofline_max"),
        "roofline, 70B TP 4": base.replace(
            target="llama-3.3-70b", draft="eagle3-llama-3.3-70b", tp=4, draft_tp=4
        ),
        "roofline, MoE EP 8": base.replace(
            gpu="h200",
            target="deepseek-v3",
            draft="deepseek-v3-mtp",
            tp=8,
            draft_tp=8,
            ep=8,
            expert_skew=0.5,
        ),
    }
    for cost_model, config in settings.items():
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            regime = regime_map(config)
            times.append(time.perf_counter() - start)
        median = sorted(times)[len(times) // 2]
        print(
            f"{cost_model:<19} best {min(times):6.3f} s  median {median:6.3f} s"
            f"  ({regime.speedup.size} configurations)"
        )
    configs = load_preset("seed-576").sweep.configs()
    exact_metrics_many(configs)  # first-call costs (cost caches), untimed
    times = []
    for _ in range(SEED_SWEEP_REPEAT):
        start = time.perf_counter()
        exact_metrics_many(configs)
        times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    print(
        f"exact_metrics_many seed-576 best {min(times) * 1e3:6.2f} ms  median"
        f" {median * 1e3:6.2f} ms  ({len(configs)} configurations)"
    )
    if args.compare_scalar:
        from engine.simulate.exact import speedup_exact

        start = time.perf_counter()
        for b in regime.batch_sizes:
            for c in regime.contexts:
                for k in regime.ks:
                    speedup_exact(base.replace(batch_size=b, prompt_len=c, k=k))
        print(f"roofline, one speedup_exact per configuration {time.perf_counter() - start:.3f} s")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS {rss:.0f} MiB (process, imports included)")
    for name in ("roofline", "roofline, MoE EP 8"):
        tracemalloc.start()
        regime_map(settings[name].replace(seed=7))  # a seed not timed: priced afresh
        _, heap = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"heap peak of one map, {name}: {heap / 2**20:.1f} MiB (tracemalloc)")


if __name__ == "__main__":
    main()
