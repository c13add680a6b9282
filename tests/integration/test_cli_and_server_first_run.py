"""Issue 19 ("First contact II"), items 1-9 and 11, through the real ``admit`` command and a live ``admit serve``.

The knowledge base is built with the ``fake`` embedder by ``admit ingest`` itself, so the server loads no
MiniLM; the README test (``test_readme_examples.py``) runs the real model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration._live import ADMIT, REPO, admit, env, free_port, serve

pytest.importorskip("sqlite_vec")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.integration

KEY = "fc2-acme-key"
QUESTION = "What does error E4012 mean and how do I fix it?"
H = {"X-API-Key": KEY}


def _policy(tmp: Path, name: str, prune: str) -> Path:
    """The shipped policy with ``[defaults.prune]`` replaced (``prune``: the TOML lines under it)."""
    text = (REPO / "src" / "admit" / "policies" / "default.toml").read_text("utf-8")
    assert '\nstrategy = "none"\n' in text
    path = tmp / name
    path.write_text(text.replace('\nstrategy = "none"\n', f"\n{prune}\n", 1), "utf-8")
    return path


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fc2")


@pytest.fixture(scope="module")
def kb(tmp: Path) -> Path:
    path = tmp / "demo.kb"
    res = admit(
        "ingest", "examples/docs", "--kb", str(path), "--registry", "examples/sources.toml",
        "--embedder", "fake", "--no-progress", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return path


@pytest.fixture(scope="module")
def top_n_policy(tmp: Path) -> Path:
    return _policy(tmp, "top_n.toml", 'strategy = "top_n"\nn = 1')


@pytest.fixture(scope="module")
def server(tmp: Path, kb: Path, top_n_policy: Path) -> Iterator[str]:
    """``admit serve`` with the shipped examples/admit.toml (copied, so its trace file lands in tmp), a policy
    that prunes every request (``[defaults.prune] strategy = "top_n"``) and request logging on."""
    cfg = tmp / "admit.toml"
    text = (REPO / "examples" / "admit.toml").read_text("utf-8")
    text = text.replace("[service]\n", f'[service]\npolicy = "{top_n_policy.name}"\ntrace_requests = true\n', 1)
    cfg.write_text(text, "utf-8")
    with serve(["--kb", str(kb), "--config", str(cfg)], port=free_port(), extra_env={"ADMIT_KEY_ACME": KEY}) as url:
        yield url


# -- item 1: the README's curl -d (a form content type) is read as JSON -------------------------------------
def test_json_body_without_a_json_content_type_is_accepted(server: str) -> None:
    body = json.dumps({"question": QUESTION, "top_k": 8, "prune": True})
    for ctype in ("application/x-www-form-urlencoded", None, "text/plain"):
        headers = {**H, **({"Content-Type": ctype} if ctype else {})}
        r = httpx.post(f"{server}/v1/search", content=body, headers=headers, timeout=300)
        assert r.status_code == 200, (ctype, r.text)
        assert r.json()["citations"]
    if shutil.which("curl"):  # the README's own spelling
        out = subprocess.run(
            ["curl", "-s", f"{server}/v1/prune", "-H", f"X-API-Key: {KEY}", "-d",
             '{"question": "port?", "strategy": "top_n", "params": {"n": 1}, '
             '"candidates": [{"id": "a", "text": "port 5000"}, {"id": "b", "text": "bananas"}]}'],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert json.loads(out.stdout)["kept_ids"] == ["a"]


def test_a_body_that_is_not_json_names_no_character_offset(server: str) -> None:
    r = httpx.post(f"{server}/v1/search", content=b'{"question": ', headers=H, timeout=300)
    assert r.status_code == 422
    err = r.json()
    assert err["field"] is None and "not valid JSON" in err["detail"], err


# -- item 4: examples/admit.toml ships no working key --------------------------------------------------------
def test_the_example_config_ships_no_working_key(server: str) -> None:
    for key in ("password", "changeme", ""):
        r = httpx.post(f"{server}/v1/search", json={"question": QUESTION}, headers={"X-API-Key": key}, timeout=300)
        assert r.status_code == 401, key
    assert "5e884898" not in (REPO / "examples" / "admit.toml").read_text("utf-8")


# -- item 2: /v1/search honours the policy's [defaults.prune] strategy; replay sees it ----------------------
def test_search_prunes_with_the_policys_strategy_unless_told_not_to(server: str, tmp: Path) -> None:
    r = httpx.post(f"{server}/v1/search", json={"question": QUESTION, "top_k": 8}, headers=H, timeout=300)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["trace"]["pruner"]["strategy"] == "top_n"
    assert out["trace"]["dropped"].get("pruned", 0) >= 1
    off = httpx.post(f"{server}/v1/search", json={"question": QUESTION, "prune": False}, headers=H, timeout=300)
    assert off.json()["trace"]["pruner"] is None
    # the logged request leaves the strategy to the policy, so a replay under another policy can differ
    lines = [json.loads(x) for x in (tmp / "traces" / "admit.jsonl").read_text("utf-8").splitlines()]
    ids = [out["trace"]["request_id"], off.json()["trace"]["request_id"]]
    assert ids[0] != ids[1]  # each request its own id (issue 34 item 5)
    asked = [x for x in lines if x.get("request_id") in ids]
    assert [x["request"]["prune"] for x in asked] == [None, "none"]  # absent, then prune: false
    res = admit(
        "replay", str(tmp / "traces" / "admit.jsonl"), "--policy", str(REPO / "src/admit/policies/default.toml"),
        "--out", str(tmp / "replay-shipped"), "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["summary"]["changed"] >= 1, res.stdout


# -- item 3: --trace-file output is what admit replay reads ------------------------------------------------
def test_search_trace_file_replays_under_a_pruning_policy(kb: Path, tmp: Path, top_n_policy: Path) -> None:
    trace = tmp / "search-trace.jsonl"
    res = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--trace-file", str(trace))
    assert res.returncode == 0, res.stderr
    rec = json.loads(trace.read_text("utf-8").splitlines()[-1])
    assert rec["request"]["question"] == QUESTION and rec["request"]["candidates"]
    res = admit("replay", str(trace), "--policy", str(top_n_policy), "--out", str(tmp / "replay-cli"), "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)["summary"]
    assert summary["requests"] == 1 and summary["changed"] == 1, summary


def test_pack_trace_file_replays(tmp: Path, top_n_policy: Path) -> None:
    trace = tmp / "pack-trace.jsonl"
    res = admit("pack", "examples/request.json", "--trace-file", str(trace))
    assert res.returncode == 0, res.stderr
    res = admit("replay", str(trace), "--policy", str(top_n_policy), "--out", str(tmp / "replay-pack"), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["summary"]["requests"] == 1


# -- item 5: a broken configuration stops admit serve with exit 2 -------------------------------------------
def test_a_policy_naming_an_unknown_strategy_stops_the_server(kb: Path, tmp: Path) -> None:
    bad = _policy(tmp, "bad.toml", 'strategy = "setwize"')
    cfg = tmp / "bad.toml.admit"
    cfg.write_text(f'[service]\npolicy = "{bad}"\n', "utf-8")
    res = subprocess.run(
        [*ADMIT, "serve", "--kb", str(kb), "--config", str(cfg), "--port", str(free_port())],
        capture_output=True, text=True, env=env(), cwd=REPO, check=False,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "unknown pruning strategy 'setwize'" in res.stderr and "did you mean 'setwise'" in res.stderr
    assert "Traceback" not in res.stderr and "startup complete" not in res.stderr


def test_an_unknown_service_strategy_stops_the_server(kb: Path, tmp: Path) -> None:
    cfg = tmp / "bad-strategy.toml"
    cfg.write_text('[service]\nprune_strategy = "top-n"\n', "utf-8")
    res = admit("serve", "--kb", str(kb), "--config", str(cfg), "--port", str(free_port()))
    assert res.returncode == 2 and "prune_strategy" in res.stderr and "'top_n'" in res.stderr, res.stderr


# -- item 6: admit pack names the misspelled field ------------------------------------------------------------
def test_pack_names_a_misspelled_field_first() -> None:
    req = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    req["questoin"] = req.pop("question")
    res = admit("pack", "-", stdin=json.dumps(req))
    assert res.returncode == 2
    assert res.stderr.startswith(
        "error: questoin: unknown field (did you mean 'question'?); the request takes question, principal"
    ), res.stderr
    assert "question: Field required" in res.stderr


def test_field_paths_are_spelled_one_way_on_the_cli_and_http(server: str) -> None:
    req = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    req["candidates"][1]["text"] = 5
    res = admit("pack", "-", stdin=json.dumps(req))
    assert res.returncode == 2 and res.stderr.startswith("error: candidates[1].text:"), res.stderr
    del req["principal"]
    r = httpx.post(f"{server}/v1/pack", json=req, headers=H, timeout=300)
    assert r.status_code == 422 and r.json()["field"] == "candidates[1].text", r.text


# -- item 7: --llm-base-url / --llm-model on search and pack -------------------------------------------------
def test_search_and_pack_take_the_llm_endpoint_options(kb: Path) -> None:
    from admit.testing.fault_server import FaultServer

    for cmd in ("search", "pack"):
        helptext = admit(cmd, "--help").stdout
        assert "--llm-base-url" in helptext and "--llm-model" in helptext, cmd
    no_llm = admit("pack", "examples/request.json", "--prune", "graded", extra_env={"ADMIT_LLM_MODEL": ""})
    assert no_llm.returncode == 2 and "--llm-base-url URL --llm-model MODEL" in no_llm.stderr, no_llm.stderr
    with FaultServer(default="ok") as srv:
        res = admit(
            "search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune", "graded",
            "--llm-base-url", srv.base_url, "--llm-model", "test-model", "--json",
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["trace"]["pruner"]["strategy"] == "graded"
        pack = admit(
            "pack", "examples/request.json", "--prune", "graded", "--llm-base-url", srv.base_url,
            "--llm-model", "test-model",
        )  # fmt: skip
        assert pack.returncode == 0, pack.stderr
        assert srv.requests, "the grader endpoint was never called"


# -- item 8: no silent nothing ----------------------------------------------------------------------------
def test_a_wrong_case_tenant_names_the_tenants_that_exist(kb: Path) -> None:
    res = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:Acme")
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "holds no documents for tenant 'Acme'" in res.stderr and "Did you mean tenant:acme?" in res.stderr
    assert "E4012" not in res.stderr  # tenant names only, never content


def test_mcp_with_a_wrong_case_tenant_stops_at_start(kb: Path) -> None:
    res = admit("mcp", "--kb", str(kb), "--principal", "tenant:ACME", stdin="")
    assert res.returncode == 2, res.stderr
    assert "Did you mean tenant:acme?" in res.stderr and "Traceback" not in res.stderr


def test_an_empty_knowledge_base_says_so(tmp: Path) -> None:
    from admit.kb import KnowledgeBase

    empty = tmp / "empty.kb"
    KnowledgeBase(empty, embedder="fake").close()
    res = admit("search", QUESTION, "--kb", str(empty), "--principal", "tenant:me", "--embedder", "fake")
    assert res.returncode == 2 and "holds no chunks" in res.stderr and "admit ingest" in res.stderr, res.stderr


def test_a_known_tenant_with_nothing_readable_gets_a_hint(kb: Path) -> None:
    res = admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--language", "xx")
    assert res.returncode == 0, res.stderr
    assert "none is readable" in res.stderr and "--language" in res.stderr


# -- item 9: exit codes and leftovers --------------------------------------------------------------------
def test_a_failed_ingest_exits_1_and_leaves_no_empty_kb(tmp: Path) -> None:
    bad = tmp / "bad.md"
    bad.write_bytes(b"# Title\n\xff\xfe not UTF-8\n")
    target = tmp / "never.kb"
    res = admit("ingest", str(bad), "--kb", str(target), "--embedder", "fake", "--no-progress", "--access", "tenant:me")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "failed to ingest" in res.stderr and "Traceback" not in res.stderr
    assert not target.exists()


def test_an_ingest_with_one_failed_file_exits_1_and_keeps_the_rest(tmp: Path) -> None:
    docs = tmp / "mixed"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nThe registry listens on port 5000.\n", "utf-8")
    (docs / "bad.md").write_bytes(b"# Bad\n\xff\n")
    target = tmp / "mixed.kb"
    res = admit(
        "ingest",
        str(docs),
        "--kb",
        str(target),
        "--embedder",
        "fake",
        "--no-progress",
        "--json",
        "--access",
        "tenant:me",
    )
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout)["kb_chunks"] >= 1 and target.exists()


def test_a_second_server_on_a_busy_port_exits_2_before_start_up(server: str, kb: Path) -> None:
    port = server.rsplit(":", 1)[1]
    res = admit("serve", "--kb", str(kb), "--port", port)
    assert res.returncode == 2, res.stderr
    assert "not available" in res.stderr and "startup complete" not in res.stderr


def test_search_into_a_closed_pipe_exits_0(kb: Path) -> None:
    cmd = " ".join([*(f"'{a}'" for a in ADMIT), "search", f"'{QUESTION}'", "--kb", f"'{kb}'"])
    res = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {cmd} --principal tenant:acme | head -1"],
        capture_output=True, text=True, env=env(), cwd=REPO, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("retrieved") and "Broken pipe" not in res.stderr and "Traceback" not in res.stderr


def test_no_page_loads_anything_from_a_cdn(server: str) -> None:
    for path in ("/docs", "/redoc"):
        assert httpx.get(server + path, timeout=300).status_code == 404
    assert httpx.get(server + "/openapi.json", timeout=300).status_code == 200


def test_the_principal_options_are_visible() -> None:
    assert "--access" in admit("ingest", "--help").stdout
    assert "--principal" in admit("mcp", "--help").stdout
    readme = (REPO / "README.md").read_text("utf-8")
    assert "--tenant me" not in readme and "--tenant acme" not in readme  # hidden, deprecated spellings


# -- item 11: one vocabulary on every surface ---------------------------------------------------------------
def test_every_surface_uses_the_same_names(server: str, kb: Path, tmp: Path) -> None:
    pack = json.loads(admit("pack", "examples/request.json", "--json").stdout)
    assert {"admitted", "citations", "decisions", "budget", "prompt", "trace"} <= set(pack)
    req = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    del req["principal"]
    http_pack = httpx.post(f"{server}/v1/pack", json=req, headers=H, timeout=300).json()
    assert set(pack) == set(http_pack)
    search = json.loads(admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--json").stdout)
    assert {"citations", "decisions", "budget"} <= set(search)
    http_search = httpx.post(f"{server}/v1/search", json={"question": QUESTION}, headers=H, timeout=300).json()
    assert {"citations", "budget", "admitted"} <= set(http_search)
    body = {"question": "port?", "strategy": "top_n", "params": {"n": 1},
            "candidates": [{"id": "a", "text": "port 5000"}, {"id": "b", "text": "bananas"}]}  # fmt: skip
    http_prune = httpx.post(f"{server}/v1/prune", json=body, headers=H, timeout=300).json()
    assert http_prune["kept_ids"] == ["a"] and http_prune["dropped_ids"] == ["b"]
    src = tmp / "prune-in.jsonl"
    src.write_text(json.dumps({"id": "q1", **{k: body[k] for k in ("question", "candidates")}}) + "\n", "utf-8")
    res = admit("prune", "--input", str(src), "--output", "-", "--prune", "top_n", "--set", "n=1")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout.splitlines()[0])
    assert row["kept_ids"] == ["a"] and row["dropped_ids"] == ["b"]
