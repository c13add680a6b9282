"""The inspector's pieces without a browser: the service's per-tenant log, the page's rank order and escaping."""

from __future__ import annotations

from typing import Any

from admit import Access, Chunk, Pipeline, Principal
from admit.inspector import InspectLog, render_page
from admit.pipeline import PackRequest
from admit.trace import MemorySink


def _ask(pipeline: Pipeline, tenant: str, question: str) -> None:
    pipeline.pack(
        PackRequest(
            question=question,
            principal=Principal(tenant=tenant),
            model="gpt-4o",
            input_limit=4000,
            candidates=[
                Chunk(
                    id=f"{tenant}#a", source_id="a", title="A", text="The port is 7420.", access=Access(tenant=tenant)
                ),
                Chunk(
                    id=f"{tenant}#b", source_id="b", title="B", text="The port is 7420.", access=Access(tenant=tenant)
                ),  # a copy of a: dropped by dedupe
            ],
        )
    )


def test_each_tenant_sees_its_own_last_requests_newest_first_and_the_file_gets_every_record() -> None:
    sink = MemorySink()
    log = InspectLog(sink, keep=3)
    pipeline = Pipeline(sink=log)
    for i in range(4):
        _ask(pipeline, "acme", f"acme question {i}?")
    _ask(pipeline, "globex", "globex question?")
    acme = log.records("acme")
    assert [r["request"]["question"] for r in acme] == ["acme question 3?", "acme question 2?", "acme question 1?"]
    assert [r["request"]["question"] for r in log.records("globex")] == ["globex question?"]
    assert log.records("initech") == []
    assert len(sink.records) == 5  # handed on, every one
    kept = {c["id"]: c for c in acme[0]["request"]["candidates"]}
    assert set(kept) == {"acme#a", "acme#b"} and len(acme[0]["accepted_chunk_ids"]) == 1
    for cid, c in kept.items():  # only admitted text is held in memory
        assert ("text" in c) == (cid in acme[0]["accepted_chunk_ids"]), c


def test_keep_zero_keeps_nothing() -> None:
    log = InspectLog(None, keep=0)
    _ask(Pipeline(sink=log), "acme", "q?")
    assert log.records("acme") == []


def test_the_page_lists_candidates_in_rank_order_and_escapes_text() -> None:
    rec: dict[str, Any] = {
        "request_id": "r1",
        "query_class": "default",
        "candidate_ids": ["c2", "c1"],
        "accepted_chunk_ids": ["c2"],
        "decisions": [
            {"id": "c1", "state": "dropped", "stage": "prune", "reason": "pruned", "grade": 1, "score": 0.1},
            {"id": "c2", "state": "admitted", "stage": "pack", "reason": "admitted", "grade": 5, "score": 0.9},
        ],
        "request": {
            "question": "<b>why</b>?",
            "candidates": [
                {"id": "c1", "source_id": "s", "title": "one", "text": "x"},
                {"id": "c2", "source_id": "s", "title": "</pre><script>x()</script>", "text": "kept text"},
            ],
        },
    }
    page = render_page([rec])
    assert page.index(">c2<") < page.index(">c1<")
    assert "<script>x()" not in page and "&lt;b&gt;why&lt;/b&gt;" in page
    assert "kept text" in page  # the admitted envelope


def test_the_page_shows_retrieval_latency_and_tool_outputs() -> None:
    rec: dict[str, Any] = {
        "request_id": "r2",
        "decisions": [],
        "latency_ms": {"prune": 3.0, "total": 5.0},
        "retrieval": {"latency_ms": {"embed_query": 9.5}},
        "tools": [{"id": "orders", "tool": "list_orders", "rows_kept": 20, "rows_total": 60, "continuation": "tok"}],
    }
    page = render_page([rec])
    assert "<th>embed_query</th>" in page and "<th>prune</th>" in page
    assert "20 of 60 rows" in page and "more: tok" in page
