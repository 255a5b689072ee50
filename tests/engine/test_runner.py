"""The batch runners' shared contract (engine.sweep.sweep.BatchRunner.map_unordered), on a thread
pool: a window of batches in flight; once stopped, no batch taken and none yielded but
those found finished with the last one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from engine.sweep.sweep import ExecutorRunner


def _batches(taken: list[int], count: int):
    for number in range(count):
        taken.append(number)
        yield [(number, None)]


def _rows(batch):
    return [(index, {"n": index}) for index, _ in batch]


def test_a_window_of_batches_and_nothing_more_once_stopped():
    taken: list[int] = []
    stop = False
    with ThreadPoolExecutor(2) as executor:
        runner = ExecutorRunner(executor, window=2)
        rows = runner.map_unordered(_rows, _batches(taken, 10), lambda: stop)
        first = next(rows)
        # The window: two batches taken before the first came back (none after it yet).
        assert len(taken) == 2
        stop = True
        rest = list(rows)  # stopped: at most the batch already finished beside the first
    assert len(taken) == 2  # and no batch taken from the sweep after the stop
    assert len(rest) <= 1
    assert sorted([first, *rest]) in (
        [[(0, {"n": 0})]],
        [[(1, {"n": 1})]],
        [[(0, {"n": 0})], [(1, {"n": 1})]],
    )


def test_every_batch_once_when_not_stopped():
    taken: list[int] = []
    with ThreadPoolExecutor(2) as executor:
        runner = ExecutorRunner(executor, window=3)
        rows = [
            row
            for batch in runner.map_unordered(_rows, _batches(taken, 25), lambda: False)
            for row in batch
        ]
    assert sorted(index for index, _ in rows) == list(range(25))
    assert taken == list(range(25))
