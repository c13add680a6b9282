"""Pruner faults against a real fault-injecting OpenAI-compatible server on loopback.

For every fault kind the request completes (well before the server would have answered), the configured
``on_error`` fallback is applied and recorded in the trace; 429/5xx/dropped connections are retried with
backoff; a circuit breaker stops calling a backend that keeps failing and lets it back in once it recovers;
over HTTP the fallback is counted in ``/metrics``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openai")

import contextlib
import itertools

from admit.backends.llms import FakeLLM
from admit.backends.llms.circuit import CircuitBreakerLLM, CircuitOpenError
from admit.backends.llms.openai_compat import OpenAICompatLLM
from admit.errors import AdmitError, BackendError, ConfigError
from admit.pipeline import PackRequest, Pipeline
from admit.prune.graded import GradedPruner
from admit.testing.fault_server import MODES, FaultServer
from admit.types import Access, Chunk, Principal

pytestmark = pytest.mark.timeout(120)

ACME = Access(tenant="acme")
ALICE = Principal(tenant="acme")
QUESTION = "Which port does the metrics server listen on?"
DOCS = [
    Chunk(
        id="metrics#port", source_id="metrics", text="The metrics server listens on port 9464 by default.", access=ACME
    ),
    Chunk(id="metrics#cfg", source_id="metrics-cfg", text="Change the metrics port with metrics.port.", access=ACME),
    Chunk(id="backup#1", source_id="backup", text="Backups are taken every six hours.", access=ACME),
    Chunk(id="quota#1", source_id="quota", text="Each project gets a 50 GiB storage quota.", access=ACME),
]
LLM_TIMEOUT_S = 0.5
HANG_S = 15.0
SLOW_S = 5.0
FAILING = [
    "timeout",
    "status:429",
    "status:500",
    "status:503",
    "close",
    "invalid_json",
    "bad_body",
    "unknown_ids",
    "slow",
    "drip",
    "continue_drip",
    "header_drip",
    "nested",
]
PARTIAL = ["missing_ids", "out_of_range"]
STALLING = {"timeout", "slow", "drip", "continue_drip", "header_drip"}
"""Modes where the server holds the answer longer than the client's deadline (``HANG_S``, ``SLOW_S``, dripping)."""


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer(hang_s=HANG_S, delay_s=SLOW_S) as srv:
        yield srv


@pytest.fixture
def srv(server: FaultServer) -> FaultServer:
    server.reset()
    server.set("ok", grade=4, retry_after=None, delay_s=SLOW_S, hang_s=HANG_S)
    return server


def _llm(srv: FaultServer, **kw: Any) -> OpenAICompatLLM:
    opts: dict[str, Any] = {"max_retries": 2, "backoff_s": 0.01, "max_backoff_s": 1.0, "timeout": LLM_TIMEOUT_S}
    opts.update(kw)
    return OpenAICompatLLM("fault-model", base_url=srv.base_url, **opts)


def _pack(pipe: Pipeline, on_error: str = "keep_top_k", **params: Any) -> Any:
    return pipe.pack(
        PackRequest(
            question=QUESTION,
            principal=ALICE,
            candidates=DOCS,
            prune="graded",
            prune_params={"on_error": on_error, "keep_top_k": 1, "threshold": 3, **params},
        )
    )


def test_every_mode_is_covered() -> None:
    assert set(FAILING) | set(PARTIAL) | {"ok"} == set(MODES)


def test_ok_mode_grades_everything(srv: FaultServer) -> None:
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv))))
    p = res.trace["pruner"]
    assert p["fallback"] is None
    assert p["error"] is None
    assert p["usage"]["calls"] == 1
    assert sorted(res.admitted_ids) == sorted(d.id for d in DOCS)
    assert srv.count == 1


