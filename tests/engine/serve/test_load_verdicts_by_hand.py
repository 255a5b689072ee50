"""Where speculation stops paying, and the best policy, on cells made by hand
(engine.serve.load): a tie with speculation off is no win, and goodput decides the best
policy as soon as one SLO is set."""

from __future__ import annotations

import math

from engine.serve.load import Cell, LoadResult, Plan
from engine.serve.server import Server
from engine.serve.workload import Workload


def result_of(table, **plan):
    """A LoadResult of one replication per cell: ``table`` maps a level to each policy's
    figures (off first, then fixed)."""
    result = LoadResult(Plan(Workload(), Server(), levels=tuple(table), **plan))
    for level, by_policy in table.items():
        for policy, figures in zip(("off", "fixed"), by_policy, strict=True):
            cell = Cell(level, policy)
            cell.values = {name: [value] for name, value in figures.items()}
            result.cells[(level, policy)] = cell
    return result


def test_a_tie_with_speculation_off_is_no_win():
    result = result_of(
        {
            1.0: ({"throughput_tok_s": 100.0, "tpot_p99_ms": 5.0},
                  {"throughput_tok_s": 110.0, "tpot_p99_ms": 5.0}),  # TPOT tied
            2.0: ({"throughput_tok_s": 200.0, "tpot_p99_ms": 9.0},
                  {"throughput_tok_s": 200.0, "tpot_p99_ms": 8.0}),  # throughput tied
        }
    )  # fmt: skip
    assert result.stops_paying("throughput_tok_s") == 2.0
    assert result.stops_paying("tpot_p99_ms") == 1.0
    assert result.verdicts() == [
        "stops paying in throughput at rate 2",
        "stops paying in p99 TPOT at rate 1",
    ]


def test_a_win_at_every_level_pays_and_a_loss_stops_paying():
    result = result_of(
        {
            4.0: ({"throughput_tok_s": 100.0, "tpot_p99_ms": 5.0},
                  {"throughput_tok_s": 100.5, "tpot_p99_ms": 4.9}),
            8.0: ({"throughput_tok_s": 200.0, "tpot_p99_ms": 9.0},
                  {"throughput_tok_s": 260.0, "tpot_p99_ms": 9.1}),  # p99 TPOT worse
        },
        closed=True,
    )  # fmt: skip
    assert result.verdicts() == [
        "pays in throughput at every level run",
        "stops paying in p99 TPOT at concurrency 8",
    ]


def test_one_slo_is_enough_for_goodput_to_choose_the_best_policy():
    table = {
        1.0: ({"throughput_tok_s": 100.0, "goodput_req_s": 3.0},
              {"throughput_tok_s": 150.0, "goodput_req_s": 2.0}),
    }  # fmt: skip
    assert result_of(table).best_policy(1.0) == "fixed"  # no SLO: throughput
    assert result_of(table, slo_ttft_ms=200.0).best_policy(1.0) == "off"
    assert result_of(table, slo_tpot_ms=20.0).best_policy(1.0) == "off"
    assert math.isinf(Plan(Workload(), Server(), levels=(1.0,)).slo_ttft_ms)
