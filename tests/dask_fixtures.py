"""A Dask cluster in the test process, for tests that need *a* scheduler, not worker processes.

Starting ``local:N`` (:class:`engine.sweep.cluster.DaskRunner`) spawns N worker processes, each of
which imports Dask and then the engine (numpy, pandas): seconds of CPU apiece. Tests about
the rows, the progress, a cancel or the messages of a sweep on Dask connect instead to a
:class:`distributed.LocalCluster` whose workers are threads of this process, by its
``tcp://`` address (what a user's ``dask scheduler`` gives): batches and rows still cross
a TCP connection, pickled. Tests about starting or stopping a local cluster, or about
worker processes, start their own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import pytest


@contextlib.contextmanager
def in_process_cluster(workers: int, *, dashboard: bool = True) -> Iterator[Any]:
    """A LocalCluster of ``workers`` single-threaded workers in this process (no processes
    to outlive the test), with a dashboard on a free port when ``dashboard``; closed on exit.
    Its ``scheduler_address`` is a ``tcp://`` address for ``--scheduler`` and the app."""
    import distributed

    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        dashboard_address=":0" if dashboard else None,
        silence_logs=logging.CRITICAL,
    )
    try:
        yield cluster
    finally:
        cluster.close()


def batch_keys(cluster: Any) -> set[str]:
    """The keys of spectui's batches that ``cluster``'s scheduler (in this process) holds:
    tasks of a sweep not yet released."""
    keys = list(cluster.scheduler.tasks)  # one copy, under the interpreter lock
    return {str(key) for key in keys if str(key).startswith("spectui-batch-")}


# ``local:N`` with its workers in the test process, for tests where worker processes are
# not the subject:
# :class:`engine.sweep.cluster.DaskRunner` starts ``local:N`` as a :class:`distributed.LocalCluster`
# of N worker processes: each imports Dask, numpy and pandas (about 3 s of CPU, more on a
# loaded machine, and its nanny's start up to a minute). Where the test is about what the
# caller does with the cluster (its rows, its shutdown when the sweep stops), the fixture
# below has the runner's own call start the same cluster with ``processes=False``: the
# runner's code, its worker settings and its shutdown are unchanged; the workers are
# threads. tests/engine/test_cluster.py keeps worker processes where they are the subject
# (a killed worker).
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
