"""Unit tests of the set-aware scoring model (FakeEmbedder: fast, no torch)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from admit._text import bm25_matrix
from admit.backends.embedders import CachedEmbedder, resolve_embedder
from admit.backends.embedders.base import text_key
from admit.backends.embedders.fake import FakeEmbedder
from admit.errors import ConfigError
from admit.prune import setwise_model as sm
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer


def _items(*pairs: tuple[str, str]) -> list[SetwiseItem]:
    return [SetwiseItem(id=f"c{i}", title=t, text=x) for i, (t, x) in enumerate(pairs)]


@pytest.fixture(scope="module")
def scorer() -> SetwiseScorer:
    return SetwiseScorer(embedder=FakeEmbedder(dim=64))


BRIDGE = _items(
    ("Hugo Rodriguez Romero", "Hugo Rodriguez Romero is a Spanish footballer who plays for FC Cartagena as a winger."),
    ("FC Cartagena", "FC Cartagena is a football club based in Cartagena, in the autonomous community of Murcia."),
    ("Navarre", "Navarre is an autonomous community in northern Spain bordering France."),
    ("Ginger Baker", "Ginger Baker was an English drummer, co-founder of the rock band Cream."),
    ("Seattle Sounders FC", "Seattle Sounders FC is an American professional soccer club based in Seattle."),
)
QUESTION = "Hugo Rodriguez Romero plays for a team in the autonomous community of what?"


def test_embedders_basic() -> None:
    fake = FakeEmbedder(dim=32)
    v = fake.embed(["hello world", "hello world", ""])
    assert v.shape == (3, 32) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.allclose(v[0], v[1])
    assert fake.embed([]).shape == (0, 32)
    assert isinstance(resolve_embedder("fake"), FakeEmbedder)
    assert resolve_embedder("fake:16").dim == 16
    assert resolve_embedder(fake) is fake
    with pytest.raises(ConfigError, match="Unknown embedder 'nope'; known: minilm, e5, minilm-torch, fake"):
        resolve_embedder("nope")


def test_cached_embedder_lru_and_seed() -> None:
    inner = FakeEmbedder(dim=8)
    cached = CachedEmbedder(inner, max_items=2, seed={"seeded text": np.ones(8)})
    out = cached.embed(["seeded text"])
    assert np.allclose(out[0], np.ones(8) / np.sqrt(8))
    assert inner.calls == 0
    cached.embed(["a", "b", "a"])
    assert inner.calls == 1 and len(cached) == 2  # "seeded text" evicted (LRU, size 2)
    cached.embed(["a"])
    assert inner.calls == 1
    cached.seed([(text_key("z"), np.arange(8.0))], keys_are_hashes=True)
    assert np.allclose(cached.embed(["z"])[0], np.arange(8.0) / np.linalg.norm(np.arange(8.0)))
    with pytest.raises(ValueError):
        cached.seed([("bad", np.ones(3))])


def test_passages_split_long_text() -> None:
    text = " ".join(f"Sentence number {i} has some words in it." for i in range(200))
    ps = sm.passages("Title", text)
    assert len(ps) > 5
    assert all(p.startswith("Title\n") for p in ps)
    assert all(len(p.split()) <= sm.PASSAGE_WORDS + 1 for p in ps)
    one_huge_word_run = "word " * 5000
    assert len(sm.passages("", one_huge_word_run)) <= sm.MAX_PASSAGES
    assert sm.passages("", "") == [""]


def test_bm25_prefers_matching_doc() -> None:
    docs = [["apple", "pie"], ["car", "engine"], ["apple", "apple", "tree"]]
    s = bm25_matrix([["apple"]], docs)[0]
    assert s[1] == 0 and s[0] > 0 and s[2] > 0


def test_score_shapes_ranges_and_reasons(scorer: SetwiseScorer) -> None:
    res = scorer.score(QUESTION, BRIDGE)
    n = len(BRIDGE)
    assert len(res.probs) == len(res.grades) == len(res.reasons) == n
    assert all(0.0 <= p <= 1.0 for p in res.probs)
    assert all(g in (1, 2, 3, 4, 5) for g in res.grades)
    assert all(isinstance(r, str) and r for r in res.reasons)
    assert res.expected_needed == pytest.approx(sum(res.probs), abs=1e-3)
    # the chunk named in the question is the most likely one
    assert int(np.argmax(res.probs)) == 0
    # grades are monotone in probability, coverage in [0, 1], top chunk is grade 5
    order = np.argsort(res.probs)
    assert list(np.array(res.grades)[order]) == sorted(res.grades)
    assert all(0.0 <= c <= 1.0 for c in res.coverage)
    assert res.grades[int(np.argmax(res.probs))] == 5


def test_bridge_is_lifted_by_link(scorer: SetwiseScorer) -> None:
    res = scorer.score(QUESTION, BRIDGE)
    # FC Cartagena is named by the top chunk: it must rank above the unrelated drummer and soccer club
    assert res.probs[1] > res.probs[3]
    assert res.probs[1] > res.probs[4]


def test_deterministic(scorer: SetwiseScorer) -> None:
    a = scorer.score(QUESTION, BRIDGE)
    b = SetwiseScorer(embedder=FakeEmbedder(dim=64)).score(QUESTION, BRIDGE)
    assert a == b


@pytest.mark.parametrize(
    "items",
    [
        [],
        _items(("Only", "A single chunk about something.")),
        _items(("", ""), ("", "")),
        _items(("Same", "Identical text."), ("Same", "Identical text."), ("Other", "Different.")),
        _items(("", "no title here at all"), ("", "another untitled chunk")),
        _items(("Long", "word " * 20000), ("Short", "short text")),
        _items(("東京", "東京は日本の首都です。人口は多い。"), ("Berlin", "Berlin ist die Hauptstadt Deutschlands.")),
    ],
)
def test_edge_cases(scorer: SetwiseScorer, items: list[SetwiseItem]) -> None:
    res = scorer.score("What is the capital?", items)
    assert len(res.probs) == len(items)
    assert all(g in (1, 2, 3, 4, 5) for g in res.grades)
    assert all(np.isfinite(res.probs))
    assert np.isfinite(res.expected_needed)
    if len(items) > 1 and items[0] == items[1]:
        assert res.probs[0] == res.probs[1]
        assert res.grades[0] == res.grades[1]


def test_empty_question(scorer: SetwiseScorer) -> None:
    res = scorer.score("", BRIDGE)
    assert len(res.grades) == len(BRIDGE)


def test_grade_of_and_cuts() -> None:
    cuts = (0.9, 0.8, 0.5, 0.25)
    assert [sm.grade_of(c, cuts) for c in (0.0, 0.3, 0.6, 0.85, 0.95)] == [5, 4, 3, 2, 1]
    model = sm.load_model()
    assert list(model.cuts) == sorted(model.cuts, reverse=True)
    assert model.coverage is not None
    assert len(model.stages) >= 1


def test_coverage_before_monotone_and_ties() -> None:
    probs = np.array([0.2, 0.9, 0.2, 0.05])
    cov = sm.coverage_before(probs, np.array([0.3, 0.2, 0.7, 0.99]))
    assert cov[1] == 0.0  # top chunk
    assert cov[0] == cov[2] == 0.3  # tie shares the first position's value; running max applied
    assert cov[3] == 0.7


def test_model_file_is_small_and_label_free() -> None:
    raw = sm.DEFAULT_MODEL_PATH.read_text(encoding="utf-8")
    assert len(raw) < 20_000_000  # the budget for the model file in the repository
    d = json.loads(raw)
    assert d["version"] == sm.MODEL_VERSION
    for stage in d["stages"]:
        assert stage["kind"] == "trees" and stage["trees"]
        for tree in stage["trees"]:
            assert len({len(tree[k]) for k in ("f", "t", "l", "r", "m", "v")}) == 1
    assert '"required"' not in raw and '"answers"' not in raw


def test_bad_model_version(tmp_path: object) -> None:
    with pytest.raises(ValueError):
        sm.SetwiseModel.from_json({"version": 999, "cuts": [0.1, 0.2, 0.3, 0.4], "stages": []})
