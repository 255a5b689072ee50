"""One simulated run as the serving tests compare them: every finished request's row, sorted
by request, and the run's outcome."""

from __future__ import annotations

import numpy as np

from engine.cost.models import build_cost
from engine.serve.sim import simulate_load


def served(config, policy, server, workload, closed=None, warmup=10, **how):  # type: ignore[no-untyped-def]
    """Serve replication 1 of ``workload`` (seed 4) with ``policy``; ``how``: the
    simulator's path (``compiled``, ``segments``) and its callbacks."""
    rows = []
    outcome = simulate_load(
        config,
        build_cost(config),
        workload.draw(4, 1),
        policy,
        server,
        closed=closed,
        seed=4,
        replication=1,
        warmup=warmup,
        on_finish=rows.append,
        **how,
    )
    table = np.concatenate(rows)
    return table[np.argsort(table[:, 0], kind="stable")], outcome
