"""The typed trace record: the shipped schema is current, and records from the library and the CLI match it."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from admit import Access, Chunk, PackRequest, Pipeline, Principal
from admit.cli import main
from admit.trace import MemorySink, trace_json_schema
from tests.trace_schema_check import REPO, SCHEMA, check_record

A = Access(tenant="acme")
CANDS = [
    Chunk(id="a", source_id="s", text="The server listens on port 8080 by default.", access=A),
    Chunk(id="b", source_id="s", text="The server listens on port 8080 by default!", access=A),
    Chunk(id="c", source_id="t", text="Cats sleep a lot.", access=A),
    Chunk(id="d", source_id="u", text="", access=A),
    Chunk(id="e", source_id="v", text="Hidden.", access=Access(tenant="globex")),
]


def test_the_shipped_trace_schema_is_current() -> None:
    assert json.loads(json.dumps(trace_json_schema())) == SCHEMA, "run python scripts/gen_schemas.py"


@pytest.mark.parametrize("trace_content", [False, True])
@pytest.mark.parametrize("prune", [None, "top_n", "graded"])
def test_library_records_match_the_schema(trace_content: bool, prune: str | None) -> None:
    sink = MemorySink()
    pipe = Pipeline(sink=sink, trace_content=trace_content, pruner_options={"llm": "fake"})
    req = PackRequest(
        question="What port does the server use?", principal=Principal(tenant="acme"), candidates=CANDS, prune=prune
    )
    res = pipe.pack(req)
    assert sink.records == [res.trace]
    check_record(res.trace)
    assert ("prompt" in res.trace) is trace_content


def test_a_key_the_type_does_not_name_fails_the_schema() -> None:
    res = Pipeline().pack(PackRequest(question="What port?", principal=Principal(tenant="acme"), candidates=CANDS[:1]))
    with pytest.raises(jsonschema.ValidationError, match="unnamed_key"):
        check_record({**res.trace, "unnamed_key": 1})
    with pytest.raises(jsonschema.ValidationError):
        check_record({**res.trace, "latency_ms": 3.5})  # one latency shape: stages -> ms


def test_kb_search_records_match_the_schema(tmp_path: object) -> None:
    pytest.importorskip("sqlite_vec")
    from admit.kb import KnowledgeBase

    with KnowledgeBase(":memory:", embedder="fake") as kb:
        kb.ingest(REPO / "examples" / "docs", tenant="acme")
        res = kb.search("What does E4012 mean?", Principal(tenant="acme"), prune="top_n")
    assert res.trace["retrieval"]["returned"] > 0
    check_record(res.trace)


def test_cli_pack_record_matches_the_schema() -> None:
    out = CliRunner().invoke(main, ["pack", str(REPO / "examples" / "request.json")])
    assert out.exit_code == 0, out.output
    check_record(json.loads(out.output)["trace"])
