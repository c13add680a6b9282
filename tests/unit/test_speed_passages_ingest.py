"""Issue 48 (speed IV): what a documentation list, a stored-vector score and an ingest encode (counted, never timed).

- a graded list reads at most :data:`admit.passages.LIVE_PASSAGES` passages per chunk on average, its first
  passages always, the rest by BM25; a list that fits reads every passage, as on main; a passage the list repeats is
  encoded once per call, whatever the embedder;
- the per-text memos and the one-passage fast path change no output;
- ingest encodes a chunk of several passages by its passages alone (its own vector is its first passage's).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from admit._text import clear_caches as clear_text_caches
from admit._text import key_units
from admit.backends.embedders import FakeEmbedder
from admit.backends.embedders.base import CachedEmbedder
from admit.passages import LIVE_PASSAGES, _sentence_passages, list_passages, passages
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer


class Recording(FakeEmbedder):
    """FakeEmbedder that remembers every text it encodes."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


def _section(topic: str, k: int) -> str:
    """A documentation section of about ``k`` sentences of 20 words on ``topic``."""
    words = [
        "configure",
        "the",
        "plugin",
        "in",
        "the",
        "values",
        "file",
        "and",
        "restart",
        "the",
        "pod",
        "after",
        "each",
        "change",
        "to",
        "the",
        "cluster",
    ]
    return " ".join(f"{topic} step {i}: " + " ".join(words) + "." for i in range(k))


def _doc_list() -> tuple[str, list[SetwiseItem]]:
    topics = ["Keycloak login", "catalog refresh", "TechDocs build", "RBAC policy", "scaffolder template"]
    items = [SetwiseItem(id=str(i), title=f"Guide {t}", text=_section(t, 48)) for i, t in enumerate(topics)]
    rbac = _section("RBAC policy", 20) + " " + _section("RBAC policy csv file permission admin role", 8)
    items[3] = SetwiseItem(id="3", title="Guide RBAC policy", text=rbac)
    return "How do I give the admin role an RBAC policy permission in the csv file?", items


# -- item 1: documentation-length lists ------------------------------------------------------------------------------


def test_a_documentation_list_reads_a_bounded_share_of_its_passages() -> None:
    question, items = _doc_list()
    every = [passages(it.title, it.text) for it in items]
    assert all(len(ps) >= 4 for ps in every) and sum(map(len, every)) > 25  # documentation-length chunks
    emb = Recording()
    SetwiseScorer(embedder=emb, cross=False, multilingual=False).score(question, items)
    read = [t for t in emb.seen if t != question]
    assert len(read) <= LIVE_PASSAGES * len(items) < sum(map(len, every))  # main read all of them
    assert len(set(read)) == len(read)  # each passage encoded once
    assert all(ps[0] in read for ps in every)  # every chunk's heading and opening
    assert any("csv file permission admin role" in p for p in read)  # the passages BM25 ranks highest
    emb.seen.clear()
    SetwiseScorer(embedder=emb, cross=False, multilingual=False, passage_budget=None).score(question, items)
    assert sorted(t for t in emb.seen if t != question) == sorted(p for ps in every for p in ps)  # None: all


def test_a_list_that_fits_the_budget_reads_every_passage() -> None:
    chunks = [("Short", "One sentence here."), ("Two", _section("alpha", 12))]
    assert sum(len(passages(t, x)) for t, x in chunks) <= LIVE_PASSAGES * len(chunks)
    assert list_passages("what about alpha?", chunks, LIVE_PASSAGES) == [passages(t, x) for t, x in chunks]
    assert list_passages("what about alpha?", chunks) == [passages(t, x) for t, x in chunks]


def test_the_rest_of_the_budget_goes_to_the_passages_bm25_ranks_highest() -> None:
    filler = _section("general", 30)
    target = "The retention period of audit logs is ninety days."
    chunks = [(f"Doc {i}", filler + (f" {target}" if i == 2 else "")) for i in range(3)]
    chosen = list_passages("What is the retention period of audit logs?", chunks, LIVE_PASSAGES)
    assert sum(len(ps) for ps in chosen) <= LIVE_PASSAGES * len(chunks)
    assert any(target in p for p in chosen[2])
    assert [ps[0] for ps in chosen] == [passages(t, x)[0] for t, x in chunks]


def test_a_passage_repeated_in_a_list_is_encoded_once_per_call() -> None:
    # a documentation list repeats a section across releases (two chunk ids, one text); an embedder without a cache
    # (the scorer given a bare MiniLM) still encodes each distinct passage once, and the scores are those of a
    # cached embedder's
    question, items = _doc_list()
    items = [*items, SetwiseItem(id="3-1.4", title=items[3].title, text=items[3].text, version="1.4")]
    emb = Recording()
    got = SetwiseScorer(embedder=emb, cross=False, multilingual=False).score(question, items)
    read = [t for t in emb.seen if t != question]
    chosen = [p for ps in list_passages(question, [(it.title, it.text) for it in items], LIVE_PASSAGES) for p in ps]
    assert any("csv file permission" in p for p in chosen[-3:])  # the copy's best passages are chosen again ...
    assert len(read) == len(set(read)) == len(set(chosen)) < len(chosen)  # ... and encoded once (main: twice)
    cached = SetwiseScorer(embedder=CachedEmbedder(FakeEmbedder(dim=64)), cross=False, multilingual=False)
    want = cached.score(question, items)
    assert got.probs == want.probs and got.grades == want.grades and got.dense == want.dense
    assert got.probs[3] == got.probs[-1]  # one vector for both copies


