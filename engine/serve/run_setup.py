"""A run of the serving simulator set up: its fixed inputs (engine.serve.state._Run) from
a scenario, a server and the requests.

Below both of its users, so neither imports the other for it: engine.serve.sim's
``simulate_load`` steps the run in numpy or hands it to the compiled loop
(engine.serve.compiled), and compiled's ``warm`` compiles the loop on a run set up the
same way (the same argument types, so the same compiled loop).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.serve.draws import mix
from engine.serve.pricing import Pricer
from engine.serve.server import Server, kv_capacity
from engine.serve.state import _Run
from engine.serve.workload import Requests


def set_up(
    config: Any,
    cost: Any,
    requests: Requests,
    policy: str,
    server: Server,
    *,
    seed: int = 0,
    replication: int = 0,
    warmup: int = 0,
) -> _Run:
    """The run of ``requests`` with ``policy`` on ``server`` (engine.serve.sim's
    ``simulate_load`` takes the same arguments): the acceptance regimes of ``config`` up to
    its largest K, the draws' key of (``seed``, ``replication``), the KV capacity, the
    speculation tax (``cost.spec_overhead_us``, microseconds) and the step pricer."""
    from engine.core.parts import ACCEPTANCE, PROPOSER
    from engine.serve.policies import check_proposer

    check_proposer(config, (policy,))
    proposer = PROPOSER.of(config)
    k_cap = max(int(config.k), int(getattr(config, "k_max", config.k)), 1)
    survival, stay, mix_probs = ACCEPTANCE.of(config).regimes(config, k_cap)
    key = int(mix(np.array([seed * 1_000_003 + replication], dtype=np.uint64))[0])
    return _Run(
        config=config,
        cost=cost,
        requests=requests,
        server=server,
        policy=policy,
        key=key,
        survival=np.asarray(survival, dtype=np.float64),
        stay=float(stay),
        mix_cdf=np.cumsum(mix_probs),
        capacity=kv_capacity(cost, server, config),
        tax_us=float(getattr(cost, "spec_overhead_us", 0.0)),
        warmup=warmup,
        pricer=Pricer(cost),
        **(_proposer_inputs(proposer, config, k_cap) if proposer.model_free else {}),
    )


def _proposer_inputs(proposer: Any, config: Any, k_cap: int) -> dict[str, Any]:
    """A model-free proposer's inputs of the run (engine.serve.state._Run)."""
    lengths = np.asarray(proposer.length_survival(config, k_cap), dtype=np.float64)
    return {
        "model_free": True,
        "hit": float(proposer.hit_rate(config)),
        "lengths": None if bool(np.all(lengths == 1.0)) else np.concatenate(([1.0], lengths)),
        "lookup_us": float(proposer.lookup_us(config)),
    }
