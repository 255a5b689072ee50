"""Per-request latencies and their summaries with bounded memory (docs/model.md, "Serving
under load").

A request's TTFT is its first token's time less its arrival; its end-to-end latency, its
last token's; its TPOT, ``(e2e - TTFT) / (output - 1)`` (vLLM's definition); its
inter-token latency, the mean gap between the steps that gave it tokens (a step that
accepts several tokens streams them together). Percentiles over requests come from a
histogram of log-spaced bins (a bin is 0.1 % wide), so memory does not grow with the
number of requests and a percentile is within 0.1 % of the exact one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

LOW_S = 1e-7  # the histogram's range in seconds: 0.1 us to 1e6 s
HIGH_S = 1e6
RATIO = 1.001
BINS = math.ceil(math.log(HIGH_S / LOW_S) / math.log(RATIO)) + 2


class LogHistogram:
    """Counts of positive values in log-spaced bins (values below ``LOW_S`` in the first,
    above ``HIGH_S`` in the last); quantiles at a bin's geometric middle."""

    def __init__(self) -> None:
        self.counts = np.zeros(BINS, dtype=np.int64)
        self.n = 0
        self.total = 0.0

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` (seconds); ValueError if one is not finite (NaN has no bin: its
        index would be a wild integer)."""
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            return
        if not np.isfinite(values).all():
            raise ValueError("latencies must be finite seconds")
        index = np.floor(np.log(np.maximum(values, LOW_S) / LOW_S) / math.log(RATIO)) + 1
        index = np.clip(index, 0, BINS - 1).astype(np.int64)
        np.add.at(self.counts, index, 1)
        self.n += int(values.size)
        self.total += float(values.sum())

    def quantile(self, q: float) -> float:
        """The value at quantile ``q`` (nan when empty)."""
        if self.n == 0:
            return math.nan
        rank = q * (self.n - 1)
        cumulative = np.cumsum(self.counts)
        index = int(np.searchsorted(cumulative, rank + 1))
        return LOW_S * RATIO ** (index - 0.5)

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan


METRICS = ("ttft", "tpot", "itl", "e2e")


@dataclass
class Summary:
    """What one run adds up over its measured requests (those after the warm-up)."""

    hist: dict[str, LogHistogram] = field(
        default_factory=lambda: {name: LogHistogram() for name in METRICS}
    )
    requests: int = 0
    output_tokens: int = 0
    good: int = 0  # requests meeting both SLOs
    first_arrival_s: float = math.inf
    last_finish_s: float = 0.0
    batch_time: float = 0.0  # integral of running requests over time
    kv_time: float = 0.0  # integral of the KV cache's used share over time
    busy_s: float = 0.0
    preemptions: int = 0
    steps: int = 0
    spec_tokens: int = 0  # draft tokens proposed
    accepted_tokens: int = 0
    _slo: tuple[float, float] = (math.inf, math.inf)

    # Finished requests wait here and reach the histograms a block at a time (each add is
    # a pass over the bins): memory stays bounded by the block.
    _pending: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    _pending_n: int = 0
    FLUSH = 4096

    def add_requests(
        self,
        arrival: np.ndarray,
        first: np.ndarray,
        last: np.ndarray,
        output: np.ndarray,
        chunks: np.ndarray,
        slo_ttft_s: float,
        slo_tpot_s: float,
    ) -> None:
        """Finished requests: arrival, first and last token times (s), output tokens, and
        the steps that gave them tokens."""
        if arrival.size == 0:
            return
        self._slo = (slo_ttft_s, slo_tpot_s)
        self._pending.append((arrival, first, last, output, chunks))
        self._pending_n += int(arrival.size)
        if self._pending_n >= self.FLUSH:
            self.flush()

    def flush(self) -> None:
        """Add the waiting requests to the histograms and counts."""
        if not self._pending:
            return
        arrival, first, last, output, chunks = (
            np.concatenate(parts) for parts in zip(*self._pending, strict=True)
        )
        self._pending, self._pending_n = [], 0
        slo_ttft_s, slo_tpot_s = self._slo
        ttft = first - arrival
        e2e = last - arrival
        decode = np.maximum(output - 1, 1)
        tpot = np.where(output > 1, (last - first) / decode, 0.0)
        itl = np.where(chunks > 1, (last - first) / np.maximum(chunks - 1, 1), 0.0)
        for name, values in (("ttft", ttft), ("e2e", e2e)):
            self.hist[name].add(values)
        self.hist["tpot"].add(tpot[output > 1])
        self.hist["itl"].add(itl[chunks > 1])
        self.requests += int(arrival.size)
        self.output_tokens += int(output.sum())
        self.good += int(np.sum((ttft <= slo_ttft_s) & (tpot <= slo_tpot_s)))
        if arrival.size:
            self.first_arrival_s = min(self.first_arrival_s, float(arrival.min()))
            self.last_finish_s = max(self.last_finish_s, float(last.max()))

    def figures(self, gpus: int, usd_per_gpu_hour: float) -> dict[str, float]:
        """The run's figures: latencies in ms (p50, p90, p99, mean), output tokens/s,
        goodput (requests/s meeting the SLOs), mean running batch, KV use, preemptions and
        the cost of a million output tokens. With no finished request, ``requests`` is 0 and
        every other figure but the preemptions is nan (shown as "-")."""
        self.flush()
        span = self.last_finish_s - self.first_arrival_s if self.requests else math.nan
        out: dict[str, float] = {"requests": float(self.requests)}
        for name, hist in self.hist.items():
            for q in (50, 90, 99):
                out[f"{name}_p{q}_ms"] = 1e3 * hist.quantile(q / 100)
            out[f"{name}_mean_ms"] = 1e3 * hist.mean
        throughput = self.output_tokens / span if span and span > 0 else math.nan
        out["throughput_tok_s"] = throughput
        out["goodput_req_s"] = self.good / span if span and span > 0 else math.nan
        out["mean_batch"] = self.batch_time / self.busy_s if self.busy_s else math.nan
        out["kv_use"] = self.kv_time / self.busy_s if self.busy_s else math.nan
        out["preemptions"] = float(self.preemptions)
        out["acceptance"] = (
            self.accepted_tokens / self.spec_tokens if self.spec_tokens else math.nan
        )
        # No finished request (or no span): nan, never a division by zero.
        out["usd_per_m_tokens"] = (
            gpus * usd_per_gpu_hour / 3600.0 / throughput * 1e6 if throughput > 0 else math.nan
        )
        return out
