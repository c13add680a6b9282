"""Issue 34 item 5: every request gets its own time-ordered id (a UUIDv7), the request's hash is kept beside it,
and the inspector page shows when each request was made."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from admit.inspector import InspectLog, read_trace_file, render_page
from admit.pipeline import PackRequest, Pipeline, request_hash
from admit.trace import JsonlSink, new_request_id
from admit.types import Access, Chunk, Principal


def _req(**kw: Any) -> PackRequest:
    chunks = [Chunk(id="a#1", source_id="a", title="A", text="The port is 7420.", access=Access(tenant="acme"))]
    return PackRequest(question="Which port?", principal=Principal(tenant="acme"), candidates=chunks, **kw)


def test_new_ids_are_uuid7_unique_and_time_ordered() -> None:
    ids = [new_request_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)  # time-ordered, also within one millisecond
    parsed = uuid.UUID(ids[0])
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_identical_requests_get_distinct_ids_and_one_hash(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    pipe = Pipeline(sink=JsonlSink(trace))
    results = [pipe.pack(_req()) for _ in range(3)]
    ids = [r.trace["request_id"] for r in results]
    assert len(set(ids)) == 3 and ids == sorted(ids)
    assert {r.trace["request_hash"] for r in results} == {request_hash(_req())}
    assert read_trace_file(trace, ids[1])[0]["request_id"] == ids[1]  # --id / ?id= find exactly one
    assert len(read_trace_file(trace, ids[1])) == 1


def test_a_callers_id_is_kept() -> None:
    res = Pipeline().pack(_req(request_id="mine-1"))
    assert res.trace["request_id"] == "mine-1" and res.trace["request_hash"] == request_hash(_req())


def test_the_inspector_shows_each_request_once_with_its_time() -> None:
    log = InspectLog(None, keep=10)
    pipe = Pipeline(sink=log)
    for _ in range(3):
        pipe.pack(_req())
    records = log.records("acme")
    page = render_page(records)
    anchors = [f'id="req-{r["request_id"]}"' for r in records]
    assert len(set(anchors)) == 3 and all(page.count(a) == 1 for a in anchors)
    assert page.count('<time class="ts" datetime="20') == 3
    assert f"hash <code class='hash'>{records[0]['request_hash']}</code>" in page


def test_the_trace_line_carries_the_hash_and_a_timestamp(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    Pipeline(sink=JsonlSink(trace)).pack(_req())
    rec = json.loads(trace.read_text("utf-8").splitlines()[0])
    assert set(rec) >= {"request_id", "request_hash", "ts"} and rec["request_id"] != rec["request_hash"]
