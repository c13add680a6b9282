"""int8 recipes for MiniLM's onnxruntime graph side by side: speed and distance from the numpy float32 vectors.

Every recipe quantises the graph that ``admit.backends.embedders._onnx_bert.build_model`` builds; a recipe is
``WEIGHTS[-blocks:LAYERS]``: ``u8`` (unsigned weights, one scale per column: the recipe before issue 48), ``s8``
(signed weights, one scale per column: the VNNI kernels' fast path) or ``nb`` (every product in 8-bit blocks of
128 rows, ``MatMulNBits``); ``-blocks:down`` / ``-blocks:up+down`` put those feed-forward products in blocks
instead; a ``sq-`` prefix smooths the inputs of the attention and up-projections and of the attention output first
(SmoothQuant, from the shipped calibration: ``sq-s8-blocks:down`` is what ``onnx-int8`` ships; ``s8-blocks:down`` is
what it shipped before). The texts are the ones the ``setwise`` scorer encodes
for ``../shared/data`` (questions and passages, shuffled with a fixed seed); each recipe runs ``--repeat`` times
and the fastest round counts, in texts per CPU-second of this process, beside the numpy encoder from the same run.

    nice -n 5 python bench/bench_int8_recipes.py [--texts 150] [--threads 1]
        [--recipes numpy,fp32,u8,s8,s8-blocks:down,sq-s8,sq-s8-blocks:down,s8-blocks:up+down,nb]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _texts(n: int) -> list[str]:
    from fitlib.data import read_file
    from fitlib.vectors import setwise_texts

    texts: list[str] = []
    for p in sorted((ROOT.parent / "shared" / "data").glob("*.jsonl")):
        texts += sorted(set(setwise_texts(read_file(p))))
    random.Random(1).shuffle(texts)
    return texts[:n]


def _model(recipe: str, fp32: Any, layers: int) -> bytes:
    import onnx
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from admit.backends.embedders import _onnx_bert as ob

    if recipe == "fp32":
        return bytes(fp32.SerializeToString())
    weights, _, blocks = recipe.partition("-blocks:")
    if weights.startswith("sq-"):
        from admit.backends.embedders.minilm import model_dir

        absmax = ob.calibration(ob.weights_digest(model_dir() / "model.safetensors"))
        if absmax is None:
            raise SystemExit("the shipped int8 calibration is for other weights: run scripts/fit_int8_calibration.py")
        fp32 = copy.deepcopy(fp32)
        ob._smooth(fp32, absmax)
        weights = weights[3:]
    products = [n.name for n in fp32.graph.node if n.op_type == "MatMul"]
    if weights == "nb":
        m = copy.deepcopy(fp32)
        ob._blockwise(m, set(products))
        return bytes(m.SerializeToString())
    kinds = blocks.split("+") if blocks else []
    apart = [f"l{i}_{k}" for i in range(layers) for k in kinds]
    with tempfile.TemporaryDirectory() as tmp:
        quantize_dynamic(
            fp32,
            Path(tmp) / "m.onnx",
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=apart,
            per_channel=True,
            weight_type=QuantType.QInt8 if weights == "s8" else QuantType.QUInt8,
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        m = onnx.load(str(Path(tmp) / "m.onnx"))
    ob._blockwise(m, set(apart))
    return bytes(m.SerializeToString())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=150)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--recipes", default="numpy,fp32,u8,s8,s8-blocks:down,sq-s8,sq-s8-blocks:down,s8-blocks:up+down,nb")
    a = ap.parse_args(argv)
    from admit.backends.embedders._bert import read_safetensors
    from admit.backends.embedders._onnx_bert import build_model, make_session
    from admit.backends.embedders.minilm import MiniLMEmbedder, model_dir

    texts = _texts(a.texts)
    folder = model_dir()
    config = json.loads((folder / "config.json").read_text("utf-8"))
    fp32 = build_model(read_safetensors(folder / "model.safetensors"), config)
    print(f"{len(texts)} texts of ../shared/data; threads {a.threads}; load average {os.getloadavg()[0]:.1f}")
    ref: np.ndarray | None = None
    base = 0.0
    for recipe in a.recipes.split(","):
        emb = MiniLMEmbedder(threads=a.threads, encoder="numpy" if recipe == "numpy" else "onnx-fp32")
        emb.warm_up()
        if recipe != "numpy":
            emb._session = make_session(_model(recipe, fp32, int(config["num_hidden_layers"])), a.threads)
        emb.embed(texts[:4])
        best, out = float("inf"), None
        for _ in range(a.repeat):
            c0 = _cpu()
            out = emb.embed(texts)
            best = min(best, _cpu() - c0)
        assert out is not None
        rate = len(texts) / best
        if ref is None:
            ref, base = out, rate
        cos = (out * ref).sum(axis=1)
        print(
            f"{recipe:20s} {rate:7.1f} texts per CPU-s  {rate / base:5.2f}x {a.recipes.split(',')[0]}"
            f"  cosine to it: min {cos.min():.4f} mean {cos.mean():.5f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
