"""threshold: stop drafting on low draft confidence (llama.cpp's p_min, SpecDec++'s h)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.config import ConfigError, field
from engine.core.parts import ACCEPTANCE, POLICY
from engine.policies.base import K_MAX_FIELD, Chooser, PolicyPart

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Acceptance, Policy

RULES = ("p_min", "h")


class ThresholdChooser(Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        self.policy = policy

    def choose(self, r: np.ndarray, regime: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        import numpy as np

        assert q is not None
        policy, width = self.policy, q.shape[1]
        if policy.rule == "p_min":
            stop = q < policy.p_min  # stop drafting before the first token under p_min
            k = np.where(stop.any(axis=1), stop.argmax(axis=1), width)
        else:
            stop = 1.0 - np.cumprod(q, axis=1) > policy.h  # P(some draft rejected) > h
            k = np.where(stop.any(axis=1), stop.argmax(axis=1) + 1, width)
        return np.clip(k, policy.k_min, policy.k_max).astype(np.int64)


@POLICY.register
class Threshold(PolicyPart):
    name = "threshold"
    description = "draft while the draft's confidence holds: p_min (llama.cpp) or h (SpecDec++)"
    brief = "stop on low draft confidence"
    needs_confidences = True
    fields = (
        K_MAX_FIELD,
        field(
            "policy.k_min",
            1,
            label="K min",
            kind="int",
            flag="--policy-k-min",
            low=1,
            high=K_MAX_FIELD.high,
            help="threshold: the fewest tokens a cycle drafts",
        ),
        field(
            "policy.rule",
            "p_min",
            label="rule",
            kind="choice",
            choices=RULES,
            flag="--rule",
            help="threshold: p_min (llama.cpp: stop before a token with q < p_min) or h "
            "(SpecDec++: stop once 1 - prod q > h)",
        ),
        field(
            "policy.p_min",
            0.75,
            label="p min",
            kind="prob",
            help="threshold, rule p_min: the least confidence q a drafted token needs",
        ),
        field(
            "policy.h",
            0.5,
            attr="stop_h",
            label="h",
            kind="prob",
            flag="--stop-h",
            help="threshold, rule h: stop drafting once P(some draft is rejected) > h",
        ),
    )

    def check(self, config: Any) -> None:
        if not ACCEPTANCE.of(config).confidences:
            givers = ACCEPTANCE.where(lambda model: model.confidences)
            raise ConfigError(
                "policy.name",
                f"threshold needs per-token confidences, which draft_model {config.draft_model} "
                f"does not give; use draft_model {' or '.join(givers)}",
            )
        if config.k_min > config.k_max:
            raise ConfigError(
                "policy.k_min", f"{config.k_min} is above policy.k_max {config.k_max}"
            )

    def label(self, config: Any) -> str:
        if config.rule == "p_min":
            return f"threshold p_min={config.p_min:g}"
        return f"threshold h={config.stop_h:g}"

    def detail_text(self, config: Any) -> str:
        return f" K≥{config.k_min}"

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        return ThresholdChooser(policy, rows)

    def check_run(self, policy: Policy, acceptance: Acceptance, k_table: int, tokens: int) -> None:
        if acceptance.beta is None:
            raise ValueError(
                "policy 'threshold' needs per-token confidences: the acceptance model "
                "'survival table' has none (use the beta confidence model)"
            )
        if policy.rule not in RULES:
            raise ValueError(f"threshold rule must be one of {RULES}, not {policy.rule}")
        if not 0 <= policy.k_min <= policy.k_max:
            raise ValueError(f"threshold k_min {policy.k_min} must be in 0..{policy.k_max}")
