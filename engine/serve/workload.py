"""Arrivals and request lengths (docs/model.md, "Serving under load").

Open loop: requests arrive at ``rate`` a second, as a Poisson process (``cv = 1``) or a
bursty renewal process whose gaps have coefficient of variation ``cv`` (gamma gaps of
shape ``1/cv^2``: clustered for ``cv > 1``, regular for ``cv < 1``), or at the times of a
trace file. Closed loop: ``concurrency`` requests are in the system at once, a new one
arriving when one finishes (``vllm bench serve --max-concurrency``). Lengths are fixed,
uniform on [min, max], lognormal (median and sigma of the natural log, clipped to
[min, max]) or the trace's. Prompts, outputs and gaps come from three generators seeded
by (seed, replication), so every policy sees the same requests (common random numbers),
drawn a block at a time as the simulator reads them.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from engine.core.fields import ConfigError, ascii_number

if TYPE_CHECKING:
    import numpy as np

RATE_MAX = 1e4  # requests a second
CV_MAX = 10.0
SPEED_MAX = 1000.0
CONCURRENCY_MAX = 4096
REQUESTS_MAX = 1_000_000  # drawn arrays and a queue of waiting requests stay bounded
LENGTH_MAX = 1_000_000  # tokens of a prompt or an output
TRACE_MAX_BYTES = 64 * 2**20
TRACE_ROWS_MAX = 1_000_000
# The simulated span in which a run's requests arrive: at most a trace's latest arrival
# (1e9 s, 32 years). Simulated time is a float64 of seconds: up to 1e9 s it still resolves
# 0.12 us, far below a step (a step at 1e300 s would not move the clock, and gaps of a rate
# of 5e-324 are infinite). An open loop's rate must therefore be at least requests / span
# (:func:`rate_min`), and a trace's speed at least its span / this.
ARRIVAL_SPAN_MAX_S = 1e9  # (the messages write it out: 1e9)
DISTRIBUTIONS = ("fixed", "uniform", "lognormal")


def rate_min(requests: int) -> float:
    """The lowest open-loop rate (requests/s) at which ``requests`` requests arrive, on
    average, within :data:`ARRIVAL_SPAN_MAX_S`."""
    return requests / ARRIVAL_SPAN_MAX_S


@dataclass(frozen=True)
class Lengths:
    """One length distribution: ``fixed`` at ``median``; ``uniform`` on [low, high];
    ``lognormal`` with median ``median`` and log-sd ``sigma``, clipped to [low, high]."""

    dist: str = "fixed"
    median: int = 256
    sigma: float = 1.0
    low: int = 1
    high: int = 4096

    def check(self, name: str, low_bound: int) -> None:
        if self.dist not in DISTRIBUTIONS:
            raise ConfigError(f"{name}_dist", f"must be one of {', '.join(DISTRIBUTIONS)}")
        for part, value in (("", self.median), ("_min", self.low), ("_max", self.high)):
            if not low_bound <= value <= LENGTH_MAX:
                raise ConfigError(
                    f"{name}{part or '_len'}",
                    f"must be a whole number in [{low_bound}, {LENGTH_MAX:,}]",
                )
        if self.low > self.high:
            raise ConfigError(f"{name}_min", f"must be at most {name}_max ({self.high})")
        if not (math.isfinite(self.sigma) and 0.0 <= self.sigma <= 5.0):
            raise ConfigError(f"{name}_sigma", "must be a number in [0, 5]")

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        import numpy as np

        if self.dist == "fixed":
            return np.full(n, self.median, dtype=np.int64)
        if self.dist == "uniform":
            return rng.integers(self.low, self.high + 1, size=n, dtype=np.int64)
        values = np.exp(np.log(self.median) + self.sigma * rng.standard_normal(n))
        return np.clip(np.rint(values), self.low, self.high).astype(np.int64)

    def mean(self) -> float:
        """The mean length in tokens (a lognormal's unclipped mean, at most ``high``): what
        a study's work is estimated from."""
        if self.dist == "fixed":
            return float(self.median)
        if self.dist == "uniform":
            return (self.low + self.high) / 2
        return min(float(self.high), self.median * math.exp(self.sigma**2 / 2))


@dataclass(frozen=True)
class Workload:
    """The requests of one run: ``requests`` of them, open loop at ``rate`` (gaps of
    coefficient of variation ``cv``) or closed loop at ``concurrency``, or a trace file's."""

    requests: int = 200
    rate: float | None = 1.0
    concurrency: int | None = None
    cv: float = 1.0
    prompt: Lengths = Lengths(median=512, low=1, high=8192)
    output: Lengths = Lengths(median=256, low=1, high=4096)
    trace: str | None = None
    warmup: float = 0.1  # the share of the first requests left out of the metrics
    speed: float = 1.0  # a trace's arrivals come this many times faster than recorded

    def check(self) -> None:
        if not 1 <= self.requests <= REQUESTS_MAX:
            raise ConfigError("requests", f"must be a whole number in [1, {REQUESTS_MAX:,}]")
        if self.trace is None:
            if (self.rate is None) == (self.concurrency is None):
                raise ConfigError("rate", "give a rate (open loop) or a concurrency, not both")
            if self.rate is not None and not (
                math.isfinite(self.rate) and 0.0 < self.rate <= RATE_MAX
            ):
                raise ConfigError("rate", f"must be a number in (0, {RATE_MAX:g}] requests/s")
            if self.rate is not None and self.rate < rate_min(self.requests):
                raise ConfigError("rate", rate_too_low(self.requests))
            if self.concurrency is not None and not 1 <= self.concurrency <= CONCURRENCY_MAX:
                raise ConfigError(
                    "concurrency", f"must be a whole number in [1, {CONCURRENCY_MAX}]"
                )
        if not (math.isfinite(self.speed) and 0.0 < self.speed <= SPEED_MAX):
            raise ConfigError("speeds", f"must be numbers in (0, {SPEED_MAX:g}]")
        if self.trace is not None:
            span = float(_trace_once(Path(self.trace), self.requests).arrival_s[-1])
            if span / self.speed > ARRIVAL_SPAN_MAX_S:
                raise ConfigError(
                    "speeds",
                    f"must be numbers in [{span / ARRIVAL_SPAN_MAX_S:.3g}, {SPEED_MAX:g}] for "
                    f"this trace: its {span:g} s of arrivals must come within 1e9 s",
                )
        if not (math.isfinite(self.cv) and 0.0 < self.cv <= CV_MAX):
            raise ConfigError("cv", f"must be a number in (0, {CV_MAX:g}]")
        if not (math.isfinite(self.warmup) and 0.0 <= self.warmup <= 0.5):
            raise ConfigError("warmup", "must be a number in [0, 0.5]")
        self.prompt.check("prompt", 0)
        self.output.check("output", 1)

    @property
    def closed(self) -> bool:
        return self.trace is None and self.concurrency is not None

    def steps(self, chunk: int) -> float:
        """The estimated work of one run: request-steps (each request's prefill chunks of
        ``chunk`` tokens and its output tokens: at most one step each, a step that accepts
        drafts doing fewer), what a run's CPU grows with."""
        if self.trace is not None:
            import numpy as np

            read = _trace_once(Path(self.trace), self.requests)
            chunks = np.maximum(1, -(-read.prompt // chunk))  # a prompt of 0 still takes a step
            return float(chunks.sum() + read.output.sum())
        prompt_chunks = max(1, math.ceil(self.prompt.mean() / chunk))
        return self.requests * (prompt_chunks + self.output.mean())

    def longest_context(self) -> int:
        """The longest prompt and output a request of this workload may have, together."""
        if self.trace is not None:
            read = _trace_once(Path(self.trace), self.requests)
            return int((read.prompt + read.output).max())

        def longest(lengths: Lengths) -> int:
            return lengths.median if lengths.dist == "fixed" else lengths.high

        return longest(self.prompt) + longest(self.output)

    def draw(self, seed: int, replication: int) -> Requests:
        """The requests of replication ``replication``: arrival times (open loop; zeros for
        a closed loop, whose arrivals the simulator times), prompt and output lengths. Each
        of the three comes from its own generator seeded by (seed, replication), a block at
        a time: the blocks make the same requests as one draw of them all."""
        import numpy as np

        if self.trace is not None:
            read = _trace_once(Path(self.trace), self.requests)
            return Requests.of(read.arrival_s, read.prompt, read.output, 1.0 / self.speed)
        n = self.requests
        closed, rate, shape = self.closed, self.rate, 1.0 / self.cv**2

        def blocks() -> Iterator[Block]:
            streams = np.random.SeedSequence([seed, replication, 0x10AD]).spawn(3)
            prompts, outputs, gaps = (np.random.default_rng(s) for s in streams)
            last = 0.0
            for start in range(0, n, BLOCK):
                size = min(BLOCK, n - start)
                prompt = self.prompt.draw(prompts, size)
                output = self.output.draw(outputs, size)
                if closed:
                    yield np.zeros(size), prompt, output
                    continue
                assert rate is not None
                gap = gaps.gamma(shape, 1.0 / (shape * rate), size=size)
                if start == 0:
                    gap[0] = 0.0
                arrival = np.cumsum(np.concatenate(([last], gap)))[1:]  # added in order
                last = float(arrival[-1])
                yield arrival, prompt, output

        return Requests(n, blocks)


# Requests are drawn and read this many at a time.
BLOCK = 4096
Block = tuple["np.ndarray", "np.ndarray", "np.ndarray"]


class Requests:
    """The requests of one run: arrival times in seconds, prompt and output lengths in
    tokens, by request. Read a block at a time (:meth:`blocks`: the compiled simulator's
    memory then does not grow with the number of requests), or whole (the arrays, made on
    first use)."""

    def __init__(self, count: int, blocks: Callable[[], Iterator[Block]]) -> None:
        self._count = count
        self._blocks = blocks

    @classmethod
    def of(
        cls, arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray, scale: float = 1.0
    ) -> Requests:
        """Requests from whole arrays (arrival times multiplied by ``scale``)."""

        def blocks() -> Iterator[Block]:
            for start in range(0, int(prompt.size), BLOCK):
                end = start + BLOCK
                arrival = arrival_s[start:end]
                yield (
                    (arrival * scale if scale != 1.0 else arrival),
                    prompt[start:end],
                    output[start:end],
                )

        return cls(int(prompt.size), blocks)

    def __len__(self) -> int:
        return self._count

    def blocks(self) -> Iterator[Block]:
        """(arrival_s, prompt, output) blocks of at most :data:`BLOCK` requests, in order."""
        return self._blocks()

    @cached_property
    def _whole(self) -> Block:
        import numpy as np

        parts = list(self.blocks())
        return (
            np.concatenate([p[0] for p in parts]).astype(np.float64, copy=False),
            np.concatenate([p[1] for p in parts]).astype(np.int64, copy=False),
            np.concatenate([p[2] for p in parts]).astype(np.int64, copy=False),
        )

    @property
    def arrival_s(self) -> np.ndarray:
        return self._whole[0]

    @property
    def prompt(self) -> np.ndarray:
        return self._whole[1]

    @property
    def output(self) -> np.ndarray:
        return self._whole[2]


def rate_too_low(requests: int) -> str:
    """What a rate below :func:`rate_min` is told."""
    return (
        f"must be numbers in [{rate_min(requests):.3g}, {RATE_MAX:g}] requests/s with "
        f"{requests:,} requests: they must arrive within 1e9 s of simulated time "
        "(requests / rate; a float64 clock then still resolves a step)"
    )


def _trace_once(path: Path, limit: int) -> Requests:
    """:func:`read_trace`, read once while the file stays the same (every level, policy and
    replication of a study serves it)."""
    import os

    try:
        info = os.stat(path)
    except OSError:
        return read_trace(path, limit)  # which says what is wrong, in one line
    return _cached_trace(str(path), limit, info.st_mtime_ns, info.st_size, info.st_ino)


@lru_cache(maxsize=2)
def _cached_trace(path: str, limit: int, *stamp: int) -> Requests:
    return read_trace(Path(path), limit)


def read_trace(path: Path, limit: int) -> Requests:
    """A trace file: CSV rows ``arrival_s,prompt_tokens,output_tokens`` (a header line first),
    arrivals non-decreasing; at most ``limit`` rows are used. A file that is not a regular
    file, too large or malformed is refused in one line naming the line (never its text)."""
    import numpy as np

    from engine.core.inputs import read_input_text

    try:
        text = read_input_text(path, TRACE_MAX_BYTES, "trace")
    except UnicodeDecodeError:
        raise ConfigError("trace", f"{path}: not a text file (UTF-8 expected)") from None
    except OSError as error:
        raise ConfigError("trace", f"{path}: cannot read: {error.strerror or error}") from None
    lines = text.splitlines()
    header = [c.strip() for c in (lines[0].split(",") if lines else [])]
    if header != ["arrival_s", "prompt_tokens", "output_tokens"]:
        raise ConfigError(
            "trace", f"{path}: line 1 must be the header arrival_s,prompt_tokens,output_tokens"
        )
    # Three packed columns (24 bytes a row), not a list of tuples.
    rows_arrival, rows_prompt, rows_output = array("d"), array("q"), array("q")
    last = 0.0
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if len(rows_arrival) >= min(limit, TRACE_ROWS_MAX):
            break
        cells = line.split(",")
        try:
            if len(cells) != 3:
                raise ValueError
            arrival = ascii_number(cells[0])
            prompt, output = (ascii_number(c, integer=True) for c in cells[1:])
        except ValueError:
            raise ConfigError(
                "trace",
                f"{path}: line {number} must be three numbers in ASCII digits: seconds, "
                "tokens, tokens",
            ) from None
        if not (math.isfinite(arrival) and arrival >= last and arrival <= ARRIVAL_SPAN_MAX_S):
            raise ConfigError(
                "trace",
                f"{path}: line {number}: arrival_s must be finite, in [0, 1e9] and not "
                "earlier than the line before",
            )
        if not (0 <= prompt <= LENGTH_MAX and 1 <= output <= LENGTH_MAX):
            raise ConfigError(
                "trace",
                f"{path}: line {number}: tokens must be whole numbers in [0 or 1, {LENGTH_MAX:,}]",
            )
        last = arrival
        rows_arrival.append(arrival)
        rows_prompt.append(prompt)
        rows_output.append(output)
    if not rows_arrival:
        raise ConfigError("trace", f"{path}: no requests after the header")
    arrivals = np.frombuffer(rows_arrival, dtype=np.float64)
    return Requests.of(
        arrivals - arrivals[0],
        np.frombuffer(rows_prompt, dtype=np.int64),
        np.frombuffer(rows_output, dtype=np.int64),
    )
