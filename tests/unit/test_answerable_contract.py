"""Issue 39 item 2: ``answerable`` tells the truth on every face: ``True`` only for ``answered``, ``None`` for
``unsure``, ``False`` for ``not_answered``.

Each face runs for real (the pipeline, the CLI in-process, the HTTP app in-process, the MCP server over the SDK's
in-memory client, the three framework adapters, the inspector page, the eval metrics) with one crafted verdict put
where the one record is made (:func:`admit.answerability.stage.assess_kept`, and the adapters' import of it): a
real "unsure" needs a model's probability inside its band, which ``tests/integration/test_answerable_end_to_end.py``
finds with the real models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from admit import Access, Chunk, Pipeline, Principal
from admit.answerability import ANSWERABLE, Answerability, answerable_for, no_answer_fallback, on_no_answer
from admit.cli import main
from admit.errors import ConfigError
from admit.eval.metrics import QuestionResult, summarize
from admit.inspector import render_page
from admit.pipeline import PackRequest
from admit.types import Scored
from tests.trace_schema_check import check_record

QUESTION = "Which port does the registry listen on?"
TEXT = "Change the registry port with listen_port in config.yaml."
OTHER = "The registry stores images in the data folder."
ACME = Access(tenant="acme")
CORPUS = [
    Chunk(id="config", source_id="config", title="Configuration", text=TEXT, access=ACME),
    Chunk(id="storage", source_id="storage", title="Storage", text=OTHER, access=ACME),
]
SAID = {"answered": True, "unsure": None, "not_answered": False}
WORDS = {"answered": "answered", "unsure": "unsure", "not_answered": "not answered"}


def _crafted(state: str) -> Answerability:
    return Answerability(
        probability={"answered": 0.9, "unsure": 0.35, "not_answered": 0.05}[state],
        model="lexical",
        reason=f"crafted verdict: {state}",
        state=state,
        missing=() if state == "answered" else ("listen",),
    )


@pytest.fixture(params=list(SAID))
def state(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every verdict made while the test runs is the crafted one of this state (when anything was kept)."""
    from admit.answerability import stage

    real = stage.assess_kept
    verdict = _crafted(request.param)

    def crafted(question: str, kept: Sequence[Chunk], outcome: Any, pool: Any = None, **_: Any) -> Answerability:
        return verdict if kept else real(question, kept, outcome, pool)

    monkeypatch.setattr("admit.answerability.stage.assess_kept", crafted)
    monkeypatch.setattr("admit.decide.assess_kept", crafted)  # assess_run, the one place the record is made
    monkeypatch.setattr("admit.adapters._core.assess_kept", crafted)
    return str(request.param)


def _request_json(tmp_path: Path) -> Path:
    req = tmp_path / "req.json"
    body = {
        "question": QUESTION,
        "principal": {"tenant": "acme"},
        "input_limit": 4000,
        "candidates": [
            {"id": c.id, "source_id": c.source_id, "title": c.title, "text": c.text, "access": {"tenant": "acme"}}
            for c in CORPUS
        ],
    }
    req.write_text(json.dumps(body), "utf-8")
    return req


# ---------------------------------------------------------------- the record and the policy


def test_answerable_is_read_from_the_state_and_must_agree_with_it() -> None:
    assert dict(ANSWERABLE) == SAID
    assert [answerable_for(s) for s in SAID] == [True, None, False]
    for s, said in SAID.items():
        a = Answerability(state=s, probability=0.5, model="m", reason="r")  # type: ignore[arg-type]
        assert a.state == s and a.answerable is said
        assert a.answer_fields() == {"answerable": said, "answerability": 0.5, "answer_state": s}
        assert a.as_dict()["answerable"] is said and a.as_dict()["state"] == s
    with pytest.raises(TypeError):  # answerable is read from the state, never given beside it
        Answerability(answerable=True, probability=0.4, model="m", reason="r", state="unsure")  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="An answer state is one of"):
        answerable_for("maybe")  # type: ignore[arg-type]


def test_only_not_answered_triggers_on_no_answer_and_unsure_with_nothing_packed_answers_nothing() -> None:
    survivors = [Scored(chunk=c, score=0.5, rank=i) for i, c in enumerate(CORPUS)]
    unsure = _crafted("unsure")
    for action in ("note", "ask_to_narrow", "admit_nothing"):
        held = on_no_answer(unsure, survivors, action)
        assert held.survivors == survivors and not held.notes and not held.withheld
        assert no_answer_fallback(unsure, ["config"], action, noted=False) == []
    assert on_no_answer(_crafted("not_answered"), survivors, "admit_nothing").survivors == []
    assert unsure.after_pack(True) is unsure
    gone = unsure.after_pack(False)
    assert (gone.state, gone.answerable, gone.reason) == ("not_answered", False, "no evidence fits the budget")
    no = _crafted("not_answered")
    assert no.after_pack(False) is no


