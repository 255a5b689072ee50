"""Spec-Bench anchors for token trees (issue #14, "Anchors the README reports").

    .venv/bin/python benchmarks/tree_anchor.py

Spec-Bench's A100 leaderboard (Vicuna-13B-v1.3, greedy, fp16, batch 1) publishes, per method,
the mean accepted length ``tau`` (tokens per target forward pass, the bonus token included)
and the speedup over vanilla decoding. Both are measured over the same tokens, so their ratio
is the time of one speculative cycle in vanilla decoding steps:

    implied cycle cost = tau / speedup      (target steps per cycle)

The roofline predicts that cost from first principles: one verify pass of the method's tree
(``verify_width`` tokens: every node plus the root) and its draft passes, over one decoding
step, all at batch 1 and context ``CONTEXT``:

    roofline cycle cost = (verify_us(w) + draft passes) / verify_us(1)

``verify_us`` comes from the engine's roofline cost model for the scenario
``SpecConfig(cost_model="roofline", gpu="a100-80gb", target="vicuna-13b")``. The drafters
are not shipped model specs: their shapes are below (``DRAFTERS``), each pass costed by the
same additive roofline formula and efficiencies. The last column is the fixed overhead per
pass (``t0_us``, kernel launches, Python, tree bookkeeping) that would make the roofline
reproduce the published cost: ``(V + D - C * S) / (C - n)`` with ``V``, ``D``, ``S`` the
verify, draft and step times, ``C`` the published cost and ``n`` the passes per cycle.

The published figures and tree shapes, with their sources: tests/fixtures/anchors/spec_bench.csv.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core.config import SpecConfig
from engine.cost.models import build_cost
from engine.cost.roofline import RooflineCost, RooflineMaxCost
from engine.cost.specs import ModelSpec, get_model

FIXTURE = Path(__file__).resolve().parent.parent / "tests/fixtures/anchors/spec_bench.csv"
SOURCE_PREFIX = "# source:"
GPU = "a100-80gb"
TARGET = "vicuna-13b"
CONTEXT = 512  # tokens in the KV cache: a Spec-Bench prompt plus part of its answer
BATCH = 1


@dataclass(frozen=True)
class Anchor:
    """One method's published Spec-Bench figures and the tree shape it ran with."""

    method: str
    tau: float
    speedup: float
    verify_width: int
    draft_nodes: int
    depth: int
    draft_passes: int
    draft_width: int
    drafter: str

    @property
    def implied_cycle_steps(self) -> float:
        """The cycle's time in vanilla decoding steps: ``tau / speedup``."""
        return implied_cycle_steps(self.tau, self.speedup)


def implied_cycle_steps(tau: float, speedup: float) -> float:
    """Target decoding steps one cycle takes, from its mean accepted length and speedup:
    a cycle yields ``tau`` tokens, vanilla decoding one per step, so
    ``speedup = tau / cost`` and ``cost = tau / speedup``."""
    return tau / speedup


def read_sources(path: Path = FIXTURE) -> list[str]:
    """The fixture's ``# source:`` lines, prefix removed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[len(SOURCE_PREFIX) :].strip() for line in lines if line.startswith(SOURCE_PREFIX)]


def read_anchors(path: Path = FIXTURE) -> list[Anchor]:
    """The fixture's rows (comment lines skipped), in file order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = csv.DictReader(line for line in lines if not line.startswith("#"))
    return [
        Anchor(
            method=row["method"],
            tau=float(row["tau"]),
            speedup=float(row["speedup"]),
            verify_width=int(row["verify_width"]),
            draft_nodes=int(row["draft_nodes"]),
            depth=int(row["depth"]),
            draft_passes=int(row["draft_passes"]),
            draft_width=int(row["draft_width"]),
            drafter=row["drafter"],
        )
        for row in rows
    ]


# Drafter shapes (fp16, like the target): shipped model specs (engine/cost/data/models.toml),
# where the validation table's tree entries read them too.
DRAFTERS: dict[str, tuple[ModelSpec, bool]] = {
    "yuhuili/EAGLE3-Vicuna1.3-13B": (get_model("eagle3-vicuna-13b"), False),
    "yuhuili/EAGLE-Vicuna-13B-v1.3": (get_model("eagle-vicuna-13b"), False),
    "FasterDecoding/medusa-vicuna-13b-v1.3 (4 heads)": (get_model("medusa-vicuna-13b-4"), True),
    "double7/vicuna-68m": (get_model("vicuna-68m"), False),
}


