"""``scripts/fitlib``, the fit scripts' library: typed arguments, the list reader, the R@68 curves."""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from admit.eval.metrics import recall_at

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
try:
    from fitlib.args import FitArgs, arg
    from fitlib.cross_train import CrossArgs
    from fitlib.curves import keep_figures, r_at, topn_curve
    from fitlib.data import family, labels, read_folder
    from fitlib.setwise_data import augment
finally:
    sys.path.remove(str(ROOT / "scripts"))


@dataclass(frozen=True, kw_only=True)
class _Args(FitArgs):
    model: str = arg(required=True)
    per_file: int = arg(300, help="lists per file")
    lr: float = arg(5e-5)
    restart: bool = arg(False)
    layers: list[int] | None = arg(None)
    ship: str = arg("train+valid", choices=("train+valid", "train"))


def test_fit_args_are_their_command_line() -> None:
    a = _Args.parse(["--model", "m.npz", "--per-file", "7", "--restart", "--layers", "4", "--layers", "5"])
    assert a == _Args(model="m.npz", per_file=7, lr=5e-5, restart=True, layers=[4, 5], ship="train+valid")
    assert list(a.as_dict()) == ["model", "per_file", "lr", "restart", "layers", "ship"]  # flag order
    defaults = _Args.parse(["--model", "x"])
    assert (defaults.per_file, defaults.restart, defaults.layers) == (300, False, None)
    assert "lists per file" in _Args.parser().format_help()
    with pytest.raises(SystemExit):
        _Args.parse([])  # --model is required
    with pytest.raises(SystemExit):
        _Args.parse(["--model", "x", "--ship", "valid"])  # not a choice


def test_the_cross_fit_keeps_its_flags_and_log_order() -> None:
    a = CrossArgs.parse(["--per-file", "0", "--self-supervised", "--cache-layers", "5"])
    assert a.per_file == 0 and a.self_supervised and a.cache_layers == [5] and a.layers is None
    assert a.exclude == "docs_policyqa,docs2_evidence_inference" and a.device == "auto"
    names = list(a.as_dict())
    assert names[:4] == ["train", "valid", "cache_dir", "layers"] and names[-1] == "results"
    assert a.lists().per_file == 0 and a.lists().seed == a.seed


def test_one_reader_for_plain_and_gzipped_list_files(tmp_path: Path) -> None:
    rec = {"id": "q1", "question": "?", "candidates": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "required": ["b"]}
    (tmp_path / "musique.jsonl").write_text(json.dumps(rec) + "\n\n", encoding="utf-8")
    with gzip.open(tmp_path / "train_musique.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({**rec, "id": "q2"}) + "\n")
    (tmp_path / "notes.txt").write_text("not a list file")
    got = read_folder(tmp_path)
    assert list(got) == ["musique", "train_musique"]
    assert [r["id"] for rows in got.values() for r in rows] == ["q1", "q2"]
    assert labels(rec).tolist() == [0.0, 1.0, 0.0]
    assert (family("train_musique"), family("devsplit_hotpotqa_fullwiki"), family("docs_policyqa")) == (
        "musique",
        "hotpotqa_fullwiki",
        "policyqa",
    )


def test_topn_curve_and_r68_by_hand() -> None:
    ys = [np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0, 0.0])]
    scores = [np.array([0.9, 0.1, 0.2, 0.3]), np.array([0.5, 0.4, 0.3, 0.2])]  # gold ranked 1st and 3rd
    curve = topn_curve(ys, scores)
    assert curve == [(0.0, 1.0), (0.75, 0.5), (0.5, 0.5), (0.25, 1.0), (0.0, 1.0)]
    assert keep_figures(ys, [np.array([True, False, False, False]), np.ones(4, bool)]) == (1.0, 0.375)
    # R@68 between (0.5, 0.5) and (0.75, 0.5): 0.5; the evaluation's recall_at on the same points
    assert r_at(curve) == recall_at(curve, 0.68) == pytest.approx(0.5)
    assert r_at(curve, 0.8) == 0.0  # nothing compresses that much


def test_augmented_lists_come_from_the_training_records_only() -> None:
    cands = [{"id": f"c{i}", "title": f"T{i}", "text": "x"} for i in range(14)]
    mus = {
        "id": "m1",
        "question": "Who founded the company that made X?",
        "candidates": cands,
        "required": ["c0", "c1"],
        "meta": {
            "decomposition": [
                {"question": "Who made X?", "answer": "Acme", "support": "c0"},
                {"question": "Who founded #1?", "answer": "Bob", "support": "c1"},
            ]
        },
    }
    out = augment({"train_musique": [mus]}, seed=1)
    subs = out["aug_single_musique"]
    assert [s["question"] for s in subs] == ["Who made X?", "Who founded Acme?"]
    assert [s["required"] for s in subs] == [["c0"], ["c1"]]
    rs = out["aug_resample_musique"]
    assert len(rs) == 2 and all(len(r["candidates"]) == 10 for r in rs)
    assert all({"c0", "c1"} <= {c["id"] for c in r["candidates"]} for r in rs)  # the gold kept
    assert augment({"train_musique": [mus]}, seed=1) == out  # seeded


