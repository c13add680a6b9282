"""The adapters' shared core, with fakes: settings checks, the steps around pruning, saving, copying."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from admit.adapters._core import AdmitFilter, Doc, as_score
from admit.adapters._vectors import seed_vectors
from admit.backends.embedders.base import CachedEmbedder
from admit.backends.embedders.fake import FakeEmbedder
from admit.errors import ConfigError
from admit.prune.fake import FakeGrader

DOCS = [Doc(id=f"d{i}", text=f"text number {i}") for i in range(4)]


def test_settings_are_checked_when_made_and_when_assigned() -> None:
    with pytest.raises(ConfigError, match="Unknown pruning strategy"):
        AdmitFilter(strategy="nope")
    f = AdmitFilter(strategy="top_n", params={"n": 1})
    with pytest.raises(ConfigError, match="threshold"):
        f.threshold = 0
    assert f.threshold == 3
    f.params = {"n": 2}
    assert len([v for v in f.run("q", DOCS).verdicts if v.kept]) == 2


def test_without_scores_the_input_order_ranks_and_with_scores_they_do() -> None:
    f = AdmitFilter(strategy="top_n", params={"n": 1}, keep_top_k=0)
    assert [v.kept for v in f.run("number 3", DOCS).verdicts] == [True, False, False, False]
    scored = [Doc(id=d.id, text=d.text, score=float(i)) for i, d in enumerate(DOCS)]
    assert [v.kept for v in f.run("q", scored).verdicts] == [False, False, False, True]
    assert as_score(np.float32(2.5)) == 2.5 and as_score(True) is None and as_score(float("nan")) is None


def test_size_cap_duplicates_top_k_and_budget_each_say_why() -> None:
    docs = [*DOCS, Doc(id="copy", text=DOCS[0].text), Doc(id="big", text="x " * 50)]
    f = AdmitFilter(strategy="top_n", params={"n": 10}, keep_top_k=0, max_doc_chars=60, max_tokens=8, top_k=3)
    run = f.run("q", docs)
    why = {docs[v.index].id: (v.stage, v.reason) for v in run.dropped}
    assert why["copy"] == ("duplicate", "duplicate_of d0 (exact duplicate)")
    assert why["big"][0] == "size"
    assert why["d3"][0] == "top_k"
    assert any(stage == "budget" for stage, _ in why.values())
    assert len(run.verdicts) == len(docs)


def test_to_dict_round_trip_and_an_unsaveable_pruner_fails_loudly() -> None:
    f = AdmitFilter(strategy="top_n", params={"n": 2}, top_k=4, embeddings="ignore")
    again = AdmitFilter.from_dict(f.to_dict())
    assert again.settings_dict() == f.settings_dict()
    with pytest.raises(ConfigError, match="cannot be saved"):
        AdmitFilter(pruner=FakeGrader()).to_dict()
    with pytest.raises(ConfigError, match="Unknown AdmitFilter setting"):
        AdmitFilter.from_dict({"treshold": 3})


def test_copies_share_the_pruner_built_and_pickles_rebuild_it() -> None:
    f = AdmitFilter(strategy="top_n", params={"n": 1})
    f.run("q", DOCS)
    built = f._built_pruner
    assert copy.deepcopy(f)._built_pruner is built
    g = pickle.loads(pickle.dumps(f))
    assert g._built_pruner is None and g.settings_dict() == f.settings_dict()
    assert [v.kept for v in g.run("q", DOCS).verdicts] == [v.kept for v in f.run("q", DOCS).verdicts]


def test_stored_vectors_are_seeded_only_when_one_matches_the_model() -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner)
    own = cached.embed([d.text for d in DOCS])
    cached._cache.clear()
    f = AdmitFilter(pruner_options={"embedder": cached})
    docs = [Doc(id=d.id, text=d.text, embedding=v.tolist()) for d, v in zip(DOCS, own, strict=True)]
    f._get_pruner()
    seed_vectors(f._embedder, f.embeddings, docs, [_chunk(d) for d in docs])
    assert len(cached) == 4  # one checked (encoded), three seeded
    cached._cache.clear()
    wrong = [Doc(id=d.id, text=d.text, embedding=(-v).tolist()) for d, v in zip(DOCS, own, strict=True)]
    seed_vectors(f._embedder, f.embeddings, wrong, [_chunk(d) for d in wrong])
    assert len(cached) == 1  # only the check: the vectors are another model's


def _chunk(d: Doc):  # type: ignore[no-untyped-def]
    from admit.types import Chunk

    return Chunk(id=d.id or "x", source_id=d.id or "x", text=d.text, title=d.title)