@pytest.mark.parametrize("on_error", ["keep_top_k", "drop", "keep_all"])
@pytest.mark.parametrize("mode", FAILING)
def test_fault_applies_the_configured_fallback(srv: FaultServer, mode: str, on_error: str) -> None:
    srv.set(mode)
    pipe = Pipeline(pruner=GradedPruner(_llm(srv)))
    res = _pack(pipe, on_error)
    p = res.trace["pruner"]
    assert p["fallback"] == on_error
    assert p["error"]
    if mode in STALLING:
        # ended by the client's deadline (a BackendTimeout), not by the server giving up or answering late
        assert p["error"].startswith("BackendTimeout:"), p["error"]
        assert f"within {LLM_TIMEOUT_S}s" in p["error"]
    top = res.trace["reranked_ids"][0]
    if on_error == "keep_top_k":
        assert res.admitted_ids == [top]
    elif on_error == "drop":
        assert res.admitted_ids == []
        assert res.trace["dropped"].get("pruned") == len(DOCS)
    else:
        assert sorted(res.admitted_ids) == sorted(d.id for d in DOCS)
    pruned = [d for d in res.trace["decisions"] if d["reason"] == "pruned"]
    assert all("on_error" in d.get("detail", "") for d in pruned)


@pytest.mark.parametrize("mode", FAILING)
def test_on_error_raise_gives_an_admit_error(srv: FaultServer, mode: str) -> None:
    srv.set(mode)
    with pytest.raises(AdmitError):
        _pack(Pipeline(pruner=GradedPruner(_llm(srv))), "raise")


def test_missing_ids_are_reasked_then_follow_on_error(srv: FaultServer) -> None:
    srv.set("missing_ids")
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv))), "drop")
    p = res.trace["pruner"]
    assert p["fallback"] is None
    assert any("re-asked" in n for n in p["notes"])
    assert any("left ungraded" in n for n in p["notes"])
    assert srv.count == 2  # the call and one re-ask
    # the first id of each call is graded 4 (kept); the rest stay ungraded and follow on_error=drop
    assert 1 <= len(res.admitted_ids) < len(DOCS)


def test_out_of_range_grades_are_clamped_and_noted(srv: FaultServer) -> None:
    srv.set("out_of_range")
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv))), "drop", keep_top_k=0)
    p = res.trace["pruner"]
    assert p["fallback"] is None
    assert any("clamped" in n for n in p["notes"])
    grades = {d["id"]: d.get("grade") for d in res.trace["decisions"]}
    assert all(g in (None, 1, 5) for g in grades.values())


# ---------------------------------------------------------------- retries


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_statuses_are_retried_then_succeed(srv: FaultServer, status: int) -> None:
    srv.set("ok", script=[f"status:{status}", f"status:{status}"])
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv, max_retries=3))))
    assert res.trace["pruner"]["fallback"] is None
    assert [r.mode for r in srv.requests] == [f"status:{status}", f"status:{status}", "ok"]


def test_dropped_connection_is_retried(srv: FaultServer) -> None:
    srv.set("ok", script=["close"])
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv))))
    assert res.trace["pruner"]["fallback"] is None
    assert srv.count == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(srv: FaultServer, status: int) -> None:
    srv.set(f"status:{status}")
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv, max_retries=3))))
    assert res.trace["pruner"]["fallback"] == "keep_top_k"
    assert srv.count == 1


def test_retries_are_bounded(srv: FaultServer) -> None:
    srv.set("status:503")
    _pack(Pipeline(pruner=GradedPruner(_llm(srv, max_retries=3))))
    assert srv.count == 4


def test_backoff_grows_between_retries(srv: FaultServer) -> None:
    srv.set("status:503")
    # the backoffs (0.7 s in all) fit only a budget longer than the tests' 0.5 s
    _pack(Pipeline(pruner=GradedPruner(_llm(srv, max_retries=3, backoff_s=0.1, timeout=30))))
    t = [r.t for r in srv.requests]
    gaps = [b - a for a, b in itertools.pairwise(t)]
    assert len(gaps) == 3
    # 0.1, 0.2, 0.4 s with +-20 % jitter: lower bounds only (a loaded machine is slower, never faster)
    assert gaps[0] >= 0.08
    assert gaps[1] >= 0.16
    assert gaps[2] >= 0.32


def test_retry_after_never_stretches_the_call_past_its_budget(srv: FaultServer) -> None:
    # a server asking for a 30 s wait gets no retry: the call's 0.5 s budget covers attempts and backoffs
    srv.set("status:429", retry_after=30)
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv, max_retries=5, max_backoff_s=60))))
    assert res.trace["pruner"]["fallback"] == "keep_top_k"
    assert "HTTP 429" in res.trace["pruner"]["error"]
    assert srv.count == 1


