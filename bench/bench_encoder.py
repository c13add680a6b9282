"""MiniLM encoders side by side: numpy, onnxruntime float32, onnxruntime int8 and sentence-transformers (torch).

Same texts, same threads, same run. Speed: texts/s on documentation-length texts (the candidate passages of
``../shared/data/rhdh_docs.jsonl``, cut at 256 word pieces as the model does) and on short ones (its questions),
each encoder ``--repeat`` times in turn (round-robin, so a burst of load on the shared machine hits every encoder),
the best round reported, per wall second and per CPU second of the process (every thread: what the encoder
costs, steadier than wall time when other processes share the cores). Ratios to numpy are what to compare across
runs; absolute figures move with the load (printed before and after).

Parity against the numpy float32 encoder: cosine of every text's vector, and retrieval on the same file: each
question's 10 candidates ranked by cosine, retained recall (all required candidates kept) at top-N, R@68 (retained
recall at 68% chunk compression, interpolated between top-3 and top-4 of 10), top-1 agreement and the mean
Spearman correlation of the rankings.

    nice -n 0 python bench/bench_encoder.py [--threads 2] [--repeat 3] [--docs 64] [--short 242] [--no-torch]
        [--no-parity]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "rhdh_docs.jsonl"


def _load(path: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    passages = sorted({c["text"] for r in rows for c in r["candidates"]})
    questions = [r["question"] for r in rows]
    return rows, passages, questions


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(-a)), np.argsort(np.argsort(-b))
    n = len(a)
    return float(1 - 6 * np.sum((ra - rb) ** 2) / (n * (n * n - 1)))


def _retrieval(rows: list[dict[str, Any]], vec: Callable[[str], np.ndarray], qvec: np.ndarray) -> dict[str, Any]:
    from admit.eval.metrics import recall_at

    kept_at: dict[int, int] = {}
    scores = []
    for qi, r in enumerate(rows):
        cands = r["candidates"]
        s = np.array([float(vec(c["text"]) @ qvec[qi]) for c in cands])
        scores.append(s)
        order = [cands[i]["id"] for i in np.argsort(-s, kind="stable")]
        need = set(r["required"])
        for n in range(len(cands) + 1):
            kept_at[n] = kept_at.get(n, 0) + int(need <= set(order[:n]))
    k = len(rows[0]["candidates"])
    points = [(1 - n / k, kept_at[n] / len(rows)) for n in range(k + 1)]
    return {"r68": recall_at(points, 0.68), "top3": kept_at[3] / len(rows), "scores": scores}


def _rates(
    encoders: dict[str, Any], sets: dict[str, list[str]], repeat: int
) -> dict[tuple[str, str], tuple[float, float]]:
    """Best texts per wall second and best texts per CPU second (every thread of this process) of each."""
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for _ in range(repeat):
        for set_name, texts in sets.items():
            for name, emb in encoders.items():
                t0, c0 = time.perf_counter(), time.process_time()
                emb.embed(texts)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                old = best.get((name, set_name), (0.0, 0.0))
                best[(name, set_name)] = (max(old[0], len(texts) / wall), max(old[1], len(texts) / max(cpu, 1e-9)))
    return best


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--docs", type=int, default=64, help="documentation-length texts per speed round")
    ap.add_argument("--short", type=int, default=242, help="short texts per speed round")
    ap.add_argument("--no-torch", action="store_true", help="leave sentence-transformers out")
    ap.add_argument("--no-parity", action="store_true", help="speed only")
    a = ap.parse_args(argv)

    from admit.backends.embedders.minilm import MiniLMEmbedder

    rows, passages, questions = _load(a.data)
    print(
        f"{len(rows)} questions, {len(passages)} passages from {a.data}; threads {a.threads}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    encoders: dict[str, Any] = {}
    for enc in ("numpy", "onnx-fp32", "onnx-int8"):
        t0 = time.perf_counter()
        e = MiniLMEmbedder(threads=a.threads, encoder=enc)
        e.warm_up()
        e.embed(["warm up"])
        print(f"  {enc:22s} loaded in {time.perf_counter() - t0:.2f} s (backend {e.backend})")
        encoders[enc] = e
    if not a.no_torch:
        from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

        t0 = time.perf_counter()
        st = MiniLMTorchEmbedder(threads=a.threads)
        st.embed(["warm up"])
        print(f"  {'sentence-transformers':22s} loaded in {time.perf_counter() - t0:.2f} s")
        encoders["sentence-transformers"] = st

    sets = {"docs": passages[: a.docs], "short": questions[: a.short]}
    tok = encoders["numpy"]._tokenizer
    for set_name, texts in sets.items():
        lens = [len(x.ids) for x in tok.encode_batch(texts)]
        print(f"  {set_name}: {len(texts)} texts, {np.mean(lens):.0f} word pieces on average")
    rates = _rates(encoders, sets, a.repeat)
    for k, what in ((0, "texts per wall second"), (1, "texts per CPU second, all threads: steadier under load")):
        print(f"\nSpeed ({what}; best of {a.repeat}; ratio to numpy):")
        print(f"{'encoder':24s} {'docs':>8s} {'x':>6s} {'short':>8s} {'x':>6s}")
        nd, ns = rates[("numpy", "docs")][k], rates[("numpy", "short")][k]
        for name in encoders:
            d, s = rates[(name, "docs")][k], rates[(name, "short")][k]
            print(f"{name:24s} {d:8.1f} {d / nd:6.2f} {s:8.1f} {s / ns:6.2f}")
    print(f"load average after the speed rounds: {os.getloadavg()[0]:.2f}")
    if a.no_parity:
        return

    print("\nParity with numpy float32 (all passages and questions):")
    texts = passages + questions
    ref = encoders["numpy"].embed(texts)
    ref_idx = {t: i for i, t in enumerate(passages)}
    base = _retrieval(rows, lambda t: ref[ref_idx[t]], ref[len(passages) :])
    print(f"{'encoder':24s} {'cos min':>8s} {'cos mean':>8s} {'R@68':>7s} {'top-3':>7s} {'top-1 =':>8s} {'rho':>6s}")
    print(f"{'numpy':24s} {1.0:8.4f} {1.0:8.4f} {base['r68']:7.3f} {base['top3']:7.3f} {1.0:8.3f} {1.0:6.3f}")
    for name, emb in encoders.items():
        if name == "numpy":
            continue
        vecs = emb.embed(texts)
        cos = (vecs * ref).sum(axis=1)
        got = _retrieval(rows, lambda t, v=vecs: v[ref_idx[t]], vecs[len(passages) :])
        top1 = np.mean([np.argmax(x) == np.argmax(y) for x, y in zip(got["scores"], base["scores"], strict=True)])
        rho = np.mean([_spearman(x, y) for x, y in zip(got["scores"], base["scores"], strict=True)])
        print(
            f"{name:24s} {cos.min():8.4f} {cos.mean():8.4f} {got['r68']:7.3f} {got['top3']:7.3f} {top1:8.3f} {rho:6.3f}"
        )


if __name__ == "__main__":
    main()