# -- item 2: identical outputs --------------------------------------------------------------------------------------


def _texts(rng: random.Random, n: int) -> list[str]:
    vocab = ["Alpha", "beta", "E4012", "v1.2.3", "déjà", "naïve", "x", "1,000", "U.S.", "end.", "why?", "wow!"]
    seps = [" ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u2003", ". ", "! "]
    out = []
    for _ in range(n):
        k = rng.randint(0, 240)
        out.append("".join(rng.choice(vocab) + rng.choice(seps) for _ in range(k)))
    return out


def test_the_one_passage_fast_path_cuts_as_the_sentence_cut_does() -> None:
    rng = random.Random(48)
    for text in _texts(rng, 60):
        for title in ("", "Title", " Spaced  title "):
            for words in (5, 60, 180):
                assert passages(title, text, max_words=words) == _sentence_passages(title, text, words, 24)
                assert passages(title, text, max_words=words, max_passages=0) == _sentence_passages(
                    title, text, words, 0
                )


def test_setwise_scores_do_not_depend_on_the_text_memos() -> None:
    rng = random.Random(7)
    texts = _texts(rng, 12)
    items = [SetwiseItem(id=str(i), title=f"Page {i} (draft)", text=t) for i, t in enumerate(texts)]
    scorer = SetwiseScorer(embedder=FakeEmbedder(dim=64), cross=False, multilingual=False)
    question = "Why does E4012 appear after Alpha beta v1.2.3?"
    clear_text_caches()
    cold = scorer.score(question, items)
    warm = scorer.score(question, items)
    clear_text_caches()
    again = scorer.score(question, items)
    assert cold == warm == again


def test_key_units_stem_each_distinct_word_as_every_occurrence() -> None:
    from admit._text import capitalised_tokens, content_tokens, stem

    for text in _texts(random.Random(3), 50):
        ref = frozenset(stem(w, ies=False) for w in (*content_tokens(text), *capitalised_tokens(text)))
        key_units.cache_clear()
        assert key_units(text) == ref


def test_the_default_scorer_shares_the_process_embedder_and_its_cache() -> None:
    from admit.backends.embedders.shared import shared_embedder

    a, b = SetwiseScorer(cross=False, multilingual=False), SetwiseScorer(cross=False, multilingual=False)
    assert a.embedder is b.embedder is shared_embedder("minilm")  # main made an uncached MiniLM per scorer


# -- item 3: ingest --------------------------------------------------------------------------------------------------


def test_ingest_encodes_a_long_chunk_by_its_passages_alone(tmp_path: Path) -> None:
    pytest.importorskip("sqlean")
    pytest.importorskip("sqlite_vec")
    from admit.kb import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    long = _section("upgrade", 14)  # about 300 words: two passages
    (docs / "guide.md").write_text(f"# Guide\n\n## Upgrade\n\n{long}\n\n## Short\n\nA short note.\n", "utf-8")
    emb = Recording()
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=emb) as kb:
        rep = kb.ingest([docs], tenant="acme")
        recs = [r for s in kb.sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    assert not rep.errors
    multi = [r for r in recs if len(passages(r.title, r.text)) > 1]
    assert multi, "the long section is one chunk of several passages"
    want = sum(max(1, len(passages(r.title, r.text))) for r in recs)
    assert len(emb.seen) == len(set(emb.seen)) == want  # main encoded each long chunk once more, whole
    for r in multi:
        first = passages(r.title, r.text)[0]
        assert np.allclose(np.asarray(r.embedding), FakeEmbedder(dim=64).embed([first])[0], atol=1e-6)


def test_no_text_pays_more_than_a_tenth_of_its_batch_in_padding() -> None:
    from admit.backends.embedders.minilm import MAX_BATCH_TOKENS, MiniLMEmbedder

    emb = MiniLMEmbedder(batch_size=32)
    lengths = [256, 250, 231, 229, 200, 190, 120, 100, 95, 40, 30, 20, 18, 12, 9]
    groups = list(emb._batches(lengths))
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        longest = lengths[g[0]]
        assert longest * len(g) <= MAX_BATCH_TOKENS and len(g) <= 32
        assert all(lengths[i] >= 0.9 * longest or longest - lengths[i] < 16 for i in g)  # main: one batch of 15
    padded = sum(lengths[g[0]] * len(g) for g in groups)
    assert padded <= 1.1 * sum(lengths)


def test_ingest_progress_only_goes_forward(tmp_path: Path) -> None:
    pytest.importorskip("sqlean")
    pytest.importorskip("sqlite_vec")
    from admit.kb import KnowledgeBase, _progress

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(9):
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\n" + _section(f"topic{i}", 3 + 5 * i) + "\n", "utf-8")
    states: list[tuple[int, int]] = []
    real = _progress.IngestProgress._refresh

    def spy(self: _progress.IngestProgress) -> None:
        states.append((self.chunks_done, self.estimate()))
        real(self)

    _progress.IngestProgress._refresh = spy  # type: ignore[method-assign]
    try:
        with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=64)) as kb:
            kb.ingest([docs], tenant="acme", batch_size=4)
    finally:
        _progress.IngestProgress._refresh = real  # type: ignore[method-assign]
    shares = [done / total for done, total in states if total]
    assert len(shares) > 3
    assert shares == sorted(shares) and shares[-1] == 1.0
    totals = {total for done, total in states if done}
    assert len(totals) == 1  # the total is known before the first chunk is embedded