def test_retry_after_is_honoured(srv: FaultServer) -> None:
    srv.set("ok", script=["status:429"], retry_after=0.3)
    res = _pack(Pipeline(pruner=GradedPruner(_llm(srv, backoff_s=0.01))))
    assert res.trace["pruner"]["fallback"] is None
    a, b = (r.t for r in srv.requests)
    assert b - a >= 0.29


# ---------------------------------------------------------------- circuit breaker


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_breaker_stops_calling_a_failing_backend_and_recovers(srv: FaultServer) -> None:
    srv.set("status:503")
    clock = Clock()
    changes: list[tuple[str, str]] = []
    cb = CircuitBreakerLLM(
        _llm(srv, max_retries=0),
        failure_threshold=3,
        reset_timeout_s=30,
        clock=clock,
        on_state_change=lambda a, b: changes.append((a, b)),
    )
    pipe = Pipeline(pruner=GradedPruner(cb))
    results = [_pack(pipe) for _ in range(10)]
    assert all(r.trace["pruner"]["fallback"] == "keep_top_k" for r in results)
    assert srv.count == 3  # then the circuit opened: 7 requests never reached the backend
    assert cb.state == "open"
    assert "circuit open" in results[-1].trace["pruner"]["error"]
    st = cb.stats()
    assert (st.calls, st.failures, st.short_circuited, st.opened) == (3, 3, 7, 1)
    # still failing when the reset timeout passes: one trial, then open again
    clock.t += 30
    assert cb.state == "half_open"
    assert _pack(pipe).trace["pruner"]["fallback"] == "keep_top_k"
    assert srv.count == 4
    assert cb.state == "open"
    assert _pack(pipe).trace["pruner"]["fallback"] == "keep_top_k"
    assert srv.count == 4
    # the backend recovers: the next trial closes the circuit and traffic flows again
    srv.set("ok")
    clock.t += 31
    res = _pack(pipe)
    assert res.trace["pruner"]["fallback"] is None
    assert cb.state == "closed"
    assert _pack(pipe).trace["pruner"]["fallback"] is None
    assert srv.count == 6
    assert changes == [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
    ]


def test_breaker_counts_timeouts(srv: FaultServer) -> None:
    srv.set("timeout")
    cb = CircuitBreakerLLM(_llm(srv, max_retries=0), failure_threshold=2, reset_timeout_s=60, clock=Clock())
    pipe = Pipeline(pruner=GradedPruner(cb))
    errors = []
    for _ in range(5):
        p = _pack(pipe).trace["pruner"]
        assert p["fallback"] == "keep_top_k"
        errors.append(p["error"])
    assert srv.count == 2  # the 3 short-circuited calls never reached the server
    assert [e.split(":")[0] for e in errors] == ["BackendTimeout"] * 2 + ["CircuitOpenError"] * 3, errors


def test_breaker_success_resets_the_failure_count() -> None:
    llm = FakeLLM([BackendError("x"), BackendError("x"), "{}", BackendError("x"), BackendError("x"), "{}"])
    cb = CircuitBreakerLLM(llm, failure_threshold=3, clock=Clock())
    for _ in range(6):
        with contextlib.suppress(BackendError):
            cb.complete([])
    assert cb.state == "closed"
    assert cb.stats().failures == 4


def test_breaker_half_open_lets_one_trial_through() -> None:
    clock = Clock()
    gate = threading.Event()
    entered = threading.Event()

    def slow(messages: Any, schema: Any) -> str:
        entered.set()
        gate.wait(5)
        return "{}"

    fails = FakeLLM(BackendError("down"))
    cb = CircuitBreakerLLM(fails, failure_threshold=1, reset_timeout_s=5, clock=clock)
    with pytest.raises(BackendError):
        cb.complete([])
    cb.inner = FakeLLM(slow)
    clock.t += 5
    t = threading.Thread(target=cb.complete, args=([],))
    t.start()
    assert entered.wait(5)
    with pytest.raises(CircuitOpenError):
        cb.complete([])
    gate.set()
    t.join(5)
    assert cb.state == "closed"


def test_breaker_counts_undecodable_answers_as_failures(srv: FaultServer) -> None:
    srv.set("bad_body")
    cb = CircuitBreakerLLM(_llm(srv, max_retries=0), failure_threshold=2, clock=Clock())
    pipe = Pipeline(pruner=GradedPruner(cb))
    for _ in range(4):
        assert _pack(pipe).trace["pruner"]["fallback"] == "keep_top_k"
    assert srv.count == 2


