#!/usr/bin/env python3
"""Score the ``setwise`` pruner's grades on labelled data, as ``admit prune`` output is scored.

Usage::

    python3 scripts/score_setwise.py [DATA_DIR] [--vectors /tmp/setwise_cache/vecs.npz] [--json OUT]
        [--encoder numpy|onnx-fp32|onnx-int8 | --recipe RECIPE] [--save-vectors OUT.npz] [--model FILE]

For every record of every ``*.jsonl(.gz)`` file in ``DATA_DIR`` (default ``../shared/data``) the pruner grades
the candidates (through :class:`admit.prune.setwise.SetwisePruner`, the class ``admit prune`` runs); the script
prints, per file, retained recall / chunk compression at grade thresholds 2-5 and R@68: retained recall at 68%
chunk compression, interpolated along the grade thresholds (1 = keep all). Labels are read for scoring only.

It uses only the pruner's public API, so it also scores an older checkout of admit (``PYTHONPATH=OLD/src``): the
README's "previous model" column comes from running it on the commit before the refit. ``--vectors`` seeds the
embedding cache with vectors computed earlier (``scripts/fit_setwise.py`` writes them), so no chunk is encoded twice.
``--model`` grades with the trees of another model file (a train-only fit: ``fit_setwise.py --train-only-out``)
instead of the shipped file for the vectors' kind.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from admit.backends.embedders.base import CachedEmbedder, text_key
from admit.prune import PruneSettings
from admit.prune.setwise import SetwisePruner
from admit.types import Chunk, Scored
from fitlib.curves import r_at
from fitlib.data import VALID, read_file


class _Recording:
    """An embedder that keeps every vector it computes by text key (for ``--save-vectors``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.vecs: dict[str, np.ndarray] = {}
        self.computed = 0

    def embed(self, texts: Any) -> np.ndarray:
        out: np.ndarray = self.inner.embed(texts)
        self.vecs.update(zip((text_key(t) for t in texts), out, strict=True))
        self.computed += len(texts)
        return out


def scored_candidates(row: dict[str, Any]) -> list[Scored]:
    """A labelled list's candidates as the pruner takes them: in the list's order, no retriever score."""
    return [
        Scored(
            chunk=Chunk(
                id=c["id"],
                source_id=c.get("source_id") or c["id"],
                title=c.get("title") or "",
                text=c.get("text") or "",
            ),
            score=0.0,
            rank=i,
        )
        for i, c in enumerate(row["candidates"])
    ]


def _use_recipe(model: Any, recipe: str) -> None:
    """Run ``model`` (loaded here) on the session of ``recipe`` (``bench/bench_int8_recipes.py``)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from bench_int8_recipes import _model

    from admit.backends.embedders._bert import read_safetensors
    from admit.backends.embedders._onnx_bert import build_model, make_session
    from admit.backends.embedders.minilm import model_dir

    folder = model_dir()
    config = json.loads((folder / "config.json").read_text("utf-8"))
    model.warm_up()
    fp32 = build_model(read_safetensors(folder / "model.safetensors"), config)
    model._session = make_session(_model(recipe, fp32, int(config["num_hidden_layers"])), model.threads)
    model.backend = recipe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir", nargs="?", default=VALID)
    ap.add_argument("--vectors", default=None, help=".npz of (keys, vecs) MiniLM vectors keyed by SHA-1 of the text")
    ap.add_argument("--json", dest="json_out", default=None)
    ap.add_argument("--encoder", default=None, help="the MiniLM encoder (numpy, onnx-fp32, onnx-int8; default auto)")
    ap.add_argument("--save-vectors", default=None, help="write every vector used (seeded or computed) to this .npz")
    ap.add_argument("--recipe", default=None, help="a recipe of bench/bench_int8_recipes.py, not --encoder")
    ap.add_argument("--model", default=None, help="the setwise model file (default: the shipped one for the vectors)")
    args = ap.parse_args(argv)
    from admit.backends.embedders.minilm import MiniLMEmbedder

    model = MiniLMEmbedder(encoder="onnx-fp32" if args.recipe else args.encoder)
    if args.recipe:
        _use_recipe(model, args.recipe)
    inner = _Recording(model)
    emb = CachedEmbedder(inner, max_items=2_000_000)
    if args.vectors and Path(args.vectors).exists():
        z = np.load(args.vectors)
        inner.vecs.update(zip(z["keys"].tolist(), z["vecs"], strict=True))
        emb.seed(zip(z["keys"].tolist(), z["vecs"], strict=True), keys_are_hashes=True)
    pruner = SetwisePruner(embedder=emb, model_path=args.model)
    settings = PruneSettings(strategy="setwise", threshold=1, keep_top_k=0)
    out: dict[str, Any] = {}
    for path in sorted(Path(args.data_dir).glob("*.jsonl*")):
        rows = read_file(path)
        t0 = time.perf_counter()
        kept_at: dict[int, list[bool]] = {t: [] for t in range(1, 6)}
        n_keep = dict.fromkeys(range(1, 6), 0)
        n_all = 0
        for r in rows:
            cands = scored_candidates(r)
            grades = {g.chunk_id: g.grade for g in pruner.prune(r["question"], cands, settings).graded}
            req = set(r["required"])
            n_all += len(cands)
            for t in range(1, 6):
                kept = {cid for cid, g in grades.items() if g >= t}
                kept_at[t].append(req <= kept)
                n_keep[t] += len(kept)
        pts = {t: (1.0 - n_keep[t] / n_all, float(np.mean(kept_at[t]))) for t in range(1, 6)}
        name = path.name.split(".jsonl")[0]
        out[name] = {
            "questions": len(rows),
            "R@68": round(r_at(list(pts.values())), 4),
            **{f"thr{t}": {"compression": round(c, 4), "recall": round(r, 4)} for t, (c, r) in pts.items()},
            "seconds": round(time.perf_counter() - t0, 1),
        }
        cells = "  ".join(f"thr{t} {r:.3f}/{c:.3f}" for t, (c, r) in pts.items() if t > 1)
        print(f"{name:24s} R@68 {out[name]['R@68']:.3f}   recall/compression: {cells}", flush=True)
    if args.save_vectors and inner.vecs:
        np.savez(args.save_vectors, keys=np.array(list(inner.vecs)), vecs=np.stack(list(inner.vecs.values())))
    print(f"encoder {inner.inner.backend or args.encoder}: {inner.computed} texts encoded", flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
