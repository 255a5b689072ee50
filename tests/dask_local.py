"""``local:N`` with its workers in the test process, for tests where worker processes are
not the subject.

:class:`engine.cluster.DaskRunner` starts ``local:N`` as a :class:`distributed.LocalCluster`
of N worker processes: each imports Dask, numpy and pandas (about 3 s of CPU, more on a
loaded machine, and its nanny's start up to a minute). Where the test is about what the
caller does with the cluster (its rows, its shutdown when the sweep stops), the fixture
below has the runner's own call start the same cluster with ``processes=False``: the
runner's code, its worker settings and its shutdown are unchanged; the workers are
threads. tests/engine/test_cluster.py keeps worker processes where they are the subject
(a killed worker).
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def local_cluster_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the test runs, ``distributed.LocalCluster`` makes its workers threads of this
    process whatever ``processes`` it is given (every other argument as given)."""
    import distributed

    real = distributed.LocalCluster

    def in_process(*args: Any, **kwargs: Any) -> Any:
        kwargs["processes"] = False
        return real(*args, **kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", in_process)