def scenario(form: str = "roofline") -> SpecConfig:
    """Vicuna-13B verified on an A100 80GB at batch 1, context :data:`CONTEXT`, t0 = 0, in
    roofline form ``form``. Its draft field is not read: drafts use :data:`DRAFTERS`."""
    return SpecConfig(
        cost_model=form,
        gpu=GPU,
        target=TARGET,
        draft=TARGET,
        batch_size=BATCH,
        prompt_len=CONTEXT,
    )


Roofline = RooflineCost | RooflineMaxCost


def roofline_cost(form: str = "roofline") -> Roofline:
    """The scenario's cost model in form ``form`` (additive or max)."""
    cost = build_cost(scenario(form))
    assert isinstance(cost, RooflineCost | RooflineMaxCost)
    return cost


def pass_us(cost: Roofline, model: ModelSpec, width: int, context: int) -> float:
    """One pass of ``model`` over ``width`` tokens at batch 1, by ``cost``'s formula and
    parameters (the cost model with ``model`` as its target)."""
    return float(replace(cost, target=model).verify_us(width, BATCH, context))


@dataclass(frozen=True)
class Row:
    """One method's published cycle cost and a roofline's, in target decoding steps."""

    anchor: Anchor
    verify_steps: float  # the verify pass of the whole tree / one decoding step
    draft_steps: float  # the draft passes (or Medusa's heads) / one decoding step
    step_us: float  # one decoding step, microseconds
    passes: int  # passes per cycle: the verify pass and the draft passes

    @property
    def model_cycle_steps(self) -> float:
        """The roofline's cycle cost: verify plus drafting, in decoding steps."""
        return self.verify_steps + self.draft_steps

    @property
    def model_speedup(self) -> float:
        """The speedup the roofline predicts for the published ``tau``."""
        return self.anchor.tau / self.model_cycle_steps

    @property
    def published_over_model(self) -> float:
        """How much dearer the published cycle is than the roofline's (1 = agreement)."""
        return self.anchor.implied_cycle_steps / self.model_cycle_steps

    @property
    def reconciling_t0_us(self) -> float:
        """The fixed overhead per pass (``cost.t0_us``) with which the roofline gives the
        published cost: ``(C_model - C) * S / (C - n)``. Negative when no overhead can: an
        overhead pulls the cost towards ``n`` passes per step."""
        published = self.anchor.implied_cycle_steps
        return (self.model_cycle_steps - published) * self.step_us / (published - self.passes)


def anchor_row(anchor: Anchor, cost: Roofline, context: int = CONTEXT) -> Row:
    """The roofline's cycle cost for ``anchor``'s tree on ``cost``'s hardware and target."""
    step_us = float(cost.verify_us(1, BATCH, context))
    verify_us = float(cost.verify_us(anchor.verify_width, BATCH, context))
    drafter, in_verify = DRAFTERS[anchor.drafter]
    if in_verify:  # heads inside the verify pass: one weight read, no KV cache, no own t0
        draft_us = pass_us(replace(cost, t0_us=0.0), drafter, anchor.draft_width, 0)
    else:
        draft_us = anchor.draft_passes * pass_us(cost, drafter, anchor.draft_width, context)
    return Row(
        anchor=anchor,
        verify_steps=verify_us / step_us,
        draft_steps=draft_us / step_us,
        step_us=step_us,
        passes=1 + anchor.draft_passes,
    )


def table(form: str = "roofline", context: int = CONTEXT) -> list[Row]:
    """Every fixture row against the roofline in form ``form`` at ``context`` tokens."""
    cost = roofline_cost(form)
    return [anchor_row(anchor, cost, context) for anchor in read_anchors()]


