"""Issue 48 item 4: the per-chunk work of a cold pack and of a setwise score is done at ingest and stored with the chunk
(``admit.features``: ``terms``, the answerability stage's words; ``words``, the setwise pruner's), or remembered per
process; the loops left are vectorised. None of it may change an output: a pack and a score with the stored data
seeded equal those computed from the text alone, and with features stored before these existed (or malformed ones).
On main (41326bb) the features hold neither ``terms`` nor ``words``."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from admit import Access, Chunk, PackRequest, Pipeline, Principal
from admit import _text as tx
from admit.backends.embedders import FakeEmbedder
from admit.backends.tokenizers import resolve_tokenizer
from admit.backends.tokenizers.base import count_by_lines
from admit.features import (
    FEATURES_VERSION,
    TERMS_VERSION,
    WORDS_VERSION,
    answer_text,
    chunk_features,
    clear_caches,
    features_current,
    seed_features,
)
from admit.pack import _envelope_count
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, crosslang
from admit.prune.setwise_model.links import _lexical_similarity
from admit.prune.setwise_model.stages import _novel_coverage
from admit.render import EvidenceRenderer

DOCS = Path(__file__).resolve().parents[1] / "data" / "ferrule"
WHO = Principal(tenant="acme")
ACCESS = Access(tenant="acme")
_NONCE = re.compile(r"(evidence|passage)-\d+")

#: Texts that take the long ways: line breaks of every kind, invisible characters, a leading "/", an empty body,
#: accents, a final sigma before a line break, CJK, a title that splits oddly.
AWKWARD = [
    ("Paths", "/etc/ferrule/ferrule.toml holds the settings.\n/var/lib/ferrule holds the catalog."),
    ("", "   \n\n  "),
    ("Zero\u200bwidth", "The agent\u200b port is 7420.\r\nIt listens on all addresses.\u2028Restart after a change."),
    ("ΤΕΛΟΣ", "ΤΕΛΟΣ\nΟδυσσέας ταξίδεψε. Déjà vu, naïve café — Straße 12."),
    ("数据", "数据备份每天运行一次。Ferrule 的目录保存在 /var/lib/ferrule。"),
    ("Retention (hourly, daily)", "  Retention rules: keep = { hourly = 24 }.\n\n\tIndented E4012 and v1.2.3 notes."),
]


def _chunks() -> list[Chunk]:
    out: list[Chunk] = []
    for path in sorted(DOCS.glob("*.md")):
        parts = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        for k in range(0, len(parts), 3):
            title = path.stem.replace("-", " ").title()
            out.append(
                Chunk(id=f"{path.stem}#{k}", source_id=path.stem, title=title, text="\n\n".join(parts[k : k + 3]))
            )
    out += [Chunk(id=f"odd#{i}", source_id=f"odd{i}", title=t, text=x) for i, (t, x) in enumerate(AWKWARD)]
    # a near copy and an exact copy of one chunk: dedupe's pairs and representatives
    first = out[0]
    out.append(Chunk(id="copy#1", source_id="copy", title=first.title, text=first.text + " Also see the FAQ."))
    out.append(Chunk(id="copy#2", source_id="copy2", title=first.title, text=first.text))
    rng = random.Random(48)
    return [Chunk(**{**_fields(c), "access": ACCESS, "score": rng.random(), "authority": rng.random()}) for c in out]


def _fields(c: Chunk) -> dict[str, Any]:
    return {"id": c.id, "source_id": c.source_id, "title": c.title, "text": c.text}


QUESTIONS = [
    "Which port does the Ferrule agent listen on?",
    "How do I change the retention of hourly snapshots?",
    "What does error E4012 mean and how do I fix it?",
    "Where is /etc/ferrule/ferrule.toml read?",
]


def _stored(chunks: list[Chunk], drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """What a knowledge base stores (through JSON), less ``drop`` (features stored by an older version)."""
    out = []
    for c in chunks:
        f = json.loads(json.dumps(chunk_features(c.title, c.text)))
        out.append({k: v for k, v in f.items() if k not in drop})
    return out


def _pack(pipe: Pipeline, question: str, chunks: list[Chunk]) -> str:
    r = pipe.pack(PackRequest(question=question, principal=WHO, candidates=chunks, model="gpt-4o", input_limit=3000))
    trace = {k: v for k, v in r.trace.items() if k not in ("latency_ms", "request_id", "ts")}
    seen = [[(a.chunk.id, a.text, a.tokens, a.excerpt) for a in r.admitted], r.prompt, r.decisions, r.fallbacks]
    return _NONCE.sub("N", json.dumps([seen, r.answer_state, r.answerability, trace], sort_keys=True, default=str))


@pytest.mark.parametrize("drop", [(), ("terms", "words")], ids=["stored now", "stored before terms and words"])
def test_a_pack_is_the_same_with_and_without_the_stored_chunk_data(drop: tuple[str, ...]) -> None:
    chunks = _chunks()
    stored = _stored(chunks, drop)
    pipe = Pipeline()
    for q in QUESTIONS:
        clear_caches()
        cold = _pack(pipe, q, chunks)
        clear_caches()
        assert all(seed_features(c.title, c.text, f) for c, f in zip(chunks, stored, strict=True))
        seeded = {c.id for c in chunks if answer_text(c.title, c.text) in tx.key_units._data}
        assert seeded == (set() if drop else {c.id for c in chunks})  # the words were seeded, not read
        assert _pack(pipe, q, chunks) == cold


def test_a_setwise_score_is_the_same_with_and_without_the_stored_chunk_data() -> None:
    chunks = _chunks()
    items = [SetwiseItem(id=c.id, title=c.title, text=c.text) for c in chunks]
    stored = _stored(chunks)
    scorer = SetwiseScorer(embedder=FakeEmbedder(dim=64), cross=False, multilingual=False)
    for q in QUESTIONS:
        clear_caches()
        cold = scorer.score(q, items)
        clear_caches()
        for c, f in zip(chunks, stored, strict=True):
            seed_features(c.title, c.text, f)
        assert scorer.score(q, items) == cold


def test_stored_words_of_another_version_or_shape_are_not_trusted() -> None:
    c = _chunks()[0]
    t = answer_text(c.title, c.text)
    good = chunk_features(c.title, c.text)
    assert features_current(good) and good["v"] == FEATURES_VERSION
    for bad in (
        {**good, "terms": {**good["terms"], "v": TERMS_VERSION + 1, "stems": "wrong"}},
        {**good, "terms": {**good["terms"], "stems": ["not", "a", "string"]}},
        {**good, "words": {**good["words"], "v": WORDS_VERSION + 1, "words": "wrong"}},
        {**good, "words": {**good["words"], "phrases": [1, 2]}},
    ):
        clear_caches()
        assert seed_features(c.title, c.text, bad)  # the rest is still seeded
        assert not features_current(bad)  # an ingest computes them again
        assert tx.key_stems(t) != ("wrong",) and "wrong" not in tx.words(t)
    clear_caches()
    old = {k: v for k, v in good.items() if k not in ("terms", "words")}
    assert seed_features(c.title, c.text, old) and not features_current(old)


def test_stored_words_equal_those_read_from_the_text() -> None:
    for c in _chunks():
        f = json.loads(json.dumps(chunk_features(c.title, c.text)))
        t = answer_text(c.title, c.text)
        clear_caches()
        assert seed_features(c.title, c.text, f)
        seeded = (tx.key_stems(t), tx.key_units(t), tx.word_stems(t), tx.words(t), tx.words(c.text), tx.words(c.title))
        more = (tx.capitalised_tokens(t), tx.entity_phrases(t))
        clear_caches()
        assert seeded == (
            tx.key_stems(t),
            tx.key_units(t),
            tx.word_stems(t),
            tx.words(t),
            tx.words(c.text),
            tx.words(c.title),
        )
        assert more == (tx.capitalised_tokens(t), tx.entity_phrases(t))


def test_an_envelope_counted_by_its_remembered_lines_counts_as_the_whole_envelope() -> None:
    r = EvidenceRenderer(boundary="12345678901234567890")
    for enc in ("o200k_base", "cl100k_base"):
        tok = resolve_tokenizer(enc)
        for c in _chunks():
            for text in (c.text, "/" + c.text, "", "\n" + c.text + "\n\n", c.text.replace("\n", "\r\n")):
                chunk = Chunk(id=c.id, source_id=c.source_id, title=c.title, text=text, access=ACCESS)
                assert _envelope_count(tok, r, chunk) == count_by_lines(tok, r.envelope(chunk, text))


def test_the_pair_count_is_the_pairs_set_intersection() -> None:
    rng = random.Random(5)
    for c in _chunks():
        t = answer_text(c.title, c.text)
        stems = tx.key_stems(t)
        pairs = set(itertools.pairwise(stems))
        asked = (
            set(rng.sample(sorted(pairs), min(3, len(pairs)))) | {("never", "seen"), (stems[0], "zzz")}
            if stems
            else set()
        )
        assert tx.pairs_held(t, asked) == len(pairs & asked)


# -- the setwise loops, against the code they replaced (main 41326bb) -------------------------------------------------


def _lexical_before(doc_tokens: list[list[str]], doc_sets: list[set[str]], q_set: set[str]) -> np.ndarray:
    from admit.backends.embedders.base import l2_normalise

    n = len(doc_tokens)
    vocab: dict[str, int] = {}
    rows: list[dict[int, float]] = []
    dfl: Counter[str] = Counter()
    for s in doc_sets:
        dfl.update(s)
    idf: dict[str, float] = {}
    for toks in doc_tokens:
        tf = Counter(t for t in toks if t not in q_set)
        row: dict[int, float] = {}
        for t, c in tf.items():
            w = idf.get(t)
            if w is None:
                w = idf[t] = math.log((n + 1) / (dfl[t] + 0.5))
            row[vocab.setdefault(t, len(vocab))] = (1.0 + math.log(c)) * w
        rows.append(row)
    tfidf = np.zeros((n, max(1, len(vocab))), dtype=np.float64)
    at = [(i, k) for i, row in enumerate(rows) for k in row]
    if at:
        tfidf[tuple(np.array(at).T)] = [v for row in rows for v in row.values()]
    tfidf = l2_normalise(tfidf).astype(np.float64)
    lex = tfidf @ tfidf.T
    np.fill_diagonal(lex, 0.0)
    return lex


def test_the_lexical_links_are_bit_identical_to_the_loop_they_replaced() -> None:
    rng = random.Random(11)
    words = [f"w{i}" for i in range(60)]
    for n in (1, 2, 5, 30):
        docs = [[rng.choice(words) for _ in range(rng.randint(0, 200))] for _ in range(n)]
        q = set(rng.sample(words, 5))
        got = _lexical_similarity(docs, [set(d) for d in docs], q)
        assert np.array_equal(got, _lexical_before(docs, [set(d) for d in docs], q))


def _novel_before(hits: np.ndarray, ent: np.ndarray, p: np.ndarray) -> np.ndarray:
    n = len(p)
    out = np.zeros((n, 4))
    n_all, n_ent = float(hits.shape[1]), float(ent.sum())
    order = np.argsort(-p, kind="stable")
    for j in range(n):
        top = int(order[0]) if int(order[0]) != j else (int(order[1]) if n > 1 else j)
        new_top = hits[j] * (1.0 - hits[top]) if top != j else hits[j]
        strong = [i for i in range(n) if i != j and p[i] > p[j] and (p[i] >= 0.3 or i == int(order[0]))]
        covered = hits[strong].max(axis=0) if strong else np.zeros(hits.shape[1])
        new_strong = hits[j] * (1.0 - covered)
        out[j, 0] = new_top.sum() / n_all
        out[j, 2] = new_strong.sum() / n_all
        if n_ent > 0:
            out[j, 1] = (new_top * ent).sum() / n_ent
            out[j, 3] = (new_strong * ent).sum() / n_ent
    return out


def test_the_novel_coverage_is_bit_identical_to_the_loop_it_replaced() -> None:
    rng = np.random.default_rng(3)
    for n, m in ((1, 3), (2, 4), (7, 5), (30, 9)):
        hits = (rng.random((n, m)) < 0.4).astype(np.float64)
        ent = (rng.random(m) < 0.5).astype(np.float64)
        p = np.round(rng.random(n), 1)  # ties too
        prep = SimpleNamespace(n=n, q_hits=hits, q_is_entity=ent)
        assert np.array_equal(_novel_coverage(prep, p), _novel_before(hits, ent, p))  # type: ignore[arg-type]


def test_the_language_of_a_text_is_read_as_before() -> None:
    texts = {
        "Der Server ist nicht mit dem Netz verbunden und die Agenten werden von der Konsole nicht gesehen.": "German",
        "Le serveur est dans le réseau et les agents sont pour la console avec une clé.": "French",
        "The server listens on port 7420 and the agents upload to it.": None,
        "ªµº and nothing else of note in this English sentence about the server.": None,
        "数据备份每天运行一次，目录保存在服务器上。": "CJK script",
    }
    for text, lang in texts.items():
        crosslang.language_of.cache_clear()
        assert crosslang.language_of(text) == lang


def test_a_seeded_chunk_s_lines_are_never_counted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from admit.render import body_lines

    chunks = _chunks()
    stored = _stored(chunks)
    tok = resolve_tokenizer("gpt-4o")
    counted: list[str] = []
    real = type(tok).count

    def count(self: Any, text: str) -> int:
        counted.append(text)
        return real(self, text)  # type: ignore[no-any-return]

    clear_caches()
    for c, f in zip(chunks, stored, strict=True):
        seed_features(c.title, c.text, f)
    monkeypatch.setattr(type(tok), "count", count)
    _pack(Pipeline(), QUESTIONS[0], chunks)
    lines = {line for c in chunks for line in body_lines(c.text)}
    assert counted and not lines & set(counted)  # the envelopes' heads are counted, the stored lines are not


def _raw_before(e: Any, x: np.ndarray) -> np.ndarray:
    """The tree walk of main 41326bb: every level, both children gathered, the missing direction always read."""
    width = e.feature.shape[1]
    base = (np.arange(e.n_trees, dtype=np.intp) * width)[None, :]
    xs = np.ascontiguousarray(x, dtype=np.float64).ravel()
    rows = (np.arange(x.shape[0], dtype=np.intp) * x.shape[1])[:, None]
    at = np.broadcast_to(base, (x.shape[0], e.n_trees)).copy()
    for _ in range(e.depth):
        v = np.take(xs, rows + np.take(e.feature.ravel(), at))
        go_left = (v <= np.take(e.threshold.ravel(), at)) | (np.isnan(v) & np.take(e.missing_left.ravel(), at))
        at = base + np.where(go_left, np.take(e.left.ravel(), at), np.take(e.right.ravel(), at))
    out: np.ndarray = e.baseline + np.take(e.value.ravel(), at).sum(axis=1)
    return out


def test_the_shipped_trees_walk_as_before_with_and_without_missing_values() -> None:
    from admit.prune.setwise_model import trees

    scorer = SetwiseScorer(embedder=FakeEmbedder(dim=64), cross=False, multilingual=False)
    ensembles = [*scorer.model.stages, scorer.model.coverage]
    assert ensembles and all(isinstance(e, trees.TreeEnsemble) for e in ensembles)
    rng = np.random.default_rng(9)
    for e in ensembles:
        x = rng.normal(size=(30, len(e.features)))
        assert np.array_equal(e.raw(x), _raw_before(e, x))
        x[rng.random(x.shape) < 0.1] = np.nan
        assert np.array_equal(e.raw(x), _raw_before(e, x))
