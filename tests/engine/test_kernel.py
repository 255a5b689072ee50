"""The one cycle kernel (engine/core/kernel.py): cost models wired through a scenario, exact
values against hand computations, and a source guard that the cycle time is computed in
one place."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs
from engine.cost.roofline import pass_us_additive, pass_us_max
from engine.cost.specs import get_hardware, get_model
from engine.simulate.exact import speedup_exact, speedup_limit, tokens_per_cycle

REPO = Path(__file__).resolve().parents[2]
TABLE_CSV = REPO / "tests" / "engine" / "cost" / "fixtures" / "latency_table.csv"

# --- The issue's roofline check table, through the wired cost models ------------------

# (B, K, L) -> (additive, max): verify pass / decoding step, Llama-3.1-8B on an H100, from
# issue #10 (1k = 1024). tests/engine/cost/test_roofline.py checks the formula; this checks
# that a scenario reaches it: SpecConfig -> build_cost -> the kernel's cycle costs.
ISSUE_TABLE = {
    (1, 3, 1024): ((1.011, "memory"), (1.000, "memory")),
    (64, 3, 1024): ((1.424, "memory"), (1.000, "memory")),
    (128, 5, 1024): ((2.008, "compute"), (1.299, "compute")),
    (64, 3, 8192): ((1.182, "memory"), (1.000, "memory")),
    (64, 3, 32768): ((1.092, "memory"), (1.000, "memory")),
}


def _h100_8b(form: str, batch: int, k: int, prompt: int, **more) -> SpecConfig:
    return SpecConfig(
        cost_model=form,
        gpu="h100",
        target="llama-3.1-8b",
        draft="llama-3.2-1b",
        batch_size=batch,
        k=k,
        prompt_len=prompt,
        **more,
    )


@pytest.mark.parametrize("point", list(ISSUE_TABLE), ids=lambda p: "B{}-K{}-L{}".format(*p))
def test_issue_check_table_through_the_scenario(point):
    batch, k, context = point
    for form, (ratio, bound) in zip(("roofline", "roofline_max"), ISSUE_TABLE[point], strict=True):
        costs = cycle_costs(_h100_8b(form, batch, k, context, tokens_per_seq=1))
        assert round(costs.limit_verify_us / costs.limit_step_us, 3) == ratio, form
        assert costs.bound == bound, form


def test_roofline_check_script_prints_the_issue_figures():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "roofline_check.py")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == len(ISSUE_TABLE)
    for row, ((additive, _), (maximum, _)) in zip(rows, ISSUE_TABLE.values(), strict=True):
        # B K L verify step additive issue verify step max issue bounds
        assert float(row[5]) == float(row[6]) == additive
        assert float(row[9]) == float(row[10]) == maximum


@pytest.mark.parametrize("form", ["roofline", "roofline_max"])
@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_every_cycle_is_priced_at_its_own_context(form, tail):
    """cycle r (tokens still needed) runs at L = prompt_len + (T - r): k draft passes of the
    draft model (w = 1) and one target pass over w = k + 1 tokens; the baseline pays one
    decoding step per token at L = prompt_len + t."""
    hw, target, draft = get_hardware("h100"), get_model("llama-3.1-8b"), get_model("llama-3.2-1b")
    pass_us = pass_us_additive if form == "roofline" else pass_us_max
    prompt, total, batch, big_k = 3000, 20, 16, 4
    config = _h100_8b(form, batch, big_k, prompt, tokens_per_seq=total, tail=tail)
    costs = cycle_costs(config)
    baseline = 0.0
    for r in range(1, total + 1):
        context = prompt + total - r
        k = big_k if tail == "full" else min(big_k, r - 1)
        draft_us = k * pass_us(draft, hw, 1, batch, context)
        verify_us = pass_us(target, hw, k + 1, batch, context)
        assert costs.k[r] == k
        assert costs.draft_us[r] == pytest.approx(draft_us, rel=1e-12)
        assert costs.verify_us[r] == pytest.approx(verify_us, rel=1e-12)
        assert costs.cycle_us[r] == pytest.approx(draft_us + verify_us, rel=1e-12)
        baseline += pass_us(target, hw, 1, batch, prompt + (r - 1))
    assert costs.baseline_us == pytest.approx(baseline, rel=1e-12)
    # One draft pass over one decoding step, at the prompt's context.
    step = pass_us(target, hw, 1, batch, prompt)
    assert costs.cost_ratio == pytest.approx(pass_us(draft, hw, 1, batch, prompt) / step)


# --- Exact values against hand computations -------------------------------------------


def _fixed_tokens_per_cycle(a: float, k: int) -> float:
    return (1 - a ** (k + 1)) / (1 - a)


def test_roofline_limit_is_the_steady_state_at_the_prompt():
    """speedup_limit = E[n + 1] x step / cycle, all at L = prompt_len (hand, from the pass
    times): under a roofline the context grows along a sequence, so this is the steady
    state at the prompt, not the limit of speedup_exact."""
    hw, target, draft = get_hardware("h100"), get_model("llama-3.1-8b"), get_model("llama-3.2-1b")
    a, k, batch, prompt = 0.8, 4, 32, 4096
    config = _h100_8b("roofline", batch, k, prompt, acceptance_rate=a)
    step = pass_us_additive(target, hw, 1, batch, prompt)
    cycle = k * pass_us_additive(draft, hw, 1, batch, prompt) + pass_us_additive(
        target, hw, k + 1, batch, prompt
    )
    hand = _fixed_tokens_per_cycle(a, k) * step / cycle
    assert speedup_limit(config) == pytest.approx(hand, rel=1e-12)
    # The context grows: a long sequence runs at ever longer contexts, where a step costs
    # more in KV reads for drafts and target alike; its speedup is not the prompt's.
    long = config.replace(tokens_per_seq=20_000)
    assert abs(speedup_exact(long) - hand) > 1e-3


@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_roofline_exact_at_two_tokens_by_hand(tail):
    """T = 2: the first cycle at L = p; if it accepts nothing (probability 1 - a), a second
    cycle at L = p + 1 (under clamp: k = 1, then a plain step with no drafts)."""
    hw, target, draft = get_hardware("h100"), get_model("llama-3.1-8b"), get_model("llama-3.2-1b")
    a, big_k, batch, p = 0.6, 3, 8, 1000
    config = _h100_8b("roofline", batch, big_k, p, acceptance_rate=a, tokens_per_seq=2, tail=tail)

    def cycle(k: int, context: int) -> float:
        return k * pass_us_additive(draft, hw, 1, batch, context) + pass_us_additive(
            target, hw, k + 1, batch, context
        )

    first, second = (big_k, big_k) if tail == "full" else (1, 0)
    expected_time = cycle(first, p) + (1 - a) * cycle(second, p + 1)
    baseline = pass_us_additive(target, hw, 1, batch, p) + pass_us_additive(
        target, hw, 1, batch, p + 1
    )
    assert speedup_exact(config) == pytest.approx(baseline / expected_time, rel=1e-12)


CONTEXT_FREE = {
    "linear": {"cost.verify_token_us": 30.0, "k": 5, "acceptance_rate": 0.7},
    "table": {
        "cost.model": "table",
        "cost.table": str(TABLE_CSV),
        "workload.batch_size": 6,
        "k": 3,
        "draft_model": "position_decay",
    },
}


@pytest.mark.parametrize("model", list(CONTEXT_FREE))
def test_context_free_exact_tends_to_the_limit(model):
    """For costs that ignore the context, speedup_exact -> speedup_limit as T grows, with
    a gap of order 1/T (the last cycle's waste, spread over T tokens)."""
    config = SpecConfig().replace(**CONTEXT_FREE[model])
    limit = speedup_limit(config)
    gaps = [
        limit - speedup_exact(config.replace(tokens_per_seq=t)) for t in (1_000, 10_000, 100_000)
    ]
    assert all(gap > 0 for gap in gaps)
    assert gaps[2] < 1e-4 * limit
    assert 9.0 < gaps[0] / gaps[1] < 11.0
    assert 9.0 < gaps[1] / gaps[2] < 11.0


def test_linear_limit_is_leviathans_formula():
    a, k, draft, verify, per_token = 0.75, 6, 25.0, 180.0, 12.0
    config = SpecConfig(k=k, acceptance_rate=a, draft_cost_us=draft, verify_cost_us=verify).replace(
        **{"cost.verify_token_us": per_token}
    )
    assert tokens_per_cycle(config) == pytest.approx(_fixed_tokens_per_cycle(a, k), rel=1e-14)
    hand = _fixed_tokens_per_cycle(a, k) * verify / (k * draft + verify + per_token * k)
    assert speedup_limit(config) == pytest.approx(hand, rel=1e-14)


# --- The cycle time is computed in one place -----------------------------------------

# Where costs may be combined: the field table, the kernel and the cost models themselves.
# A serving step (a batch of requests drafting in lockstep, one verify pass over every
# token) is priced in one place too: engine/serve/pricing.py.
ALLOWED = (
    "engine/core/config.py",
    "engine/core/kernel.py",
    "engine/cost/",
    "engine/serve/pricing.py",
)
# The linear cost model's fields (config attributes or CSV columns). Outside ALLOWED they may
# be shown (f-strings, labels) but not computed with: every time comes from the kernel.
LINEAR_FIELDS = {"draft_cost_us", "verify_cost_us", "verify_token_us"}
# Restatements found when this guard was written, reported to their owners and tolerated
# until fixed: (path, rule) -> how many. A new one anywhere fails; fixing one needs no edit.
KNOWN = {
    # the speedup view's "costs" overlay scales draft_cost_us: only under the linear cost
    # model (other cost models overlay the batch size instead)
    ("spectui/widgets/speedup_view.py", "linear cost field in arithmetic"): 1,
}


def _names(node: ast.AST) -> set[str]:
    """Identifier words in an expression: names, attributes and string subscripts, split
    at underscores and kept whole ("draft_us" gives draft_us, draft, us)."""
    words: set[str] = set()
    for sub in ast.walk(node):
        text = None
        if isinstance(sub, ast.Name):
            text = sub.id
        elif isinstance(sub, ast.Attribute):
            text = sub.attr
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
        if text and text.isidentifier():
            words.add(text)
            words.update(text.split("_"))
    return words


def _in_fstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.JoinedStr):
            return True
    return False


