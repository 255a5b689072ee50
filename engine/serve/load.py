"""Levels of load, policies and replications (docs/model.md, "Serving under load").

Each level (a request rate, or a concurrency for a closed loop) runs every policy over the
same replications: replication r draws one set of requests and every policy serves those
requests with the same per-request random numbers (common random numbers), so the paired
difference of two policies in a replication carries none of the workload's noise. A
figure's interval is the 95 % Student-t half-width over the replications; a policy's gain
over speculation off is the mean paired difference with its own half-width.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from engine.core.fields import ConfigError
from engine.serve.policies import POLICIES
from engine.serve.server import Server
from engine.serve.sim import simulate_load
from engine.serve.workload import CONCURRENCY_MAX, RATE_MAX, Workload

REPLICATIONS_MAX = 100
LEVELS_MAX = 64
SLO_MAX_MS = 1e7
USD_MAX = 1e4
# The most simulated request-steps a study may take (requests x (prompt chunks + output
# tokens) x levels x policies x replications, :meth:`Plan.work`), checked before it starts.
# The compiled loop does about 2.5e6 a second on one core when every step serves one request
# (the slowest case; 3e7 with full batches): this is at most about an hour, where what the
# other bounds allow (a million requests of a million tokens) would take years.
WORK_MAX = 1e10
# Student's t at 0.975 for 1..30 degrees of freedom (then the normal's 1.96).
T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
# The figures a level reports per policy, and whether more is better.
FIGURES = {
    "throughput_tok_s": True,
    "goodput_req_s": True,
    "ttft_p50_ms": False,
    "ttft_p90_ms": False,
    "ttft_p99_ms": False,
    "tpot_p50_ms": False,
    "tpot_p90_ms": False,
    "tpot_p99_ms": False,
    "itl_p50_ms": False,
    "itl_p90_ms": False,
    "itl_p99_ms": False,
    "e2e_p50_ms": False,
    "e2e_p90_ms": False,
    "e2e_p99_ms": False,
    "mean_batch": True,
    "kv_use": False,
    "preemptions": False,
    "acceptance": True,
    "usd_per_m_tokens": False,
}

# The figures a table of a load study shows, with their headers and formats.
COLUMNS = (
    ("throughput_tok_s", "tok/s", "{:.0f}"),
    ("ttft_p50_ms", "TTFT p50", "{:.1f}"),
    ("ttft_p99_ms", "p99", "{:.1f}"),
    ("tpot_p50_ms", "TPOT p50", "{:.2f}"),
    ("tpot_p99_ms", "p99", "{:.2f}"),
    ("goodput_req_s", "goodput", "{:.2f}"),
)


def half_width(values: np.ndarray) -> float:
    """The 95 % Student-t half-width of the mean of ``values`` (nan for one value)."""
    values = values[np.isfinite(values)]
    n = values.size
    if n < 2:
        return math.nan
    t = T975[n - 2] if n - 1 <= len(T975) else 1.96
    return float(t * values.std(ddof=1) / math.sqrt(n))


@dataclass(frozen=True)
class Plan:
    """What to run: ``levels`` of load (rates in requests/s, or concurrencies when
    ``closed``), ``policies``, ``replications`` of each, the SLOs (ms) that goodput counts
    and the price of a GPU-hour."""

    workload: Workload
    server: Server
    levels: tuple[float, ...]
    closed: bool = False
    policies: tuple[str, ...] = ("off", "fixed")
    replications: int = 3
    seed: int = 0
    slo_ttft_ms: float = math.inf
    slo_tpot_ms: float = math.inf
    usd_per_gpu_hour: float = 2.0
    # A trace file: its requests, arriving each level's times faster than recorded.
    trace: str | None = None

    @property
    def unit(self) -> str:
        """What a level is: a rate, a concurrency or a trace's speed."""
        return "speed" if self.trace else "concurrency" if self.closed else "rate"

    def check(self) -> None:
        if not 1 <= len(self.levels) <= LEVELS_MAX:
            raise ConfigError("levels", f"give 1 to {LEVELS_MAX} levels of load")
        for level in self.levels if self.trace is None else ():
            if self.closed and not (level == int(level) and 1 <= level <= CONCURRENCY_MAX):
                raise ConfigError("concurrency", f"must be whole numbers in [1, {CONCURRENCY_MAX}]")
            if not self.closed and not (math.isfinite(level) and 0 < level <= RATE_MAX):
                raise ConfigError("rate", f"must be numbers in (0, {RATE_MAX:g}] requests/s")
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies:
            raise ConfigError(
                "policies",
                f"unknown {unknown[0] if unknown else 'none given'} (known: {', '.join(POLICIES)})",
            )
        if not 1 <= self.replications <= REPLICATIONS_MAX:
            raise ConfigError("replications", f"must be a whole number in [1, {REPLICATIONS_MAX}]")
        for name, value in (("slo_ttft_ms", self.slo_ttft_ms), ("slo_tpot_ms", self.slo_tpot_ms)):
            if not (value == math.inf or (math.isfinite(value) and 0 < value <= SLO_MAX_MS)):
                raise ConfigError(name, f"must be a number in (0, {SLO_MAX_MS:g}] ms")
        if not (math.isfinite(self.usd_per_gpu_hour) and 0 <= self.usd_per_gpu_hour <= USD_MAX):
            raise ConfigError("usd_per_gpu_hour", f"must be a number in [0, {USD_MAX:g}]")
        self.server.check()
        for level in self.levels:  # each: a rate against its requests, a speed its trace
            self.level_workload(level).check()
        check_work(self.work())

    def work(self) -> float:
        """The estimated simulated request-steps of the whole plan
        (:meth:`engine.serve.workload.Workload.steps` of every level, for every policy and
        replication)."""
        chunk = self.server.max_num_batched_tokens
        runs = len(self.policies) * self.replications
        return runs * sum(self.level_workload(level).steps(chunk) for level in self.levels)

    def level_workload(self, level: float) -> Workload:
        if self.trace is not None:
            return replace(self.workload, rate=None, concurrency=None, trace=self.trace,
                           speed=float(level))  # fmt: skip
        if self.closed:
            return replace(self.workload, rate=None, concurrency=int(level), trace=None)
        return replace(self.workload, rate=float(level), concurrency=None, trace=None)


