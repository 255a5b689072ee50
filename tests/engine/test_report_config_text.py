"""A sweep row's configuration in words (engine.analysis.report.config_text, the analysis's
"best configuration" line): the draft and verify passes' costs under the linear model (also
when the sweep has no cost.model column), the cost setting under any other."""

from __future__ import annotations

import pandas as pd

from engine.analysis.report import config_text

ROW = {"draft_model": "fixed", "k": 3, "acceptance_rate": 0.8}
ROW |= {"draft_cost_us": 20.0, "verify_cost_us": 200.0}


def test_a_linear_row_names_its_draft_and_verify_costs():
    expected = "fixed, K=3, acceptance_rate=0.8, draft 20 us, verify 200 us"
    assert config_text(pd.Series(ROW)) == expected
    assert config_text(pd.Series({**ROW, "cost.model": "linear"})) == expected


def test_a_roofline_or_table_row_names_its_cost_setting():
    roofline = pd.Series({**ROW, "cost.model": "roofline", "workload.batch_size": 4})
    assert config_text(roofline) == (
        "fixed, K=3, acceptance_rate=0.8, roofline on h100: llama-3.1-8b verifies, "
        "llama-3.2-1b drafts, batch 4, prompt 0"
    )
    table = pd.Series({**ROW, "cost.model": "table", "cost.table": "x.csv"})
    assert config_text(table) == "fixed, K=3, acceptance_rate=0.8, table x.csv, batch 1, prompt 0"
