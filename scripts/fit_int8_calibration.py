#!/usr/bin/env python3
"""Measure what the int8 MiniLM encoder's smoothing reads: each quantised product's largest input per channel.

Usage::

    python3 scripts/fit_int8_calibration.py [--train ../shared/train] [--texts 256] [--seed 1]
        [--out src/admit/modelfiles/minilm_int8_calibration.json]

Runs the float32 onnxruntime graph (``admit.backends.embedders._onnx_bert.build_model``) over ``--texts`` texts that
the ``setwise`` scorer encodes (questions and passages of the training folder's records, a fixed shuffle; no label
is read) and writes, per smoothed product (:data:`~admit.backends.embedders._onnx_bert.SMOOTHED`), the largest
absolute input of each channel, with the weights' SHA-256 that they belong to. The int8 graph divides those
inputs by ``s = absmax ** alpha / weight_absmax ** (1 - alpha)`` per channel and multiplies the weights' rows
by ``s`` (SmoothQuant), so the 8-bit activations lose less to the few channels that are far larger than the rest.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

from fitlib.data import TRAIN, read_folder
from fitlib.vectors import setwise_texts


def main(argv: list[str] | None = None) -> int:
    from admit.backends.embedders import _onnx_bert as ob
    from admit.backends.embedders._bert import read_safetensors
    from admit.backends.embedders.minilm import model_dir
    from admit.modelfiles import path as model_file

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=TRAIN)
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(model_file(ob.CALIBRATION_FILE)))
    a = ap.parse_args(argv)
    rows = read_folder(Path(a.train))
    if not rows:
        print(f"no *.jsonl(.gz) file in {a.train}", file=sys.stderr)
        return 2
    texts = sorted({t for name in sorted(rows) if name != "docs_policyqa" for t in setwise_texts(rows[name])})
    random.Random(a.seed).shuffle(texts)
    texts = texts[: a.texts]
    folder = model_dir()
    config = json.loads((folder / "config.json").read_text("utf-8"))
    absmax = ob.calibrate(read_safetensors(folder / "model.safetensors"), config, folder / "tokenizer.json", texts)
    out = {
        "weights_sha256": ob.weights_digest(folder / "model.safetensors"),
        "texts": len(texts),
        "source": f"setwise texts of {Path(a.train).name} (seed {a.seed})",
        "absmax": {k: [float(f"{x:.4g}") for x in v] for k, v in absmax.items()},
    }
    Path(a.out).write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    big = {k: round(float(np.max(v)), 1) for k, v in absmax.items()}
    print(f"wrote {a.out}: {len(texts)} texts; largest input per product {big}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