def check_work(steps: float) -> None:
    """ConfigError if ``steps`` simulated request-steps (:meth:`Plan.work`) exceed
    :data:`WORK_MAX`, with the estimate and the bound."""
    if steps > WORK_MAX:
        estimate, bound = (f"{x:.2g}".replace("e+", "e") for x in (steps, WORK_MAX))
        raise ConfigError(
            "requests",
            f"this study is about {estimate} simulated request-steps (requests x (prompt "
            "chunks + output tokens) x levels x policies x replications), beyond the bound "
            f"of {bound} (about an hour of CPU): give fewer requests, shorter "
            "outputs, or fewer levels, policies or replications",
        )


@dataclass
class Cell:
    """One policy at one level: each figure's value per replication."""

    level: float
    policy: str
    values: dict[str, list[float]] = field(default_factory=dict)

    def mean(self, figure: str) -> float:
        finite = [v for v in self.values.get(figure, []) if math.isfinite(v)]
        return float(np.mean(finite)) if finite else math.nan

    def half_width(self, figure: str) -> float:
        return half_width(np.asarray(self.values.get(figure, []), dtype=np.float64))


@dataclass
class LoadResult:
    """Every cell run so far, by (level, policy)."""

    plan: Plan
    cells: dict[tuple[float, str], Cell] = field(default_factory=dict)

    def paired(
        self, level: float, policy: str, figure: str, base: str = "off"
    ) -> tuple[float, float]:
        """The mean paired difference ``policy - base`` of ``figure`` at ``level`` over the
        replications, and its 95 % half-width (nan when either is missing)."""
        one, two = self.cells.get((level, policy)), self.cells.get((level, base))
        if one is None or two is None:
            return math.nan, math.nan
        a = np.asarray(one.values.get(figure, []), dtype=np.float64)
        b = np.asarray(two.values.get(figure, []), dtype=np.float64)
        if a.size != b.size or a.size == 0:
            return math.nan, math.nan
        diff = a - b
        return float(diff.mean()), half_width(diff)

    def levels_done(self) -> list[float]:
        policies = set(self.plan.policies)
        return [
            level for level in self.plan.levels if all((level, p) in self.cells for p in policies)
        ]

    def stops_paying(self, figure: str) -> float | None:
        """The first level where no speculative policy beats speculation off on ``figure``
        (throughput: more is better; p99 TPOT: less), None if one does at every level run
        (or off was not run)."""
        better = FIGURES[figure]
        spec = [p for p in self.plan.policies if p != "off"]
        if "off" not in self.plan.policies or not spec:
            return None
        for level in self.levels_done():
            off = self.cells[(level, "off")].mean(figure)
            best = [self.cells[(level, p)].mean(figure) for p in spec]
            wins = [(v > off) if better else (v < off) for v in best]
            if not any(wins):
                return level
        return None

    def verdicts(self) -> list[str]:
        """Where speculation stops paying, in throughput and in p99 TPOT, in words ("pays in
        throughput at every level run", "stops paying in p99 TPOT at rate 8"); none
        without speculation off to compare with."""
        if "off" not in self.plan.policies:
            return []
        words = []
        for figure, name in (("throughput_tok_s", "throughput"), ("tpot_p99_ms", "p99 TPOT")):
            level = self.stops_paying(figure)
            words.append(
                f"pays in {name} at every level run"
                if level is None
                else f"stops paying in {name} at {self.plan.unit} {level:g}"
            )
        return words

    def best_policy(self, level: float) -> str:
        """The policy with the most goodput at ``level`` when SLOs are set, else the most
        throughput."""
        figure = (
            "goodput_req_s"
            if math.isfinite(self.plan.slo_ttft_ms) or math.isfinite(self.plan.slo_tpot_ms)
            else "throughput_tok_s"
        )
        return max(self.plan.policies, key=lambda p: self.cells[(level, p)].mean(figure))


