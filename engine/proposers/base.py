"""What every proposer declares: :class:`ProposerPart`, and the fields the model-free ones
share.

A proposer says where a cycle's drafts come from. ``model`` (the default) is a draft model
or head whose passes the cost model prices: every scenario before proposers. A
**model-free** proposer (n-gram / prompt lookup, suffix decoding) has no draft pass on the
accelerator: each step pays a CPU look-up (``proposer.cpu_us``) and drafts only when the
context has a match (``proposer.hit_rate``, per step). A step with a match drafts
``length`` tokens (at most the tail-ruled K), accepted by the scenario's acceptance model as
a draft model's would be (the acceptance given a hit); a step without one is a plain
decoding step (one target pass of w = 1 at the baseline step's cost, one token), plus the
look-up (docs/model.md, "Proposers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from engine.core.fields import ConfigError, field
from engine.core.parts import ACCEPTANCE, POLICY, SHAPE, Part

if TYPE_CHECKING:
    import numpy as np

# The share of decoding steps that found a match, by default: vLLM PR #24344's n-gram run
# (K = 5, code editing on Llama-3.1-8B-Instruct; catalog row vllm-24344-ngram-k5-edit):
# 993 steps drafted and 821 tokens came from steps without a draft, 993 / 1814 = 0.547.
HIT_RATE_DEFAULT = 0.547
HIT_RATE_SOURCE = "vLLM PR #24344"  # where the default comes from, as the CLI says it
# The CPU time of one look-up, by default: llama.cpp's ngram-simple in a real llama-server
# (SmolLM2-135M, one thread; /work/shared/fixtures/llamacpp-cpu/srv_ngram_simple_k4.log,
# its last statistics line): 180 look-ups in 0.267 ms, 1.48 us each.
CPU_US_DEFAULT = 1.5
CPU_US_MAX = 1e6

HIT_RATE = field(
    "proposer.hit_rate",
    HIT_RATE_DEFAULT,
    label="hit rate",
    kind="prob",
    help="ngram, suffix: the share of steps whose context has a match (a step without one "
    "is a plain decoding step); default 0.547, vLLM PR #24344's n-gram run on code "
    "editing (993 of 1,814 steps drafted); llama.cpp's ngram-simple drafted on 2 of 125 "
    "steps of a free-text prompt",
    seed_key=True,
)
CPU_US = field(
    "proposer.cpu_us",
    CPU_US_DEFAULT,
    label="lookup us",
    kind="number",
    low=0.0,
    high=CPU_US_MAX,
    unit="us",
    help="ngram, suffix: CPU time of the look-up, every step (hit or not), in place of "
    "draft passes; default 1.5 us, llama.cpp's ngram-simple (180 look-ups in 0.267 ms, "
    "one CPU thread, the llamacpp-cpu fixture); for suffix trees the same figure is "
    "assumed",
)


class ProposerPart(Part):
    """Base class of the proposers.

    ``catalog_method``: the catalog method it drafts (None: none of its own).
    ``model_free``: no draft pass; the engines then draw, per step, whether the context has
    a match and (suffix decoding) how many tokens it proposes, and price the step with
    :func:`engine.core.kernel.proposer_step_times`. A model-free proposer declares
    :meth:`hit_rate`, :meth:`length_survival` and :meth:`lookup_us`.
    """

    kind = "proposer"
    model_free: ClassVar[bool] = False
    # The acceptance catalog's method this proposer drafts (one of engine.acceptance.catalog.
    # METHODS), or None: ``--method`` of that method chooses this proposer when --proposer is
    # not given, and a model-free proposer's methods are the catalog's model-free ones.
    catalog_method: ClassVar[str | None] = None

    def hit_rate(self, config: Any) -> float:
        """The chance that a step has a match (drafts at all)."""
        return 1.0

    def lookup_us(self, config: Any) -> float:
        """CPU microseconds of the look-up, paid by every step."""
        return 0.0

    def length_survival(self, config: Any, cap: int) -> np.ndarray:
        """P(a hit step drafts at least j tokens), j = 1..cap, when at most ``cap`` may be
        drafted (the tail-ruled K): non-increasing, 1 at j = 1."""
        import numpy as np

        return np.ones(cap)

    def check(self, config: Any) -> None:
        if not self.model_free:
            return
        if POLICY.of(config).stepwise:
            raise ConfigError(
                "policy.name",
                f"proposer {self.name}: supports policy fixed and shape chain only, "
                f"not policy {config.policy}",
            )
        if SHAPE.of(config).tree:
            raise ConfigError(
                "shape.name",
                f"proposer {self.name}: supports policy fixed and shape chain only, "
                f"not shape {config.shape}",
            )
        if ACCEPTANCE.of(config).stepwise:
            raise ConfigError(
                "draft_model",
                f"proposer {self.name}: needs acceptance whose cycles are independent, "
                f"not {config.draft_model}",
            )
