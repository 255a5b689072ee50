"""What every K policy declares and answers: :class:`PolicyPart`, and :class:`Chooser`,
the state a policy keeps over the sequences the stepwise engine runs in lockstep.

A K policy chooses each cycle's draft count. It is a registered part
(:mod:`engine.core.parts`): a class in its own file in this package, ``@POLICY.register``
above it, declaring its name, description and fields and answering the methods below.
The stepwise engine (:mod:`engine.simulate.stepwise`) asks it for a :class:`Chooser` over
each chunk of sequences; the exact program (:mod:`engine.simulate.policy_exact`)
enumerates the policies whose :meth:`PolicyPart.exact_program` names one of its programs.
Part files import numpy inside the methods that compute, so that the app's form starts
without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from engine.core.config import K_MAX, K_MAX_POLICY, ConfigError, field
from engine.core.parts import Part

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Acceptance, Policy

# The bound on k of every adaptive policy (hf_heuristic, threshold, goodput, oracle).
K_MAX_FIELD = field(
    "policy.k_max",
    K_MAX_POLICY,
    label="K max",
    kind="int",
    flag="--policy-k-max",
    low=1,
    high=K_MAX,
    help="adaptive policies: the largest k a cycle may draft",
)


class Chooser:
    """A policy's state over one chunk of ``rows`` sequences."""

    def choose(self, r: np.ndarray, regime: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        """The k each row's policy asks for (before the tail rule)."""
        raise NotImplementedError

    def observe(
        self, step: int, drafted: np.ndarray, accepted: np.ndarray, running: np.ndarray
    ) -> None:
        """Learn from a cycle: ``running`` is 1 on rows that ran it (others drafted 0)."""


class PolicyPart(Part):
    """Base class of the K policies.

    What a policy supports (class attributes): ``stepwise``, whether it runs on the
    stepwise engine (every policy but fixed K: its k is chosen cycle by cycle);
    ``needs_confidences``, whether it reads the draft's per-token confidences (the
    acceptance model must give them); ``adaptive``, whether ``policy.k_max`` bounds it;
    ``uses_plan``, whether it reads the exact program's best k by state (the oracle).
    Exact values: :meth:`exact_program`.
    """

    kind = "policy"
    stepwise: ClassVar[bool] = True
    needs_confidences: ClassVar[bool] = False
    adaptive: ClassVar[bool] = True
    uses_plan: ClassVar[bool] = False

    def k_bound(self, config: Any) -> int:
        """The largest k the policy drafts in ``config``."""
        return int(config.k_max)

    def exact_program(self, config: Any) -> tuple[str, int] | None:
        """The exact program that enumerates the policy, and its k: ("fixed", k),
        ("hf_heuristic", K0) or ("oracle", k); None: Monte Carlo only."""
        return None

    @property
    def exact(self) -> bool:
        """Whether the policy can have exact values (:meth:`exact_program`)."""
        return type(self).exact_program is not PolicyPart.exact_program

    def variants(self) -> tuple[dict[str, Any], ...]:
        """The settings of the contenders the policy brings to an arena that is given none
        (:func:`engine.analysis.arena.default_contenders`): one for every combination of
        the values of its choice fields (threshold: rule p_min, then rule h), else one at
        the scenario's own settings."""
        import itertools

        choices = [spec for spec in self.fields if spec.kind == "choice"]
        keys = [spec.key for spec in choices]
        combos = itertools.product(*(spec.choices for spec in choices))
        return tuple(dict(zip(keys, values, strict=True)) for values in combos)

    def stepwise_policy(self, config: Any, oracle_k: np.ndarray | None = None) -> Policy:
        """The stepwise engine's :class:`~engine.simulate.stepwise.Policy` for ``config``."""
        from engine.core.draws import Policy

        own = {spec.key: config.get(spec.key) for spec in self.fields}
        return Policy(
            name=self.name,
            k=config.k,
            k_max=self.k_bound(config),
            k_min=config.k_min,
            rule=config.rule,
            p_min=config.p_min,
            h=config.stop_h,
            window=config.window,
            oracle_k=oracle_k,
            options=tuple(own.items()),
        )

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        """The policy's state over a chunk of ``rows`` sequences (``batch`` per group;
        ``cycle_us``: the price table, ``(T + 1, K_max + 1)``)."""
        raise NotImplementedError

    def check_run(self, policy: Policy, acceptance: Acceptance, k_table: int, tokens: int) -> None:
        """ValueError when the stepwise engine's ``policy`` cannot run (beyond the bound
        on k, which the engine checks)."""
        if not 0 <= policy.k <= policy.k_max:
            raise ValueError(f"policy {policy.name!r}: k {policy.k} must be in 0..{policy.k_max}")

    def bound_text(self, config: Any) -> str:
        """The policy's bound on k as a label suffix: " ≤8" ("" when not adaptive)."""
        return f" ≤{config.k_max}" if self.adaptive else ""

    def detail_text(self, config: Any) -> str:
        """Every further parameter the policy reads, as a label suffix: " K0=2"."""
        return ""

    def _starts_at_k(self, config: Any) -> None:
        if config.k > config.k_max:
            raise ConfigError(
                "k", f"{config.k} is above policy.k_max {config.k_max}; {self.name} starts at K"
            )
