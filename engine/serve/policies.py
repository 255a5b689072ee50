"""Policies under load: each step, the k each running request drafts (docs/model.md,
"Serving under load").

A load policy is registered once here (:func:`register`) and found by name by the command
line and the load runs. It sees the step's decoding requests (their count, contexts and
acceptance regimes) and the cost model, and returns their k:

- ``off``: k = 0, speculation off (plain decoding, and no cost of speculation);
- ``fixed``: the scenario's K for every request;
- ``schedule``: k by the current batch size from ``policy.schedule`` (vLLM's
  ``num_speculative_tokens_per_batch_size``, TensorRT-LLM's ``draft_len_schedule``);
- ``goodput``: the k in 0..``policy.k_max`` with the most expected tokens per unit of step
  time at the current batch and mean context, read in steps of 256 tokens (vLLM's dynamic
  speculative decoding, here from the cost model instead of a measured profile);
- ``budget``: adaptive verification: the step's draft tokens capped at ``verify_budget``,
  given position by position to the requests whose next draft is likeliest accepted (its
  survival probability under the request's regime).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.core.fields import schedule_k

if TYPE_CHECKING:
    import numpy as np

# numpy is imported inside the policies: the command line lists them (spectui load --help)
# without it, as every subcommand's parser is built at each start.


@dataclass(frozen=True)
class StepView:
    """What a policy sees of a step: the decoding requests' contexts and regimes, the
    survival ``survival[g, j] = P(n >= j | regime g)`` (j = 0..k_max), the cost model and
    the scenario."""

    contexts: np.ndarray
    regimes: np.ndarray
    survival: np.ndarray
    cost: Any
    config: Any
    verify_budget: int
    tax_us: float


Chooser = Callable[[StepView], "np.ndarray"]


@dataclass(frozen=True)
class LoadPolicy:
    """A registered load policy: ``steady`` when its choice depends only on the batch size
    and the requests' regimes (not their contexts), so that the simulator may keep it over
    a run of decode steps; ``reads_regimes`` when it depends on the regimes; ``by_count``
    when the i-th decoder's k depends only on i and the count of decoders (and, with
    ``context_step``, their mean context; with ``reads_regimes``, their regimes), as
    ``base + 1`` for the first ``extra`` and ``base`` for the others: the simulator then runs
    its compiled loop (engine.serve.stepper), asking once for each count and step."""

    name: str
    description: str
    choose: Chooser
    steady: bool
    reads_regimes: bool
    context_step: int = 0  # a choice by context reads it in steps of this many tokens
    by_count: bool = False
    # Its k is a cap a model-free proposer (n-gram, suffix decoding) may draft up to: a
    # policy that prices draft passes or ranks draft positions by acceptance alone (not by
    # the proposer's hit rate) does not serve one (check_proposer).
    model_free: bool = False


def context_bucket(contexts: np.ndarray, step: int) -> float:
    """The mean context as a policy that reads it in steps of ``step`` tokens sees it: the
    middle of its step (its choice holds while the mean stays in the step)."""
    return (math.floor(float(contexts.mean()) / step) + 0.5) * step


POLICIES: dict[str, LoadPolicy] = {}


def register(
    name: str,
    description: str,
    *,
    steady: bool = True,
    reads_regimes: bool = False,
    context_step: int = 0,
    by_count: bool = False,
    model_free: bool = False,
) -> Callable[[Chooser], Chooser]:
    """Register a load policy under ``name`` (one line of ``description``)."""

    def add(choose: Chooser) -> Chooser:
        if name in POLICIES:
            raise ValueError(f"load policy {name!r} is already registered")
        POLICIES[name] = LoadPolicy(
            name, description, choose, steady, reads_regimes, context_step, by_count, model_free
        )
        return choose

    return add


def check_proposer(config: Any, policies: tuple[str, ...] | list[str]) -> None:
    """ConfigError naming ``policies`` when ``config``'s proposer is model-free and one of
    ``policies`` does not serve one (:attr:`LoadPolicy.model_free`), one line with the
    ones that do."""
    from engine.core.fields import ConfigError
    from engine.core.parts import PROPOSER

    proposer = PROPOSER.of(config)
    if not proposer.model_free:
        return
    refused = [p for p in policies if p in POLICIES and not POLICIES[p].model_free]
    if refused:
        served = ", ".join(p for p, policy in POLICIES.items() if policy.model_free)
        raise ConfigError(
            "policies",
            f"proposer {proposer.name} under load: supports policies {served}, not "
            f"{', '.join(refused)}",
        )


@register("off", "speculation off: k = 0, plain decoding", by_count=True, model_free=True)
def _off(view: StepView) -> np.ndarray:
    import numpy as np

    return np.zeros(view.contexts.size, dtype=np.int64)


@register("fixed", "the scenario's K for every request", by_count=True, model_free=True)
def _fixed(view: StepView) -> np.ndarray:
    import numpy as np

    return np.full(view.contexts.size, view.config.k, dtype=np.int64)


@register(
    "schedule", "k by the current batch size (policy.schedule)", by_count=True, model_free=True
)
def _schedule(view: StepView) -> np.ndarray:
    import numpy as np

    k = schedule_k(view.config.schedule, int(view.contexts.size))
    return np.full(view.contexts.size, k, dtype=np.int64)


def expected_tokens(survival: np.ndarray, mix: np.ndarray | None = None) -> np.ndarray:
    """Expected tokens a cycle of k drafts gives, k = 0..k_max: ``sum_{j<=k} S_j`` (the
    bonus token is S_0 = 1), averaged over the regimes' weights ``mix``."""
    import numpy as np

    tokens = np.cumsum(survival, axis=-1)
    if tokens.ndim == 1:
        return tokens
    weights = np.full(tokens.shape[0], 1.0 / tokens.shape[0]) if mix is None else mix
    return np.asarray(weights @ tokens, dtype=np.float64)


