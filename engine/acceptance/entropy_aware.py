"""The original's entropy_aware model: each token easy or hard, drawn independently."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import field
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


@ACCEPTANCE.register
class EntropyAware(AcceptanceModel):
    name = "entropy_aware"
    description = (
        "each token is hard with P = entropy_frac (accepted with entropy_low), "
        "else easy (accepted with entropy_high)"
    )
    original = True
    fields = (
        field(
            "entropy_high",
            0.95,
            original=7,
            label="p easy",
            kind="prob",
            help="entropy_aware: P(accept) of an easy token",
            seed_key=True,
        ),
        field(
            "entropy_low",
            0.5,
            original=8,
            label="p hard",
            kind="prob",
            help="entropy_aware: P(accept) of a hard token",
            seed_key=True,
        ),
        field(
            "entropy_frac",
            0.3,
            original=9,
            label="hard frac",
            kind="prob",
            help="entropy_aware: fraction of hard tokens",
            seed_key=True,
        ),
    )

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        p = (
            config.entropy_frac * config.entropy_low
            + (1 - config.entropy_frac) * config.entropy_high
        )
        return np.full(k, p)

    # Classes are drawn independently per token and never seen, so the accepted prefix
    # follows the marginal p above: the Monte Carlo draws it with one uniform per cycle like
    # the fixed model's. The reference loop draws each token's class, then its test.
    def accept_token(self, config: Any, rng: np.random.Generator, position: int) -> bool:
        hard = rng.random() < config.entropy_frac
        p = config.entropy_low if hard else config.entropy_high
        return bool(rng.random() < p)

    def params_text(self, config: Any) -> str:
        return (
            f"entropy high {config.entropy_high:g} low {config.entropy_low:g} "
            f"frac {config.entropy_frac:g}"
        )