def run_cell(
    config: Any,
    plan: Plan,
    level: float,
    policy: str,
    *,
    cost: Any = None,
    check: Callable[[int], None] | None = None,
    on_finish: Callable[[float, str, int, np.ndarray], None] | None = None,
) -> Cell:
    """One level and policy of ``plan`` for the scenario ``config``: every replication
    (a worker process runs this alone: ``cost`` is built when not given)."""
    if cost is None:
        from engine.cost.models import build_cost

        cost = build_cost(config)
    gpus = max(cost.target_run.tp, cost.target_run.ep) if hasattr(cost, "target_run") else 1
    workload = plan.level_workload(level)
    warmup = int(workload.warmup * workload.requests)
    cell = Cell(level, policy)
    for replication in range(plan.replications):
        requests = workload.draw(plan.seed, replication)
        n = len(requests)
        outcome = simulate_load(
            config,
            cost,
            requests,
            policy,
            plan.server,
            closed=int(level) if plan.closed else None,
            seed=plan.seed,
            replication=replication,
            warmup=warmup,
            slo_ttft_s=plan.slo_ttft_ms / 1e3,
            slo_tpot_s=plan.slo_tpot_ms / 1e3,
            on_finish=(
                None if on_finish is None else partial(on_finish, level, policy, replication)
            ),
            # done: the cell's requests so far, the earlier replications' and this one's
            check=None if check is None else partial(_done_in_cell, check, replication * n),
        )
        figures = outcome.summary.figures(gpus, plan.usd_per_gpu_hour)
        for name in FIGURES:
            cell.values.setdefault(name, []).append(figures[name])
    return cell


def _done_in_cell(check: Callable[[int], None], before: int, done: int) -> None:
    check(before + done)


def run_load(
    config: Any,
    cost: Any,
    plan: Plan,
    *,
    on_cell: Callable[[Cell], None] | None = None,
    check: Callable[[int], None] | None = None,
    on_finish: Callable[[float, str, int, np.ndarray], None] | None = None,
    submit: Callable[..., Any] | None = None,
) -> LoadResult:
    """Run every (level, policy, replication) of ``plan`` for the scenario ``config`` priced
    by ``cost``. ``on_cell`` gets each finished cell; ``check(done)`` (``done``: the requests
    the current cell has finished, over its replications) may raise to stop (a cancelled
    run keeps its finished cells); ``on_finish(level, policy, replication, rows)``
    receives finished requests' records. With ``submit`` (an executor's or a Dask client's:
    ``submit(run_cell, config, plan, level, policy)`` gives a future), the cells run there,
    each on its own numbers, so the results do not depend on where they ran."""
    plan.check()
    result = LoadResult(plan)
    cells = [(level, policy) for level in plan.levels for policy in plan.policies]
    if submit is not None and on_finish is None:
        futures = [submit(run_cell, config, plan, level, policy) for level, policy in cells]
        for future in futures:
            cell = future.result()
            result.cells[(cell.level, cell.policy)] = cell
            if on_cell is not None:
                on_cell(cell)
            if check is not None:  # after on_cell: a count of the cells done includes this one
                check(0)
        return result
    for level, policy in cells:
        cell = run_cell(config, plan, level, policy, cost=cost, check=check, on_finish=on_finish)
        result.cells[(level, policy)] = cell
        if on_cell is not None:
            on_cell(cell)
    return result