GOODPUT_CONTEXT_STEP = 256


@register(
    "goodput",
    "the k with the most expected tokens per step time at this batch",
    reads_regimes=True,
    context_step=GOODPUT_CONTEXT_STEP,
    by_count=True,
)
def _goodput(view: StepView) -> np.ndarray:
    import numpy as np

    from engine.core.kernel import cycle_times

    batch = int(view.contexts.size)
    k_max = min(int(view.config.k_max), view.survival.shape[1] - 1)
    ks = np.arange(k_max + 1, dtype=np.float64)
    context = context_bucket(view.contexts, GOODPUT_CONTEXT_STEP)
    step = np.asarray(cycle_times(view.cost, ks, batch, context)[2], dtype=np.float64)
    # Each request's own regime: the same k for all of them (the batch drafts in lockstep),
    # the one best for the regimes the batch holds now.
    counts = np.bincount(view.regimes, minlength=view.survival.shape[0])
    tokens = expected_tokens(view.survival[:, : k_max + 1], counts / counts.sum())
    return np.full(batch, int(np.argmax(tokens / step)), dtype=np.int64)


@register(
    "budget",
    "adaptive verification: a step's draft tokens capped at verify_budget",
    reads_regimes=True,
    by_count=True,  # with one regime: the budget dealt a position at a time, in order
)
def _budget(view: StepView) -> np.ndarray:
    import numpy as np

    batch = int(view.contexts.size)
    k_max = min(int(view.config.k_max), view.survival.shape[1] - 1)
    budget = min(view.verify_budget, batch * k_max)
    if budget <= 0:
        return np.zeros(batch, dtype=np.int64)
    # Request i's position j (1..k_max) is worth S[g_i, j]; survival falls with j, so the
    # budget's best positions are a prefix of each request's. Ties go to earlier requests.
    worth = view.survival[view.regimes, 1 : k_max + 1].ravel()
    order = np.lexsort((np.arange(worth.size), -worth))[:budget]
    return np.bincount(order // k_max, minlength=batch).astype(np.int64)