def restatements(source: str) -> list[tuple[str, int]]:
    """(rule, line) of each place ``source`` computes a cycle's cost itself:

    - "draft + verify": an addition of a draft time and a verify time;
    - "linear cost field in arithmetic": draft_cost_us, verify_cost_us or verify_token_us
      (a config attribute, a variable or a column) as an operand of arithmetic;
    - "config.cost_ratio": the linear cost model's draft/verify ratio read from a config
      outside an f-string (the kernel's ``CycleCosts.cost_ratio`` holds every model's)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                left, right = _names(node.left), _names(node.right)
                if ("draft" in left and "verify" in right) or (
                    "verify" in left and "draft" in right
                ):
                    found.append(("draft + verify", node.lineno))
            for operand in (node.left, node.right):
                direct = operand
                if isinstance(direct, ast.Subscript) and isinstance(direct.slice, ast.Constant):
                    words = {direct.slice.value}
                elif isinstance(direct, ast.Attribute):
                    words = {direct.attr}
                elif isinstance(direct, ast.Name):
                    words = {direct.id}
                else:
                    continue
                if words & LINEAR_FIELDS:
                    found.append(("linear cost field in arithmetic", node.lineno))
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "cost_ratio"
            and isinstance(node.value, ast.Name | ast.Attribute)
            and (node.value.id if isinstance(node.value, ast.Name) else node.value.attr).endswith(
                "config"
            )
            and not _in_fstring(node, parents)
        ):
            found.append(("config.cost_ratio", node.lineno))
    return sorted(set(found), key=lambda item: item[1])


def test_the_guard_sees_restatements():
    """The checker itself: what it must flag, and what it must let through."""
    flagged = {
        "t = k * config.draft_cost_us + config.verify_cost_us": "linear cost field in arithmetic",
        "t = costs.draft_us[r] + costs.verify_us[r]": "draft + verify",
        "t = draft + verify": "draft + verify",
        "s = cum_tokens * verify_cost_us / cum_time_us": "linear cost field in arithmetic",
        "c = frame['draft_cost_us'] / frame['verify_cost_us']": "linear cost field in arithmetic",
        "metrics['cost_ratio'] = config.cost_ratio": "config.cost_ratio",
        "show(self.config.cost_ratio)": "config.cost_ratio",
    }
    for line, rule in flagged.items():
        assert rule in [r for r, _ in restatements(line)], line
    for line in (
        "text = f'draft {config.draft_cost_us:g} us (ratio {config.cost_ratio:.3g})'",
        "ratio = costs.cost_ratio * k",
        "t = costs.cycle_us[r] + elapsed",
        "columns = ('draft_cost_us', 'verify_cost_us')",
        "cost = LinearCost(config.draft_cost_us, config.verify_cost_us)",
    ):
        assert restatements(line) == [], line


def test_the_cycle_time_is_added_up_once_in_the_kernel():
    """kernel.py adds a draft and a verify time in exactly one place, ``cycle_times``."""
    source = (REPO / "engine" / "core" / "kernel.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    sums = [line for rule, line in restatements(source) if rule == "draft + verify"]
    assert len(sums) == 1
    (function,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.lineno <= sums[0] <= node.end_lineno
    ]
    assert function.name == "cycle_times"


def test_no_module_outside_the_kernel_restates_a_cycle_cost():
    counts: dict[tuple[str, str], list[int]] = {}
    for folder in ("engine", "spectui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative.startswith(ALLOWED):
                continue
            for rule, line in restatements(path.read_text(encoding="utf-8")):
                counts.setdefault((relative, rule), []).append(line)
    unexpected = {
        f"{path}:{','.join(map(str, lines))} {rule}"
        for (path, rule), lines in counts.items()
        if len(lines) > KNOWN.get((path, rule), 0)
    }
    assert not unexpected, (
        "cycle costs restated outside engine/core/kernel.py (take them from "
        f"engine.core.kernel.cycle_costs): {sorted(unexpected)}"
    )


def test_long_sequences_cycle_costs_do_not_pile_up_in_memory():
    """Five arrays of T + 1 floats per configuration: a sweep of long sequences keeps none."""
    import gc
    import tracemalloc

    from engine.core.kernel import CACHED_TOKENS_MAX, cycle_costs

    tokens = 4 * CACHED_TOKENS_MAX  # 2 MB an array
    gc.collect()
    tracemalloc.start()
    try:
        for k in range(1, 11):
            costs = cycle_costs(SpecConfig(tokens_per_seq=tokens, k=k))
            assert costs.cycle_us.size == tokens + 1
        del costs
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 5 * 8 * tokens  # less than one configuration's table left behind
