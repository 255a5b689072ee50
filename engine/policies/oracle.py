"""oracle: the best k knowing the acceptance model and its hidden regime (an upper bound)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.config import ConfigError
from engine.core.parts import ACCEPTANCE, POLICY
from engine.policies.base import K_MAX_FIELD, Chooser, PolicyPart

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Acceptance, Policy


class OracleChooser(Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        import numpy as np

        assert policy.oracle_k is not None
        self.table = np.asarray(policy.oracle_k, dtype=np.int64)

    def choose(self, r: np.ndarray, regime: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        import numpy as np

        return self.table[r, np.maximum(regime, 0)]


@POLICY.register
class Oracle(PolicyPart):
    name = "oracle"
    description = "the best k for every (tokens to go, regime), knowing the model"
    brief = "the best k knowing the model"
    uses_plan = True
    fields = (K_MAX_FIELD,)

    def check(self, config: Any) -> None:
        model = ACCEPTANCE.of(config)
        given = model.positions(config)
        if given is not None and config.k_max > given:
            fields = ", ".join(model.reads)
            raise ConfigError(
                "policy.name",
                f"oracle would choose k up to policy.k_max {config.k_max} from the "
                f"{model.name} table, which gives only {given} rate{'s' * (given > 1)} "
                f"({fields}); "
                f"set policy.k_max to at most {given} or give more rates",
            )

    def exact_program(self, config: Any) -> tuple[str, int] | None:
        return ("oracle", config.k)

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        return OracleChooser(policy, rows)

    def check_run(self, policy: Policy, acceptance: Acceptance, k_table: int, tokens: int) -> None:
        import numpy as np

        table = policy.oracle_k
        shape = (tokens + 1, acceptance.regimes)
        if table is None or np.shape(table) != shape:
            got = None if table is None else np.shape(table)
            raise ValueError(f"policy 'oracle' needs oracle_k of shape {shape}, got {got}")
        body = np.asarray(table)[1:]
        if body.size and (int(body.min()) < 0 or int(body.max()) > policy.k_max):
            raise ValueError(f"oracle_k values must be in 0..{policy.k_max}")