def verdict(additive: Row, ideal: Row) -> str:
    """Plain words on where the two roofline forms and the published cost part."""
    name, published = additive.anchor.method, additive.anchor.implied_cycle_steps
    low, high = ideal.model_cycle_steps, additive.model_cycle_steps
    where = f"{name}: published {published:.2f} steps per cycle, roofline {low:.2f} (max) to "
    where += f"{high:.2f} (additive)"
    if abs(additive.published_over_model - 1) <= 0.05:
        return f"{where}: the additive roofline reproduces it within 5%."
    if published > high:
        t0 = additive.reconciling_t0_us
        fix = (
            f"the additive form needs t0 = {t0:.0f} us on each of its {additive.passes} passes"
            if t0 > 0
            else "no per-pass overhead closes it"
        )
        return f"{where}: dearer than both ({additive.published_over_model:.2f}x); {fix}."
    if published >= low:
        return (
            f"{where}: between the two. The additive form is "
            f"{1 / additive.published_over_model:.2f}x too dear: it adds the verify pass's "
            f"compute to its weight read, which a real pass overlaps; or a fixed overhead of "
            f"t0 = {additive.reconciling_t0_us:.0f} us on its {additive.passes} pass(es) "
            f"dilutes the extra cost of the wide verify."
        )
    return f"{where}: cheaper than both forms."


def t0_summary(rows: list[Row]) -> str:
    """Whether one fixed overhead per pass (the engine's ``t0_us``) fits every method."""
    fits = {row.anchor.method: row.reconciling_t0_us for row in rows}
    spread = ", ".join(f"{name} {t0:.0f}" for name, t0 in fits.items())
    low, high = min(fits.values()), max(fits.values())
    if high <= 1.25 * low:
        return f"One t0 fits every method to 25% ({spread} us)."
    return (
        f"No single t0 fits: the per-pass overhead that reconciles each method runs from "
        f"{low:.0f} to {high:.0f} us ({spread}). A fixed cost per pass the same for the "
        f"40-layer target and a 1-layer head is not what the measurements show."
    )


def main() -> None:
    cost = roofline_cost()
    rows, ideal = table("roofline"), table("roofline_max")
    print(
        f"Spec-Bench, Vicuna-13B-v1.3, A100 80GB, batch {BATCH}, fp16. Roofline: "
        f"{cost.hardware.name}, context {CONTEXT}, t0 = 0; one decoding step "
        f"{rows[0].step_us:.0f} us additive ({cost.bound(1, BATCH, CONTEXT)}-bound), "
        f"{ideal[0].step_us:.0f} us max"
    )
    header = (
        f"{'method':<8} {'tau':>5} {'speedup':>7} {'cost':>5} | {'w':>3} {'drafts':>6} "
        f"{'verify':>6} {'draft':>5} {'cost':>5} {'speedup':>7} | {'cost':>5} {'speedup':>7} | "
        f"{'pub/add':>7} {'t0 us':>6}"
    )
    print(
        f"{'':<8} {'published':^19} | {'additive roofline (target steps)':^38} | "
        f"{'max roofline':^13} |"
    )
    print(header)
    print("-" * len(header))
    for row, low in zip(rows, ideal, strict=True):
        a = row.anchor
        print(
            f"{a.method:<8} {a.tau:>5.2f} {a.speedup:>6.2f}x {a.implied_cycle_steps:>5.2f} | "
            f"{a.verify_width:>3} {a.draft_passes:>6} {row.verify_steps:>6.3f} "
            f"{row.draft_steps:>5.3f} {row.model_cycle_steps:>5.3f} {row.model_speedup:>6.2f}x | "
            f"{low.model_cycle_steps:>5.3f} {low.model_speedup:>6.2f}x | "
            f"{row.published_over_model:>7.2f} {row.reconciling_t0_us:>6.0f}"
        )
    print()
    print("cost: target decoding steps per cycle, tau / speedup (published) or verify + draft;")
    print("w: tokens verified per cycle (tree nodes + root); drafts: draft passes per cycle;")
    print("pub/add: published cost / additive roofline cost; t0 us: the per-pass overhead with")
    print("which the additive roofline gives the published cost (negative: none can).")
    print()
    for row, low in zip(rows, ideal, strict=True):
        print(verdict(row, low))
    print(t0_summary(rows))
    print()
    print("Sources:")
    for source in read_sources():
        print(f"- {source}")


if __name__ == "__main__":
    main()