def test_breaker_rejects_bad_settings() -> None:
    with pytest.raises(ConfigError, match="failure_threshold"):
        CircuitBreakerLLM(FakeLLM(), failure_threshold=0)
    with pytest.raises(ConfigError, match="reset_timeout_s"):
        CircuitBreakerLLM(FakeLLM(), reset_timeout_s=0)


def test_breaker_manual_reset() -> None:
    cb = CircuitBreakerLLM(FakeLLM(BackendError("x")), failure_threshold=1, clock=Clock())
    with pytest.raises(BackendError):
        cb.complete([])
    assert cb.state == "open"
    cb.reset()
    assert cb.state == "closed"


# ---------------------------------------------------------------- over HTTP: metrics and status codes


@pytest.fixture(scope="module")
def http(server: FaultServer) -> Iterator[tuple[Any, Any]]:
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    import hashlib

    from admit.service.config import settings_from_dict
    from admit.service.http import LoopbackServer, create_app

    key = "fault-key-1234567890"
    cfg = settings_from_dict(
        {
            "service": {
                "keys": {"acme": {"key_sha256": hashlib.sha256(key.encode()).hexdigest(), "tenant": "acme"}},
                "prune_strategy": "graded",
                "limits": {"request_timeout_s": 20},
            }
        }
    )
    llm = OpenAICompatLLM("fault-model", base_url=server.base_url, max_retries=1, backoff_s=0.01, timeout=LLM_TIMEOUT_S)
    app = create_app(cfg, pruner=GradedPruner(llm))
    with LoopbackServer(app) as live, httpx.Client(base_url=live.url, headers={"X-API-Key": key}, timeout=120) as c:
        yield live, c


def _body(**kw: Any) -> dict[str, Any]:
    return {
        "question": QUESTION,
        "candidates": [
            {"id": d.id, "source_id": d.source_id, "text": d.text, "access": {"tenant": "acme"}} for d in DOCS
        ],
        "prune": "graded",
        **kw,
    }


def _fallback_count(text: str, action: str) -> float:
    for line in text.splitlines():
        if line.startswith("admit_pruner_fallbacks_total{") and f'action="{action}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.parametrize("mode", ["timeout", "status:503", "invalid_json", "close", "slow"])
def test_http_fault_is_a_200_with_the_fallback_counted(srv: FaultServer, http: tuple[Any, Any], mode: str) -> None:
    _, c = http
    before = _fallback_count(c.get("/metrics").text, "keep_top_k")
    srv.set(mode)
    r = c.post("/v1/pack", json=_body())
    assert r.status_code == 200, r.text
    assert r.json()["trace"]["pruner"]["fallback"] == "keep_top_k"
    assert _fallback_count(c.get("/metrics").text, "keep_top_k") == before + 1
    r = c.post("/v1/prune", json={"question": QUESTION, "candidates": [{"id": d.id, "text": d.text} for d in DOCS]})
    assert r.status_code == 200, r.text
    assert r.json()["fallback"] == "keep_top_k"
    assert _fallback_count(c.get("/metrics").text, "keep_top_k") == before + 2


@pytest.mark.parametrize("on_error", ["drop", "keep_all"])
def test_http_fallback_action_is_the_requested_one(srv: FaultServer, http: tuple[Any, Any], on_error: str) -> None:
    _, c = http
    srv.set("status:500")
    r = c.post("/v1/pack", json=_body(prune_params={"on_error": on_error}))
    assert r.status_code == 200, r.text
    assert r.json()["trace"]["pruner"]["fallback"] == on_error
    assert _fallback_count(c.get("/metrics").text, on_error) >= 1


def test_http_on_error_raise_is_a_clean_503(srv: FaultServer, http: tuple[Any, Any]) -> None:
    _, c = http
    srv.set("status:503")
    r = c.post("/v1/pack", json=_body(prune_params={"on_error": "raise"}))
    assert r.status_code == 503, r.text
    body = r.json()
    assert set(body) == {"error", "kind", "detail", "field"}
    assert "Traceback" not in r.text
    assert srv.base_url not in r.text  # no internal URL leaks to the caller
