"""spectui load --method/--dataset (the catalog's acceptance) and --proposer, in process."""

from __future__ import annotations

import json

import pytest

RUN = ("load", "--concurrency", "1", "--requests", "6", "--replications", "1")


def test_method_takes_the_catalogs_acceptance_and_says_it_before_the_results(cli):
    status, out, err = cli(*RUN, "--method", "eagle3", "--target", "llama-3.1-8b")
    assert status == 0, err
    first = out.splitlines()[0]
    assert first.startswith("acceptance: position_decay")
    assert "EAGLE-3 from the catalog" in first and "vllm-project/vllm issue #20780" in first
    assert out.splitlines()[1].split()[:2] == ["conc", "policy"]


def test_method_in_json_sets_the_scenario_and_names_its_rows(cli):
    status, out, err = cli(*RUN, "--method", "eagle3", "--target", "llama-3.1-8b", "--json")
    assert status == 0, err
    payload = json.loads(out)
    assert payload["config"]["draft_model"] == "position_decay"
    assert payload["acceptance"]["assumed"] is False
    assert payload["acceptance"]["rows"] and payload["acceptance"]["level"]


def test_an_explicit_acceptance_wins_over_method(cli):
    status, out, err = cli(*RUN, "--method", "eagle3", "--acceptance-rate", "0.6", "--json")
    assert status == 0, err
    payload = json.loads(out)
    assert payload["config"]["acceptance_rate"] == 0.6
    assert "as given (--acceptance-rate)" in payload["acceptance"]["text"]


def test_the_default_acceptance_is_said_to_be_assumed(cli):
    status, out, err = cli(*RUN)
    assert status == 0, err
    assert out.splitlines()[-1] == (
        "acceptance: fixed (acceptance 0.8), the default (assumed; give --method or "
        "--acceptance-rate)"
    )


def test_dataset_without_method_and_an_unknown_method_are_one_line(cli):
    status, out, err = cli(*RUN, "--dataset", "MT-Bench")
    assert status == 2 and out == "" and err.count("\n") == 1 and "--dataset" in err
    status, out, err = cli(*RUN, "--method", "telepathy")
    assert status == 2 and err.count("\n") == 1 and "telepathy" in err


def test_a_model_free_proposer_with_a_policy_it_does_not_serve_is_one_line(cli):
    status, out, err = cli(*RUN, "--proposer", "ngram", "--policies", "off,budget")
    assert status == 2 and out == ""
    assert err == (
        "spectui load: error: --policies: proposer ngram under load: supports policies "
        "off, fixed, schedule, not budget\n"
    )


def test_ngram_under_load_prices_no_draft_pass(cli):
    # Default cost model: a target pass 200 us at any width. With h = 0 every step is
    # 200 us + the 1.5 us look-up: TPOT 0.2015 ms (speculation off: 0.2 ms); the
    # percentiles come from a histogram, to 0.1 %.
    status, out, err = cli(*RUN, "--proposer", "ngram", "--hit-rate", "0", "--json")
    assert status == 0, err
    cells = {c["policy"]: c for c in json.loads(out)["cells"]}
    assert float(cells["fixed"]["tpot_p50_ms"]) == pytest.approx(0.2015, rel=1e-3)
    assert float(cells["off"]["tpot_p50_ms"]) == pytest.approx(0.2, rel=1e-3)


def test_a_presets_grid_scenarios_take_the_methods_acceptance(cli, tmp_path):
    # Each [[grid]] scenario gets the catalog's fit: the same cells as the fitted fields
    # given as flags (and not those of the preset's own acceptance 0.8).
    path = tmp_path / "grid.toml"
    path.write_text(
        'description = "x"\n[config]\nk = 3\ntokens_per_seq = 24\n[[grid]]\nk = [2, 4]\n'
        "[load]\nconcurrency = [2]\nrequests = 8\nreplications = 1\n"
    )
    where = ("load", "--preset", str(path), "--json")
    status, out, err = cli(*where, "--method", "eagle3", "--target", "llama-3.1-8b")
    assert status == 0, err
    payload = json.loads(out)
    fitted = payload["config"]
    assert fitted["draft_model"] == "position_decay" and payload["acceptance"]["rows"]
    flags = ("--draft-model", "position_decay", "--target", "llama-3.1-8b")
    flags += ("--decay-base", repr(fitted["decay_base"]))
    flags += ("--decay-factor", repr(fitted["decay_factor"]))
    status, out, err = cli(*where, *flags)
    assert status == 0, err
    assert json.loads(out)["cells"] == payload["cells"]
    status, out, err = cli(*where, "--target", "llama-3.1-8b")
    assert status == 0, err
    assert json.loads(out)["cells"] != payload["cells"]


def test_no_draft_model_schedule_is_offered_for_a_model_free_proposer(cli):
    status, out, err = cli(*RUN, "--proposer", "ngram")
    assert status == 0, err
    assert "best k by batch size: not given for proposer ngram" in out
    assert "vLLM:" not in out and "TensorRT-LLM" not in out
