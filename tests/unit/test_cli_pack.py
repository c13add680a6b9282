from __future__ import annotations

import json

from click.testing import CliRunner

from admit.cli import main
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "request.json"


def test_pack_example_prints_admitted_prompt_budget_and_trace(tmp_path):
    trace = tmp_path / "trace.jsonl"
    res = CliRunner().invoke(main, ["pack", str(EXAMPLE), "--trace-file", str(trace)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    ids = [a["id"] for a in out["admitted"]]
    assert "troubleshooting#e4012" in ids
    assert "globex#e4012" not in ids and "unlabelled#1" not in ids and "kb-mirror#e4012" not in ids
    assert out["budget"]["evidence_budget"] > 0 and out["budget"]["answer_reserve"] == 900
    assert out["trace"]["query_class"] == "troubleshooting"
    decisions = {d["id"]: d for d in out["trace"]["decisions"]}
    assert len(decisions) == 8
    assert decisions["config#audit-sink-v23"]["reason"] == "superseded"
    assert decisions["kb-mirror#e4012"]["reason"] == "duplicate"
    assert decisions["globex#e4012"]["reason"] == "acl"
    assert "Globex internal" not in res.output
    assert out["prompt"].count("<passage-") == len(ids)
    assert json.loads(trace.read_text().splitlines()[0])["accepted_chunk_ids"] == ids


def test_pack_reads_stdin():
    res = CliRunner().invoke(main, ["pack", "-"], input=EXAMPLE.read_text())
    assert res.exit_code == 0 and json.loads(res.output)["admitted"]


def test_malformed_request_names_the_field_and_exits_2():
    req = json.loads(EXAMPLE.read_text())
    req["candidates"][2]["score"] = "high"
    res = CliRunner().invoke(main, ["pack", "-"], input=json.dumps(req))
    assert res.exit_code == 2
    assert "candidates[2].score" in res.output

    del req["principal"]
    res = CliRunner().invoke(main, ["pack", "-"], input=json.dumps(req))
    assert res.exit_code == 2 and "principal" in res.output

    res = CliRunner().invoke(main, ["pack", "-"], input="{not json")
    assert res.exit_code == 2 and "not valid JSON" in res.output

    req = json.loads(EXAMPLE.read_text())
    req["input_limit"] = -5
    res = CliRunner().invoke(main, ["pack", "-"], input=json.dumps(req))
    assert res.exit_code == 2 and "input_limit" in res.output

    req = json.loads(EXAMPLE.read_text())
    req["candidates"].append(dict(req["candidates"][0]))
    res = CliRunner().invoke(main, ["pack", "-"], input=json.dumps(req))
    assert res.exit_code == 2 and "candidates[8].id" in res.output


def test_human_output_lists_admitted_passages_and_every_candidates_fate():
    res = CliRunner().invoke(main, ["pack", str(EXAMPLE), "--human"])
    assert res.exit_code == 0
    assert "[troubleshooting#e4012]" in res.output
    rows = {ln.split()[0]: ln.split() for ln in res.output.splitlines() if ln.split()}
    assert rows["globex#e4012"][1:4] == ["dropped", "authorize", "acl"]
    assert rows["kb-mirror#e4012"][1:4] == ["dropped", "dedupe", "duplicate"]
    assert rows["troubleshooting#e4012"][1:4] == ["admitted", "pack", "admitted"]


def test_schema_command_prints_json_schema():
    res = CliRunner().invoke(main, ["schema"])
    schema = json.loads(res.output)
    assert "candidates" in schema["properties"] and "principal" in schema["required"]


def test_policy_command_shows_class_and_cue():
    res = CliRunner().invoke(main, ["policy", "Compare A vs B", "--json"])
    assert json.loads(res.output)["route"]["query_class"] == "comparison"


def test_shipped_schema_file_is_current():
    from admit.schema import PackRequestModel

    shipped = json.loads((REPO / "schemas" / "pack_request.schema.json").read_text())
    assert shipped == json.loads(json.dumps(PackRequestModel.model_json_schema()))
