"""MiniLM in numpy against sentence-transformers (torch), in the same run: load time, texts/s, agreement.

Texts are the chunks ``admit ingest`` cuts from the RHDH guides (``../shared/data/rhdh_docs_raw``; the sample
docs in ``examples/docs`` when that folder is missing), the first ``--texts``. Each side embeds the same list
with 1 thread and with ``--threads``; the numpy side first, so its load time does not include torch's import.
The load average is printed: on a shared machine the two-thread figures suffer most.

    python bench/bench_embed.py [--texts 256] [--threads 2] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RHDH = ROOT.parent / "shared" / "data" / "rhdh_docs_raw"


def _texts(n: int) -> tuple[list[str], str]:
    from admit.backends.tokenizers import resolve_tokenizer
    from admit.kb.ingest import chunk_document, parse_document

    folder = RHDH if RHDH.is_dir() else ROOT / "examples" / "docs"
    tok = resolve_tokenizer("cl100k_base")
    out: list[str] = []
    for f in sorted(folder.glob("*.md")):
        doc = parse_document(f.read_text("utf-8"), "markdown", fallback_title=f.stem)
        out.extend(f"{doc.title}\n{p.text}" for p in chunk_document(doc, tokenizer=tok, max_tokens=350))
        if len(out) >= n:
            break
    return out[:n], str(folder)


def _rate(emb: object, texts: list[str]) -> float:
    t0 = time.perf_counter()
    emb.embed(texts)  # type: ignore[attr-defined]
    return len(texts) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    a = ap.parse_args()
    texts, origin = _texts(a.texts)
    print(f"{len(texts)} chunks from {origin}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    t0 = time.perf_counter()
    from admit.backends.embedders.minilm import MiniLMEmbedder

    ours = MiniLMEmbedder(threads=1, batch_size=a.batch_size)
    ours.embed(["warm up"])
    load_np = time.perf_counter() - t0
    lengths = [len(e.ids) for e in ours._tokenizer.encode_batch(texts)]
    print(f"word pieces per chunk: mean {np.mean(lengths):.0f}, max {max(lengths)} (truncated at 256)")
    rates_np = {}
    for th in sorted({1, a.threads}):
        ours.threads = th
        rates_np[th] = _rate(ours, texts)
    vec_np = ours.embed(texts)

    try:
        t0 = time.perf_counter()
        import torch

        from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

        ref = MiniLMTorchEmbedder(threads=1, batch_size=a.batch_size)
        ref.embed(["warm up"])
        load_st = time.perf_counter() - t0
    except ImportError as exc:
        print(
            f"numpy: load {load_np:.2f} s; " + ", ".join(f"{t} thread(s) {r:.1f} texts/s" for t, r in rates_np.items())
        )
        print(f"no baseline: {exc}")
        return
    rates_st = {}
    for th in sorted({1, a.threads}):
        torch.set_num_threads(th)
        rates_st[th] = _rate(ref, texts)
    vec_st = ref.embed(texts)
    cos = (vec_np * vec_st).sum(axis=1)
    print(
        f"numpy MiniLM:          load {load_np:5.2f} s; "
        + ", ".join(f"{t} thread(s) {r:6.1f} texts/s" for t, r in rates_np.items())
    )
    print(
        f"sentence-transformers: load {load_st:5.2f} s; "
        + ", ".join(f"{t} thread(s) {r:6.1f} texts/s" for t, r in rates_st.items())
    )
    print(f"agreement: min cosine {cos.min():.7f}, mean {cos.mean():.7f} over {len(texts)} chunks")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
