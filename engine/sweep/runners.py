"""Where a sweep's batches run besides the calling thread: the :class:`BatchRunner` contract
(batches in flight, taken as there is room, yielded as each finishes) and
:class:`ExecutorRunner`, a :class:`concurrent.futures.Executor` as one
(:class:`engine.sweep.cluster.DaskRunner` is the other). Re-exported by
:mod:`engine.sweep.sweep`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from engine.core.config import SpecConfig

__all__ = ["Batch", "BatchRows", "BatchRunner", "ExecutorRunner", "Flight"]

Batch = list[tuple[int, SpecConfig]]
BatchRows = list[tuple[int, dict[str, Any]]]


class BatchRunner(ABC):
    """Where a sweep's batches run, besides the calling thread: a
    :class:`concurrent.futures.Executor` (:class:`ExecutorRunner`) or a Dask cluster
    (:class:`engine.sweep.cluster.DaskRunner`). The contract is kept here, once: a subclass says
    how to submit a batch, which batches in flight have finished, how to take a finished
    batch's rows and how to cancel the rest (:meth:`_flight`)."""

    def map_unordered(
        self,
        function: Callable[[Batch], BatchRows],
        batches: Iterator[Batch],
        should_stop: Callable[[], bool],
    ) -> Iterator[BatchRows]:
        """``function(batch)`` of each batch, yielded as each finishes. Batches are taken
        from ``batches`` only as there is room for them (:meth:`_window`: a sweep of 100,000
        configurations is never all in flight). Once ``should_stop()`` is true, no batch is
        taken, none is yielded but those found finished with the last one, and the batches
        in flight are cancelled. A batch's error is raised."""
        flight = self._flight(function)
        in_flight: set[Any] = set()
        exhausted = False
        try:
            while True:
                window = self._window()
                while not exhausted and len(in_flight) < window and not should_stop():
                    batch = next(batches, None)
                    if batch is None:
                        exhausted = True
                    else:
                        in_flight.add(flight.submit(batch))
                if not in_flight or should_stop():
                    return
                for future in flight.finished(in_flight):
                    in_flight.discard(future)
                    yield flight.rows(future)
        finally:
            flight.cancel(in_flight)

    @abstractmethod
    def _window(self) -> int:
        """How many batches may be in flight now."""

    @abstractmethod
    def _flight(self, function: Callable[[Batch], BatchRows]) -> Flight:
        """The batches of one :meth:`map_unordered` call, each run by ``function``."""


class Flight(ABC):
    """The batches in flight of one :meth:`BatchRunner.map_unordered` call."""

    @abstractmethod
    def submit(self, batch: Batch) -> Any:
        """Start ``batch``; its future."""

    @abstractmethod
    def finished(self, in_flight: set[Any]) -> Iterable[Any]:
        """Futures of ``in_flight`` that have finished, after a short wait if none has (the
        caller then looks at its stop flag and its window again)."""

    @abstractmethod
    def rows(self, future: Any) -> BatchRows:
        """A finished batch's rows (its error raised)."""

    @abstractmethod
    def cancel(self, in_flight: set[Any]) -> None:
        """Cancel the batches still in flight (the call ended, or was stopped)."""


class ExecutorRunner(BatchRunner):
    """A :class:`concurrent.futures.Executor` as a :class:`BatchRunner`: at most ``window``
    batches submitted at a time (default: four per worker)."""

    def __init__(self, executor: Executor, window: int | None = None) -> None:
        self.executor = executor
        self.window = window or 4 * max(1, getattr(executor, "_max_workers", 1))

    def _window(self) -> int:
        return self.window

    def _flight(self, function: Callable[[Batch], BatchRows]) -> Flight:
        return _ExecutorFlight(self.executor, function)


@dataclass
class _ExecutorFlight(Flight):
    executor: Executor
    function: Callable[[Batch], BatchRows]

    def submit(self, batch: Batch) -> Future[BatchRows]:
        return self.executor.submit(self.function, batch)

    def finished(self, in_flight: set[Any]) -> Iterable[Future[BatchRows]]:
        done, _ = wait(in_flight, timeout=0.1, return_when=FIRST_COMPLETED)
        return done

    def rows(self, future: Future[BatchRows]) -> BatchRows:
        return future.result()

    def cancel(self, in_flight: set[Any]) -> None:
        # A process pool's queued batches are cancelled by its owner's shutdown (with
        # cancel_futures; engine.sweep.pool.SweepPool): cancelled from here, a future stays in
        # the pool's books until its manager thread looks, and a terminate meanwhile
        # makes that thread fail on it with a traceback (CPython 3.11's
        # ProcessPoolExecutor.terminate_broken sets an exception on a cancelled future).
        if not isinstance(self.executor, ProcessPoolExecutor):
            for future in in_flight:
                future.cancel()
