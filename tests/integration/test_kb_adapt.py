"""Issue 46 item 1: ``admit adapt`` fits the answerability thresholds to the user's own docs, without labels.

A real knowledge base (SQLite, MiniLM) of two vendored git manual pages is adapted on a small sample of its own
pseudo-questions through the real search path; the adaptation is stored in the knowledge base with its date, chunk
count and figures, every search of it reads it and its trace names it, and it is marked stale (and not used) once
more than a fifth of the chunks changed. ``admit adapt`` and ``admit ingest --adapt`` do not exist on main.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")
pytest.importorskip("lxml")

from admit.answerability.adaptation import META_KEY
from admit.cli import main
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.adapt import AdaptOptions, adapt
from admit.types import Access, Chunk

pytestmark = pytest.mark.slow

GIT = Path(__file__).resolve().parents[1] / "data" / "docsites" / "git"
WHO = parse_principal("tenant:docs")
Q = "How do I stage only part of a file's changes?"


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``admit ingest SITE --adapt`` as a user runs it."""
    site = tmp_path_factory.mktemp("site")
    for f in GIT.glob("git-*.*"):
        shutil.copy2(f, site / f.name)
    path = tmp_path_factory.mktemp("kb") / "git.kb"
    args = ["ingest", str(site), "--kb", str(path), "--access", "tenant:docs", "--adapt", "--json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    rep = json.loads(out.stdout)
    assert rep["adaptation"]["thresholds"] and rep["adaptation"]["chunks"] == rep["kb_chunks"]
    return path


def test_the_library_call_asks_every_kind_of_pseudo_question(kb_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "lib.kb"
    shutil.copy2(kb_path, copy)
    with KnowledgeBase(copy) as kb:
        ad, cases = adapt(kb, AdaptOptions(sections=6, foreign=6, cut=True), save=False)
    assert {c.kind for c in cases} == {"answerable", "near_miss", "foreign"}
    assert sum(c.kind == "answerable" for c in cases) == sum(c.kind == "near_miss" for c in cases) <= 6
    assert all(c.model in {"setwise", "lexical", "empty"} for c in cases)
    assert ad.figures["questions"]["foreign"] == sum(c.kind == "foreign" for c in cases)
    # the pruner's cut (issue 46 item 1): the admitted chunks' probabilities are recorded on the answerable ones
    recorded = [c.extra["admitted_p"] for c in cases if c.kind == "answerable" and "admitted_p" in c.extra]
    assert recorded and all(0.0 <= p <= 1.0 for xs in recorded for p, _ in xs)
    assert "admitted_p" not in {k for c in cases if c.kind != "answerable" for k in c.extra}
    assert ad.figures["cut"]["share"] > 0.9


def test_the_adaptation_is_stored_with_its_date_chunk_count_and_figures(kb_path: Path) -> None:
    with KnowledgeBase(kb_path) as kb:
        ad = kb.adaptation()
        assert ad is not None and ad.current
        assert ad.chunks == kb.count()
        assert ad.made[:4].isdigit() and "T" in ad.made
        figs = ad.figures
        assert figs["questions"]["answerable"] >= 6
        assert figs["questions"]["foreign"] >= min(12, figs["questions"]["answerable"])
        assert set(figs["shipped"]) == set(figs["fitted"]) == {"answerable", "near_miss", "foreign"}
        assert set(ad.thresholds) >= {"setwise", "lexical"}
        # the knowledge base's vocabulary (issue 46): stored with it, its size in the figures
        assert {"stage", "commit", "index"} <= ad.vocabulary and figs["vocabulary"] == len(ad.vocabulary)
        assert set(figs["words_nowhere"]) == {"answerable", "near_miss", "foreign"}
        # the knowledge base's page names (issue 46, the near misses): stored with it, their count in the figures
        assert figs["pages"] == len(ad.pages)


def test_every_search_of_the_knowledge_base_reads_it_and_the_trace_names_it(kb_path: Path) -> None:
    with KnowledgeBase(kb_path) as kb:
        res = kb.search(Q, WHO, prune="setwise")
        rec = res.trace["answer"]
        assert rec["adaptation"].startswith("thresholds adapted to this knowledge base on ")
        assert f"({kb.count():,} chunks)" in rec["adaptation"]
    out = CliRunner().invoke(main, ["search", Q, "--kb", str(kb_path), "--principal", "tenant:docs", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["trace"]["answer"]["adaptation"].startswith("thresholds adapted")


def test_show_and_clear(kb_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.kb"
    shutil.copy2(kb_path, copy)
    shown = CliRunner().invoke(main, ["adapt", "--kb", str(copy), "--show"])
    assert shown.exit_code == 0, shown.output
    assert "thresholds adapted to this knowledge base" in shown.output and "pseudo-questions" in shown.output
    cleared = CliRunner().invoke(main, ["adapt", "--kb", str(copy), "--clear"])
    assert cleared.exit_code == 0, cleared.output
    with KnowledgeBase(copy) as kb:
        assert kb.adaptation() is None
        assert "adaptation" not in kb.search(Q, WHO, prune="setwise").trace["answer"]


def test_a_knowledge_base_that_changed_enough_marks_it_stale(kb_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "changed.kb"
    shutil.copy2(kb_path, copy)
    with KnowledgeBase(copy) as kb:
        n = kb.count()
        few = [
            Chunk(
                id=f"new#{i}",
                source_id="new",
                text=f"Note {i}: the stash keeps local changes.",
                access=Access(tenant="docs"),
            )
            for i in range(max(1, n // 10))
        ]
        kb.add_chunks(few)  # a tenth more: still current
        ad = kb.adaptation()
        assert ad is not None and ad.current
        many = [
            Chunk(
                id=f"more#{i}",
                source_id="more",
                text=f"Entry {i}: a worktree has its own index.",
                access=Access(tenant="docs"),
            )
            for i in range(n // 3)
        ]
        kb.add_chunks(many)
        ad = kb.adaptation()
        assert ad is not None and not ad.current
        assert "changed since it was fitted" in ad.stale or "when it was adapted" in ad.stale
        assert "changed since it was fitted" in json.loads(kb.store.get_meta(META_KEY) or "{}")["stale"]
        rec = kb.search(Q, WHO, prune="setwise").trace["answer"]
        assert rec["adaptation"].startswith("shipped thresholds: the adaptation of ") and "stale" in rec["adaptation"]