# ---------------------------------------------------------------- the library


def test_the_pack_result_and_its_trace_say_the_verdict(state: str) -> None:
    res = Pipeline().pack(PackRequest(question=QUESTION, principal=Principal(tenant="acme"), candidates=CORPUS))
    assert res.answer_state == state and res.answerable is SAID[state]
    out = res.as_dict()
    assert (out["answerable"], out["answer_state"]) == (SAID[state], state)
    assert res.trace["answer"]["answerable"] is SAID[state]
    assert res.trace["answer"]["state"] == state
    check_record(res.trace)  # the shipped trace schema takes null
    assert ("no_answer" in [f.kind for f in res.fallbacks]) is (state == "not_answered")
    assert res.admitted  # the default on_no_answer ("note") keeps the evidence


# ---------------------------------------------------------------- the CLI


def test_admit_pack_json_and_human_say_the_verdict(state: str, tmp_path: Path) -> None:
    req = _request_json(tmp_path)
    res = CliRunner().invoke(main, ["pack", str(req)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["answerable"] is SAID[state] and out["answer_state"] == state
    assert out["trace"]["answer"]["answerable"] is SAID[state]
    human = CliRunner().invoke(main, ["pack", str(req), "--human"])
    assert human.exit_code == 0, human.output
    assert ("unsure: the check cannot tell" in human.stdout) is (state == "unsure")
    assert ("not answered: the admitted evidence" in human.stdout) is (state == "not_answered")


def test_admit_search_json_says_the_verdict(state: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "config.md").write_text(f"# Configuration\n\n{TEXT}\n", "utf-8")
    kb = str(tmp_path / "kb.sqlite")
    ingest = CliRunner().invoke(
        main, ["ingest", str(docs), "--kb", kb, "--embedder", "fake", "--access", "tenant:acme"]
    )
    assert ingest.exit_code == 0, ingest.output
    res = CliRunner().invoke(main, ["search", QUESTION, "--kb", kb, "--principal", "tenant:acme", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["citations"] and out["answerable"] is SAID[state] and out["answer_state"] == state


def test_admit_prune_lines_and_summary_say_the_verdict(state: str, tmp_path: Path) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rec = {"id": "r1", "question": QUESTION, "candidates": [{"id": c.id, "text": c.text} for c in CORPUS]}
    src.write_text(json.dumps(rec) + "\n", "utf-8")
    res = CliRunner().invoke(main, ["prune", "--input", str(src), "--output", str(dst), "--prune", "top_n"])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(line) for line in dst.read_text("utf-8").splitlines()]
    assert row["answerable"] is SAID[state] and row["answer_state"] == state
    counts = {s: int(s == state) for s in SAID}
    words = f"answered {counts['answered']}, unsure {counts['unsure']}, not answered {counts['not_answered']}"
    assert words in res.output
    summary = CliRunner().invoke(
        main, ["prune", "--input", str(src), "--output", str(dst), "--prune", "top_n", "--json"]
    )
    assert {k: json.loads(summary.stdout)[k] for k in SAID} == counts


# ---------------------------------------------------------------- HTTP and MCP


def test_http_pack_search_prune_and_the_inspector_say_the_verdict(state: str) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from admit.service.config import settings_from_dict
    from admit.service.http import create_app
    from admit.testing.kb import memory_kb

    key = "contract-key-0123456789"
    settings = settings_from_dict({"service": {"keys": {"acme": {"key_env": "K", "tenant": "acme"}}}})
    app = create_app(settings, kb=memory_kb(CORPUS, embedder="fake"), environ={"K": key})
    h = {"X-API-Key": key}
    with TestClient(app) as c:
        cands = [{"id": x.id, "source_id": x.source_id, "text": x.text, "access": {"tenant": "acme"}} for x in CORPUS]
        packed = c.post("/v1/pack", json={"question": QUESTION, "candidates": cands}, headers=h)
        searched = c.post("/v1/search", json={"question": QUESTION}, headers=h)
        pruned = c.post("/v1/prune", json={"question": QUESTION, "candidates": [{"id": "a", "text": TEXT}]}, headers=h)
        page = c.get("/inspect", headers=h)
        spec = c.get("/openapi.json").json()
    for r in (packed, searched, pruned):
        assert r.status_code == 200, r.text
        assert r.json()["answerable"] is SAID[state] and r.json()["answer_state"] == state, r.json()
    summary = searched.json()["trace"]
    assert summary["answerable"] is SAID[state] and summary["answer_state"] == state
    assert packed.json()["trace"]["answer"]["answerable"] is SAID[state]
    assert page.status_code == 200
    assert f'<span class="state {state}">{WORDS[state]}</span>' in page.text
    assert f"crafted verdict: {state}" in page.text
    for name in ("SearchResponse", "PruneResponse"):
        prop = spec["components"]["schemas"][name]["properties"]["answerable"]
        assert {t.get("type") for t in prop["anyOf"]} == {"boolean", "null"}


def test_mcp_tools_structured_output_says_the_verdict(state: str) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from admit.service.config import settings_from_dict
    from admit.service.mcp import build_mcp_server
    from admit.testing.kb import memory_kb

    settings = settings_from_dict({"service": {"mcp": {"tenant": "acme"}}})
    server = build_mcp_server(settings, kb=memory_kb(CORPUS, embedder="fake"), principal=Principal(tenant="acme"))

    async def calls() -> list[Any]:
        with anyio.fail_after(120):
            async with Client(server) as client:
                return [
                    await client.call_tool("search_knowledge_base", {"question": QUESTION}),
                    await client.call_tool("prune_context", {"question": QUESTION, "chunks": [TEXT]}),
                ]

    for result in anyio.run(calls):
        assert not result.is_error, result.content
        out = result.structured_content
        assert out["answerable"] is SAID[state] and out["answer_state"] == state, out


# ---------------------------------------------------------------- the adapters


def test_the_adapters_say_the_verdict_on_the_result_and_every_document(state: str) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from haystack import Document as HaystackDocument
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from admit.adapters.haystack import AdmitPruner
    from admit.adapters.langchain import AdmitCompressor
    from admit.adapters.llamaindex import AdmitNodePostprocessor

    opts = {"strategy": "top_n", "reranker": "bm25"}
    lc = AdmitCompressor(**opts).decide([Document(page_content=c.text) for c in CORPUS], QUESTION)
    li = AdmitNodePostprocessor(**opts).decide([NodeWithScore(node=TextNode(text=c.text)) for c in CORPUS], QUESTION)
    hs = AdmitPruner(**opts).run(query=QUESTION, documents=[HaystackDocument(content=c.text) for c in CORPUS])
    metas = [d.metadata["admit"] for d in lc.kept + lc.dropped]
    metas += [n.node.metadata["admit"] for n in li.kept + li.dropped]
    metas += [d.meta["admit"] for d in hs["documents"] + hs["dropped"]]
    results = [(lc.answerable, lc.answer_state), (li.answerable, li.answer_state)]
    results.append((hs["answerable"], hs["answer_state"]))
    results += [(m["answerable"], m["answer_state"]) for m in metas]
    assert len(results) == 3 + 3 * len(CORPUS)
    for answerable, answer_state in results:
        assert answerable is SAID[state] and answer_state == state


# ---------------------------------------------------------------- the inspector and the eval metrics


def test_the_inspector_page_shows_each_verdict_its_probability_and_reason() -> None:
    records = [{"request_id": f"r-{s}", "decisions": [], "answerability": _crafted(s).as_dict()} for s in SAID] + [
        {"request_id": "r-none", "decisions": []}
    ]
    page = render_page(records)
    for s in SAID:
        section = page[page.index(f'id="req-r-{s}"') :]
        section = section[: section.index("</section>")]
        assert f'data-state="{s}"' in section and f'<span class="state {s}">{WORDS[s]}</span>' in section
        assert f"crafted verdict: {s}" in section and _crafted(s).as_dict()["probability"] == float(
            section.split("<th>probability</th><td>")[1].split("<")[0]
        )
        assert {"answered": "true", "unsure": "null (unsure)", "not_answered": "false"}[s] in section
    assert "not assessed in this trace" in page[page.index('id="req-r-none"') :]
    assert "<th>missing</th><td>listen</td>" in page


def test_eval_metrics_count_unsure_apart() -> None:
    def result(i: int, answer_state: str | None, retained: bool = True) -> QuestionResult:
        return QuestionResult(
            record_id=f"q{i}",
            candidate_ids=("a", "b"),
            kept_ids=("a",) if retained else ("b",),
            required=("a",),
            candidate_tokens={"a": 10, "b": 10},
            answer_state=answer_state,
        )

    rows = [result(0, "answered"), result(1, "unsure"), result(2, "unsure", retained=False)]
    rows += [result(3, "not_answered", retained=False), result(4, None)]
    assert [r.answerable for r in rows] == [True, None, None, False, None]
    m = summarize(rows)
    assert m["said_answerable"] == 0.25 and m["said_unsure"] == 0.5 and m["said_not_answered"] == 0.25
    assert m["said_unsure_when_retained"] == 0.5 and m["said_not_answered_when_retained"] == 0.0
    assert m["said_not_answered_when_lost"] == 0.5
    none = summarize([result(0, None)])
    assert none["said_answerable"] is None and none["said_unsure"] is None


def test_a_cached_eval_outcome_without_the_verdict_is_computed_again(tmp_path: Path) -> None:
    import sqlite3

    from admit.eval.dataset import load_dataset
    from admit.eval.sweep import EvalOptions, expand_grid, run_eval

    row = {
        "id": "p:0",
        "question": QUESTION,
        "candidates": [{"id": c.id, "source_id": c.source_id, "text": c.text} for c in CORPUS],
        "required": ["config"],
        "source": "toy",
    }
    path = tmp_path / "toy.jsonl"
    path.write_text(json.dumps(row) + "\n", "utf-8")
    opts = EvalOptions(reranker="bm25", generator_model="cl100k_base", cache=tmp_path / "cache")
    grid = expand_grid("top_n", {"n": [1]})
    first = run_eval(load_dataset(path), grid, opts).results["top_n n=1"][0]
    assert first.answer_state in SAID and first.answerable is SAID[first.answer_state]
    # an outcome cached before the verdict was stored: answerable true for "unsure" too, no answer_state
    with sqlite3.connect(tmp_path / "cache" / "cache.sqlite") as db:
        (key, value), *_ = db.execute("SELECT key, value FROM outcomes").fetchall()
        old = {k: v for k, v in json.loads(value).items() if k != "answer_state"}
        db.execute("UPDATE outcomes SET value = ? WHERE key = ?", (json.dumps({**old, "answerable": True}), key))
    again = run_eval(load_dataset(path), grid, opts).results["top_n n=1"][0]
    assert again.answer_state == first.answer_state and again.answerable is first.answerable


# ---------------------------------------------------------------- one typed verdict (issue 49 item 3)


def test_the_verdict_is_one_literal_with_answerable_read_from_it_everywhere() -> None:
    import json
    from pathlib import Path
    from typing import get_args

    from admit.adapters._verdicts import Decision, FilterRun
    from admit.types import ANSWER_STATES, AnswerState, PackResult, answerable_of

    assert set(get_args(AnswerState)) == set(ANSWER_STATES) == set(SAID)
    assert [answerable_of(s) for s in SAID] == list(SAID.values()) and answerable_of(None) is None
    # "not assessed" is None on every record that carries the verdict, never a made-up "answered"
    from admit.types import Budget

    bare = PackResult(admitted=(), prompt="", budget=Budget.__new__(Budget), decisions=(), fallbacks=(), trace={})
    assert (bare.answer_state, bare.answerable, bare.answerability) == (None, None, None)
    unassessed = FilterRun(strategy="none", verdicts=())
    assert (unassessed.answer_state, unassessed.answerable) == (None, None)
    assert QuestionResult.__dataclass_fields__["answer_state"].default is None
    for s, said in SAID.items():
        assert FilterRun(strategy="none", verdicts=(), answer_state=s).answerable is said  # type: ignore[arg-type]
        assert Decision(["a"], [], answer_state=s).answerable is said  # type: ignore[arg-type]
    # the faces' schemas name the three states (and null: not assessed); the trace's verdict is `answer`, and
    # `answerability` means the probability alone
    root = Path(__file__).resolve().parents[2] / "schemas"
    trace = json.loads((root / "trace.schema.json").read_text())
    record = trace["$defs"]["TraceRecord"]["properties"]
    assert "answer" in record and "answerability" not in record
    assert trace["$defs"]["AnswerRecord"]["properties"]["state"]["enum"] == list(get_args(AnswerState))
    api = json.loads((root / "http.openapi.json").read_text())
    for name in ("SearchResponse", "PruneResponse"):
        props = api["components"]["schemas"][name]["properties"]
        states = [x.get("enum") for x in props["answer_state"]["anyOf"] if "enum" in x]
        assert states == [list(get_args(AnswerState))] and props["answerability"]["anyOf"][0]["type"] == "number"


def test_the_state_is_typed_once_and_read_into_answerable_in_one_place() -> None:
    """Issue 49 item 3, re-checked on the source: no field or argument named ``answer_state`` or ``state`` is typed
    ``str`` (the verdict is :data:`admit.types.AnswerState`, a ``Literal``), and the state-to-``answerable`` mapping
    is written once, in :func:`admit.types.answerable_of` (it was written three times)."""
    import re

    from admit.types import AnswerState, answerable_of

    src = Path(__file__).resolve().parents[2] / "src" / "admit"
    typed_str = re.compile(r"\b(?:answer_state|state)\s*:\s*str\b")
    mapping = re.compile(r"[\"'](?:answered|unsure|not_answered)[\"']\s*:\s*(?:True|False|None)\b")
    found = [
        f"{path.relative_to(src)}:{n}: {line.strip()}"
        for path in sorted(src.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if typed_str.search(line) or mapping.search(line)
    ]
    assert not found, found
    assert [answerable_of(s) for s in (*AnswerState.__args__, None)] == [True, None, False, None]
