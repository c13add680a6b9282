"""setwise reads the trees fitted on the vectors it is given: ``setwise_int8.json`` for the int8 encoder's
(``all-MiniLM-L6-v2-int8-sq``, the default encoder where onnxruntime is installed), ``setwise.json`` for float32
MiniLM's and any other embedder's (issue 48, item 1)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from admit.backends.embedders import CachedEmbedder
from admit.backends.embedders.base import FloatMatrix
from admit.backends.embedders.defaults import FP32_NAME, INT8_NAME
from admit.backends.embedders.fake import FakeEmbedder
from admit.prune import PruneSettings
from admit.prune.setwise import SetwisePruner
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.prune.setwise_model.model import DEFAULT_MODEL_PATH, INT8_MODEL_PATH, load_model, model_path_for
from admit.types import Chunk, Scored

ITEMS = [
    SetwiseItem(id="c0", title="Signing keys", text="Rotate the signing key with `admit keys rotate` every 90 days."),
    SetwiseItem(id="c1", title="Install", text="Install admit with pip; the MiniLM files come as a package."),
    SetwiseItem(id="c2", title="Keys", text="Old signing keys stay valid for verification for seven days."),
    SetwiseItem(id="c3", title="Logging", text="The service writes one JSON line per request to stderr."),
]
QUESTION = "How do I rotate the signing key?"


def _named(name: str, dim: int = 384) -> FakeEmbedder:
    emb = FakeEmbedder(dim=dim)
    emb.name = name
    return emb


def test_each_kind_of_vectors_has_its_shipped_trees() -> None:
    assert model_path_for(INT8_NAME) == INT8_MODEL_PATH != DEFAULT_MODEL_PATH
    for other in (FP32_NAME, "all-MiniLM-L6-v2-int8", "fake-64", None):
        assert model_path_for(other) == DEFAULT_MODEL_PATH
    raw = INT8_MODEL_PATH.read_text(encoding="utf-8")
    assert len(raw) < 20_000_000 and '"required"' not in raw and '"answers"' not in raw  # small and label-free
    int8, fp32 = json.loads(raw)["meta"], json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))["meta"]
    assert int8["embedder"] == INT8_NAME and fp32["embedder"] == FP32_NAME  # fitted on the vectors they read
    assert int8["trained_on"] == fp32["trained_on"]  # the same lists, only the vectors differ
    assert "docs_policyqa" in int8["never_fitted_on"]


def test_the_scorer_reads_the_trees_of_its_embedders_vectors() -> None:
    int8 = SetwiseScorer(embedder=_named(INT8_NAME), multilingual=False, cross=False)
    fp32 = SetwiseScorer(embedder=_named(FP32_NAME), multilingual=False, cross=False)
    assert int8.model is load_model(str(INT8_MODEL_PATH)) and int8.model.meta["embedder"] == INT8_NAME
    assert fp32.model is load_model(str(DEFAULT_MODEL_PATH)) and fp32.model.meta["embedder"] == FP32_NAME
    assert int8.model.cuts != fp32.model.cuts  # two fits, not one file read twice
    # the trees, not only the file name, differ: the same vectors read by each give other probabilities
    same = _named(INT8_NAME)
    p_int8 = SetwiseScorer(embedder=same, multilingual=False, cross=False).score(QUESTION, ITEMS).probs
    p_fp32 = (
        SetwiseScorer(embedder=same, model_path=DEFAULT_MODEL_PATH, multilingual=False, cross=False)
        .score(QUESTION, ITEMS)
        .probs
    )
    assert not np.allclose(p_int8, p_fp32)
    # a file given is read whatever the vectors
    given = SetwiseScorer(embedder=_named(INT8_NAME), model_path=DEFAULT_MODEL_PATH, multilingual=False, cross=False)
    assert given.model is load_model(str(DEFAULT_MODEL_PATH))


class _FallsBack:
    """An embedder whose name settles when it loads, as MiniLM's ``auto`` does: it says int8 until its first call,
    then runs (and says) float32, as when the onnx graph failed to build."""

    dim = 384

    def __init__(self) -> None:
        self.name = INT8_NAME
        self._inner = FakeEmbedder(dim=384)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.name = FP32_NAME
        return self._inner.embed(texts)


def test_the_trees_follow_the_vectors_an_embedder_gives_once_loaded_through_a_cache() -> None:
    inner = _FallsBack()
    cached = CachedEmbedder(inner)
    assert cached.name == INT8_NAME
    scorer = SetwiseScorer(embedder=cached, multilingual=False, cross=False)
    assert scorer.model.meta["embedder"] == INT8_NAME
    scorer.score(QUESTION, ITEMS)
    assert cached.name == FP32_NAME  # the cache says what its embedder says now, not what it said when made
    assert scorer.model.meta["embedder"] == FP32_NAME
    cached.name = "mine"  # a name set on the cache is its own
    assert cached.name == "mine" and inner.name == FP32_NAME


def test_the_pruner_grades_int8_vectors_with_the_int8_trees() -> None:
    """Through the class ``admit prune`` runs: the grades of int8-named vectors are the int8 trees' grades."""
    cands = [
        Scored(chunk=Chunk(id=it.id, source_id=it.id, title=it.title, text=it.text), score=0.0, rank=i)
        for i, it in enumerate(ITEMS)
    ]
    settings = PruneSettings(strategy="setwise", threshold=1, keep_top_k=0)
    emb = _named(INT8_NAME)
    by_pruner = [g.grade for g in SetwisePruner(embedder=emb).prune(QUESTION, cands, settings).graded]
    scorer = SetwiseScorer(embedder=emb, model_path=INT8_MODEL_PATH)
    assert by_pruner == list(scorer.score(QUESTION, ITEMS).grades)


@pytest.mark.parametrize("name", [INT8_NAME, FP32_NAME])
def test_the_pruners_identity_names_the_trees_it_reads(name: str) -> None:
    from admit.prune.catalogue import get_strategy
    from admit.prune.spec import PrunerResources, file_digest

    identity = get_strategy("setwise").identity
    assert identity is not None
    mine = identity(PrunerResources(embedder=_named(name), cross=False, multilingual=False))
    assert mine[0] == name and mine[1] == file_digest(model_path_for(name))
    other = identity(PrunerResources(embedder=_named(FP32_NAME if name == INT8_NAME else INT8_NAME)))
    assert mine[1] != other[1]
