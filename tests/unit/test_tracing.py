from __future__ import annotations

import contextlib

from admit import PackRequest, Pipeline
from tests.helpers import ALICE, chunk


class SpyTracer:
    def __init__(self):
        self.spans = []

    @contextlib.contextmanager
    def span(self, name, attributes=None):
        self.spans.append((name, dict(attributes or {})))
        yield


def test_every_stage_opens_a_span_and_is_timed():
    spy = SpyTracer()
    res = Pipeline(tracer=spy).pack(
        PackRequest(question="What port?", principal=ALICE, candidates=[chunk("a#1", "Port 8080.")])
    )
    names = [n for n, _ in spy.spans]
    assert names == ["route", "budget", "authorize", "rerank", "dedupe", "prune", "pack", "scan"]
    assert set(res.trace["latency_ms"]) == {*names, "total"}
    assert dict(spy.spans)["prune"]["strategy"] == "none"


def test_otel_tracer_records_spans():
    import pytest

    pytest.importorskip("opentelemetry.sdk")  # the spans are read with the SDK (opentelemetry-sdk), not the api
    pytest.importorskip("opentelemetry.trace")
    from opentelemetry.sdk.trace import TracerProvider  # type: ignore[import-not-found]
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # type: ignore[import-not-found]
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # type: ignore[import-not-found]
        InMemorySpanExporter,
    )

    from admit.trace import OTelTracer

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OTelTracer.__new__(OTelTracer)
    tracer._tracer = provider.get_tracer("admit-test")
    Pipeline(tracer=tracer).pack(PackRequest(question="What?", principal=ALICE, candidates=[chunk("a#1", "x y")]))
    assert [s.name for s in exporter.get_finished_spans()][:2] == ["admit.route", "admit.budget"]


def test_trace_content_is_recorded_only_when_enabled(monkeypatch):
    req = PackRequest(question="What port does it use?", principal=ALICE, candidates=[chunk("a#1", "Port 8080.")])
    monkeypatch.setenv("ADMIT_TRACE_CONTENT", "true")  # read by the faces, never by the library
    assert "prompt" not in Pipeline().pack(req).trace
    rec = Pipeline(trace_content=True).pack(req).trace
    assert rec["question"] == "What port does it use?" and "Port 8080." in rec["prompt"]
