"""The question read once (issue 49 item 1): one rule for "the release a question names", read alike by rerank,
the knowledge base's release-candidate query, the setwise pruner and answerability (the four readings); the scan
linear in the question (issue 47 item 6)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np
import pytest

from admit import _linear
from admit.answerability.terms import answer_type_missing
from admit.backends.embedders import FakeEmbedder
from admit.backends.rerankers.fake import FakeReranker
from admit.errors import RequestError
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.store import ChunkRecord, asked_version_strings, rank_version_records
from admit.prune.setwise_model.rules import version_hits
from admit.question import Question, read_question, release_matches, release_of, releases_in
from admit.rerank import rerank
from tests.helpers import chunk

RELEASES = ("4.0.0", "3.2.0", "3.1.0", "1.2.4", "1.2.4rc1")
CASES = {
    "What changed in 1.2.4rc1?": {"cl#1.2.4rc1"},
    "What changed in v4?": {"cl#4.0.0"},
    "What changed in 4.x?": {"cl#4.0.0"},
    "What changed in 3.2?": {"cl#3.2.0"},
    "What changed in 1.2.4?": {"cl#1.2.4"},
}


def _chunks() -> list[Any]:
    out = [
        chunk(f"cl#{v}", f"{v}\nAdded: the {v} work; fixes for the cache and the installer.", title=f"Changelog › {v}")
        for v in RELEASES
    ]
    out.append(chunk("guide#x", "What changed in the installer is described in the changelog.", title="Guide"))
    return out


@pytest.mark.parametrize(
    ("token", "want"),
    [
        ("4.1.0", ("4", "1", "0")),
        ("v4", ("4",)),
        ("4.x", ("4",)),
        ("4.*", ("4",)),
        ("1.2.4rc1", ("1", "2", "4rc1")),
        ("1.2.4-beta", ("1", "2", "4b")),
        ("v1.2.4.", ("1", "2", "4")),
        ("4.x-rc1", None),
        ("E4012", None),
        ("v", None),
    ],
)
def test_one_rule_reads_a_release(token: str, want: tuple[str, ...] | None) -> None:
    assert release_of(token) == want


def test_a_pre_release_stays_exact_and_a_shorter_release_names_its_patches() -> None:
    assert not release_matches(("1", "2", "4"), ("1", "2", "4rc1"))
    assert not release_matches(("1", "2", "4rc1"), ("1", "2", "4"))
    assert release_matches(("3", "2", "0"), ("3", "2"))
    assert release_matches(("4", "1"), ("4", "1", "0"))
    assert not release_matches(("3", "2", "10"), ("3", "2", "1"))


def test_the_record_holds_every_reading_once() -> None:
    q = read_question("Why does HL_MAX_CONN fail with E4012 on Kerberos in v1.2.4rc1?")
    assert isinstance(q, Question)
    assert q.releases == (("1", "2", "4rc1"),)
    assert q.release_strings == ("1.2.4rc1",)
    assert {"hl_max_conn", "e4012", "kerberos"} <= set(q.words)
    assert "kerberos" in q.names and "kerberos" in q.content_terms
    assert {"HL_MAX_CONN", "E4012"} <= q.identifiers
    assert q.script is None
    assert read_question(q) is q  # a record passes through
    assert read_question(q.text) is q  # the same text: the record the request built
    with pytest.raises(RequestError):
        read_question(None)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        q.text = "x"  # type: ignore[misc]  # frozen


def _rerank_reading(question: str) -> set[str]:
    """The chunks rerank lifts above the best-scored one (the guide, scored highest)."""
    chunks = _chunks()
    scores = {c.id: (1.0 if c.id == "guide#x" else 0.5 - i / 100) for i, c in enumerate(chunks)}
    ranked, _ = rerank(question, chunks, FakeReranker(scores=scores), keep=len(chunks))
    ids = [s.chunk.id for s in ranked]
    return set(ids[: ids.index("guide#x")])


def _kb_reading(kb: KnowledgeBase, question: str) -> set[str]:
    """The chunks the knowledge base's release-candidate query finds for the question's releases."""
    q = read_question(question)
    found = kb.store.release_records(list(q.release_strings), principal=parse_principal("tenant:acme"), n=50)
    return {r.id for r, _ in rank_version_records(found, q)}


def _setwise_reading(question: str) -> set[str]:
    chunks = _chunks()
    hit, _, _ = version_hits(question, [c.title for c in chunks], [c.text for c in chunks])
    return {c.id for c, h in zip(chunks, hit, strict=True) if h}


def _answerability_reading(question: str) -> set[str]:
    """The chunks answerability takes for a section of the asked release (no ``release`` missing over them)."""
    return {c.id for c in _chunks() if answer_type_missing(question, [c.text], absent=True) != "release"}


@pytest.mark.parametrize("store", ["sqlite", "memory"])
def test_the_readings_of_a_release_give_one_answer(store: str, tmp_path: Any) -> None:
    if store == "sqlite":
        pytest.importorskip("sqlean")
        pytest.importorskip("sqlite_vec")
    kb = KnowledgeBase(tmp_path / "kb.sqlite" if store == "sqlite" else "memory://", embedder=FakeEmbedder(dim=16))
    kb.add_chunks(_chunks())
    for question, want in CASES.items():
        readings = {
            "rerank": _rerank_reading(question),
            "kb": _kb_reading(kb, question),
            "setwise": _setwise_reading(question),
            "answerability": _answerability_reading(question),
        }
        assert all(got == want for got in readings.values()), (question, readings)
    hits = kb.hits("What changed in 3.2?", parse_principal("tenant:acme"), k=2)
    assert "cl#3.2.0" in {h.record.id for h in hits}  # reached by the release-candidate query too


def test_a_store_without_the_release_query_is_recorded_in_the_trace() -> None:
    from admit.kb.memory_store import MemoryStore

    class NoReleases(MemoryStore):
        release_query = False

    kb = KnowledgeBase("memory://", store=NoReleases(dim=16), embedder=FakeEmbedder(dim=16))
    kb.add_chunks(_chunks())
    res = kb.search("What changed in 3.2?", parse_principal("tenant:acme"), prune=False)
    assert res.trace["retrieval"]["absent"] == ["release_records"]
    res = kb.search("What changed in the installer?", parse_principal("tenant:acme"), prune=False)
    assert "absent" not in res.trace["retrieval"]  # no release asked: nothing was missing
    full = KnowledgeBase("memory://", embedder=FakeEmbedder(dim=16))
    full.add_chunks(_chunks())
    res = full.search("What changed in 3.2?", parse_principal("tenant:acme"), prune=False)
    assert "absent" not in res.trace["retrieval"]


class _Lines:
    def __init__(self) -> None:
        self.lines = 0

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines += 1
        return self.trace


def _work(fn: Callable[[], object]) -> int:
    """Characters handed to the regex engine plus Python lines executed: a deterministic count, not the clock."""
    counter = _Lines()
    before = _linear.meter.chars
    sys.settrace(counter.trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return (_linear.meter.chars - before) + counter.lines


def _naming(n: int) -> str:
    return "What changed in " + ", ".join(f"{i // 400}.{(i // 20) % 20}.{i % 20}" for i in range(n)) + "?"


def test_a_question_naming_thousands_of_releases_is_read_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    import admit.question as question_mod

    # both questions read cold by every stage (neither remembered), so the two counts compare like with like
    monkeypatch.setattr(question_mod, "_MEMO_CHARS", 4_096)
    small, large = _naming(2_000), _naming(8_000)
    assert len(small) > 11_000 and len(releases_in(small)) == 2_000
    recs = [
        ChunkRecord(id=c.id, source_id="cl", text=c.text, title=c.title, embedding=np.zeros(2), text_hash="")
        for c in _chunks()
    ]

    def path(text: str) -> Callable[[], object]:
        def run() -> object:
            q = read_question(text)  # read once (cold: the first time this text is seen)
            asked_version_strings(q)
            _setwise_reading(text)
            _rerank_reading(text)
            return rank_version_records(recs, q)

        return run

    # warm the caches the readings share (words, stems), then count a cold read of each question
    path(_naming(50))()
    w_small, w_large = _work(path(small)), _work(path(large))
    assert w_large <= 5 * w_small, (w_small, w_large)  # 4x the releases: about 4x the work, never 16x


def test_a_setwise_prune_reads_the_question_once() -> None:
    """The stages take the record: pruning, the release rule, the identifier rule and answerability no longer hand
    the question to the tokenisers (main: 15 calls of ``words``, 6 of ``content_tokens``, 4 of ``identifiers`` and
    of ``unreadable_script`` per prune of five chunks)."""
    from admit import _text
    from admit.pipeline import prune_candidates
    from admit.prune import PruneSettings
    from admit.prune.setwise import SetwisePruner

    question = "Which port does the registry of Ferrule 4.1 listen on by default?"
    texts = [
        "The registry listens on port 5000 by default.",
        "Ferrule 4.1 release notes: faster pushes.",
        "Set REGISTRY_PORT to change the port.",
        "Garbage collection runs nightly.",
        "Install with pip.",
    ]
    chunks = [chunk(f"c{i}", t, title=f"Doc {i}") for i, t in enumerate(texts)]
    pruner = SetwisePruner(embedder=FakeEmbedder(dim=384), cross=False, multilingual=False)
    settings = PruneSettings(strategy="setwise")
    tokenisers = (_text.words, _text.content_tokens, _text.identifiers, _text.capitalised_tokens)
    # a memoised reader (lru_cache) is counted by the function it wraps: a cached read runs nothing
    readers = {getattr(f, "__wrapped__", f).__code__: f.__name__ for f in (*tokenisers, _text.unreadable_script)}
    calls: dict[str, int] = dict.fromkeys(readers.values(), 0)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in readers and question in frame.f_locals.values():
            calls[readers[frame.f_code]] += 1

    read = read_question(question)  # the request's one read
    sys.setprofile(profile)
    try:
        run = prune_candidates(read, chunks, settings=settings, reranker=FakeReranker(), pruner=pruner)
    finally:
        sys.setprofile(None)
    assert run.answer is not None and run.strategy == "setwise"
    assert sum(calls.values()) <= 1, calls  # the language check of the cross-language rule reads the text itself


def test_each_question_rule_is_written_once_in_src() -> None:
    """A rule that reads a question (or a release) stands in one place: the how-to question was written twice, letter
    for letter (``answerability/reader.py`` and ``answerability/terms.py``), and two copies drift. No pattern of
    more than a few characters is compiled twice under ``src/admit`` (read from the syntax tree: ``compile`` and
    ``simple`` calls, and the entries of a module's ``_linear.table``)."""
    import ast
    from collections import defaultdict
    from pathlib import Path

    def written(node: ast.AST) -> list[ast.expr]:
        """The pattern texts a call compiles."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            return []
        if node.func.attr in ("compile", "simple"):
            return [node.args[0]]
        if node.func.attr == "table" and len(node.args) > 1 and isinstance(node.args[1], ast.Dict):
            return [v.elts[0] if isinstance(v, ast.Tuple) else v for v in node.args[1].values]
        return []

    src = Path(__file__).resolve().parents[2] / "src" / "admit"
    places: dict[str, list[str]] = defaultdict(list)
    tables = 0
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for arg in written(node):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    places[arg.value].append(f"{path.relative_to(src)}:{arg.lineno}")
            tables += isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "table"
    assert tables >= 1 and len(places) >= 120, "the reading above still sees the patterns"
    twice = {p: at for p, at in places.items() if len(p) > 16 and len(at) > 1}
    assert not twice, f"one rule, one place (import it): {twice}"


def test_a_module_writes_its_patterns_as_one_table() -> None:
    """``_linear.table``: one table of ``key: pattern`` (or ``key: (pattern, flags)``), each compiled and registered
    under ``prefix.key`` with the table's flags unless it names its own; the same patterns as ``compile`` gives."""
    import re

    from admit import _linear
    from admit.errors import InvalidValue

    t = _linear.table("doc", {"port": r"\bport\s+(\d+)", "Host": (r"\bHost\b", 0)}, re.IGNORECASE)
    assert list(t) == ["port", "Host"] and [p.name for p in t.values()] == ["doc.port", "doc.Host"]
    assert t["port"].search("Listen on PORT 8080").group(1) == "8080" and t["port"].flags == re.IGNORECASE
    assert t["Host"].search("host") is None and t["Host"].flags == 0
    assert all(p in _linear.REGISTRY for p in t.values())
    with pytest.raises(InvalidValue, match=r"doc\.bad"):
        _linear.table("doc", {"bad": r"(a)\1"})
    from admit.answerability import reader

    assert reader.answer_type("In which year did it ship?") == "date"
    assert reader.answer_type("Who wrote it?") == "name" and reader.answer_type("Where is it kept?") == "place"


def test_the_how_to_rule_and_the_release_runs_are_the_questions() -> None:
    from admit.answerability import reader, terms
    from admit.prune.setwise_model import rules
    from admit.question import ASKS_HOWTO, release_runs

    assert reader.answer_type("How do I rotate the keys?") == "steps"
    assert reader.answer_type("how to rotate the keys") == "steps"
    assert reader.answer_type("Why rotate the keys?") == ""
    assert terms.ASKS_HOWTO is ASKS_HOWTO and reader.ASKS_HOWTO is ASKS_HOWTO
    assert release_runs("## v4.1.0 - 4.x, 1.2.4-rc.1") == ["v4.1.0", "-", "4.x", "1.2.4-rc.1"]
    assert rules.release_heading("## v0.28.1 - May 3, 2021") and not rules.release_heading("Upgrading from 4.1")