def test_the_answerability_fit_reads_extra_features_when_asked() -> None:
    """``fit_answerability.py --setwise-extra best_prob_share``: the setwise model reads it besides its own."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from fitlib.answerability import fit_model
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from admit.answerability import FEATURES

    rng = np.random.default_rng(3)
    names = (*FEATURES["setwise"], "best_prob_share")
    rows = []
    for i in range(200):
        label = 2 if i % 2 else 0
        f = {n: float(rng.random()) for n in names}
        f["best_prob_share"] = 0.8 + 0.2 * rng.random() if label else 0.6 * rng.random()  # it alone separates
        rows.append((f, label))
    lim = {"max_false_alarm": 0.05, "max_family_false_alarm": 1.0, "max_unsure": 0.15}
    plain = fit_model("setwise", {"x": rows}, ["x"], **lim)
    more = fit_model("setwise", {"x": rows}, ["x"], **lim, extra=("best_prob_share",))
    assert "best_prob_share" not in plain.features
    assert more.features == names
    assert more.coef[-1] > 1.0  # the separating feature carries the fit


def test_the_setwise_fit_encodes_with_the_encoder_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fit_setwise.py --encoder onnx-int8`` fills its vector cache with the int8 encoder (a fit on the vectors
    int8 gives), under the int8 vectors' name; the default stays ``auto``."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from fitlib import vectors
        from fitlib.setwise import SetwiseArgs, out_path
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from admit.backends.embedders import minilm
    from admit.prune.setwise_model import DEFAULT_MODEL_PATH

    assert SetwiseArgs.parse([]).encoder == "auto"
    # a fit on int8 vectors writes its own file unless told: the float32 trees are never replaced unasked
    assert out_path(SetwiseArgs.parse([])) == DEFAULT_MODEL_PATH
    assert out_path(SetwiseArgs.parse(["--encoder", "onnx-int8"])) == DEFAULT_MODEL_PATH.with_name("setwise_int8.json")
    assert (
        out_path(SetwiseArgs.parse(["--encoder", "onnx-int8", "--out", str(tmp_path / "m.json")]))
        == tmp_path / "m.json"
    )
    assert SetwiseArgs.parse(["--encoder", "onnx-int8"]).encoder == "onnx-int8"
    with pytest.raises(SystemExit):
        SetwiseArgs.parse(["--encoder", "cuda"])
    made: list[str | None] = []

    class _Fake:
        def __init__(self, batch_size: int, encoder: str | None = None) -> None:
            made.append(encoder)

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 384), dtype=np.float32)

    monkeypatch.setattr(minilm, "MiniLMEmbedder", _Fake)
    vc = vectors.VectorCache(tmp_path / "vecs.npz", "onnx-int8")
    assert vc.name == minilm.INT8_NAME and vectors.VectorCache(tmp_path / "other.npz").name == minilm.FP32_NAME
    assert vc.embed(["a question", "a passage"]).shape == (2, 384)
    assert made == ["onnx-int8"]
    # left to auto, the fit's vectors are float32 ones, named so, whatever the library's auto takes
    fp32 = vectors.VectorCache(tmp_path / "fp32.npz")
    assert fp32.encoder in ("onnx-fp32", "numpy") and fp32.name == minilm.FP32_NAME
    fp32.embed(["a question"])
    assert made[-1] in ("onnx-fp32", "numpy")
    vc.save()  # (a fill of fewer than 64 texts is saved by the caller)
    assert (tmp_path / "vecs.npz").exists()


def test_the_answerability_cases_carry_the_sentence_readers_features_when_asked() -> None:
    """``fit_answerability.py --reader`` (or a reader feature in ``--setwise-extra``): every setwise case holds
    ``sent_dense`` ... read with the scorer's embedder; without it, none does."""
    import random

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from fitlib.answerability import cases
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from admit.answerability.reader import READER
    from admit.prune import setwise_model as sm

    class Hashing:
        name, dim = "hashing", 384

        def embed(self, texts: list[str]) -> np.ndarray:
            out = np.zeros((len(texts), 384), dtype=np.float32)
            for i, t in enumerate(texts):
                for w in t.lower().split():
                    out[i, hash(w) % 384] += 1.0
            return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    cands = [
        {"id": f"c{i}", "title": f"Town {i}", "text": f"Town {i} lies on river {i}. It has a mill."} for i in range(6)
    ]
    row = {"question": "Which river does Town 0 lie on?", "candidates": cands, "required": ["c0"]}
    scorer = sm.SetwiseScorer(embedder=Hashing(), cross=False, multilingual=False)
    with_reader = cases(row, scorer, random.Random(1), reader=True)
    plain = cases(row, scorer, random.Random(1))
    assert with_reader and all(set(READER) <= set(fs) for _, fs, _, _ in with_reader if fs is not None)
    assert not any(set(READER) & set(fs) for _, fs, _, _ in plain if fs is not None)
