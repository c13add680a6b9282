"""``admit ingest`` throughput: chunks per CPU-second of one site, this tree beside another (``main``) in one run.

Each side is a fresh ``admit ingest SITE --kb NEW --json`` process (import, model load, parse, chunk, embed,
write: what a user pays), timed by its own CPU time (user + system, ``getrusage`` of the child), so the figure
holds on a machine other processes share; wall time is printed beside it. The sides run in turn, ``--repeat``
times, the best of each reported. This tree runs with each ``--encoder`` asked for (``auto``: onnxruntime when
installed; ``numpy``: the batching changes alone); the other tree (``--baseline-src``, e.g. a checkout of main)
runs as it is, and so does each ``--also-src`` tree (an older default, to keep a ratio's first baseline in
the same run); every ratio is against the baseline.

    nice -n 0 python bench/bench_ingest.py SITE [--baseline-src ../main/src] [--also-src OLD/src]
        [--encoders auto,numpy] [--threads 2] [--repeat 1]
    python bench/bench_ingest.py SITE --profile [--encoders onnx-int8] [--caps 512,4096]

``--profile`` (this tree, in this process, one thread) says where an ingest's time goes and what it encodes: the
texts handed to the encoder per chunk written (each chunk's first passage is its own vector; a chunk of several
passages adds the others), how many distinct, their word pieces, the padding share of the forward batches, and the
CPU seconds of encoding against the rest; with ``--caps``, the same texts encoded again at each cap on the padded
tokens of one onnxruntime batch (``minilm.ONNX_BATCH_TOKENS``), in turn, twice, the CPU seconds of each.

SITE: a built documentation site, e.g. /tmp/debdocs/python-black-doc/usr/share/doc/python-black-doc/html
(Debian's python-black-doc, 32 pages).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ingest(src: Path, site: str, threads: int, encoder: str | None) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and chunks written of one ingest into a new knowledge base."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("ADMIT_ENCODER", None)
    args = ["--embed-threads", str(threads)] + (["--encoder", encoder] if encoder else [])
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        cmd = [sys.executable, "-c", "from admit.cli import main; main()", *args, "ingest", site]
        cmd += ["--kb", str(Path(tmp) / "kb.sqlite"), "--access", "tenant:t", "--no-progress", "--json"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode not in (0, 1):  # 1: some file failed, reported; the rest is ingested
        raise SystemExit(f"ingest failed ({res.returncode}): {res.stderr[-2000:]}")
    rep = json.loads(res.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, int(rep["chunks_written"])


def _profile(site: str, encoder: str, caps: Sequence[int]) -> None:
    """What one ingest encodes and where its CPU time goes (see the module docstring)."""
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np

    import admit.backends.embedders.minilm as minilm
    from admit.kb.knowledge_base import KnowledgeBase

    emb = minilm.MiniLMEmbedder(threads=1, encoder=encoder)
    emb.warm_up()
    texts: list[str] = []
    batches: list[tuple[int, int, int]] = []  # texts, padded length, real tokens
    encode_cpu = [0.0]
    real_embed, real_pad = emb.embed_many, minilm._pad  # what ingest calls

    def embed(batch: Sequence[str]) -> object:
        texts.extend(batch)
        t = time.process_time()
        try:
            return real_embed(batch)
        finally:
            encode_cpu[0] += time.process_time() - t

    def pad(ids: object, lengths: Sequence[int], group: Sequence[int]) -> object:
        batches.append((len(group), lengths[group[0]], sum(lengths[i] for i in group)))
        return real_pad(ids, lengths, group)  # type: ignore[arg-type]

    emb.embed_many = embed  # type: ignore[method-assign]
    minilm._pad = pad  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        kb = KnowledgeBase(str(Path(tmp) / "kb.sqlite"), embedder=emb)
        t = time.process_time()
        rep = kb.ingest(site, tenant="t")
        total = time.process_time() - t
        kb.close()
    minilm._pad = real_pad
    lengths = [len(e.ids) for e in emb._tokenizer.encode_batch(texts)]
    padded = sum(n * length for n, length, _ in batches)
    real = sum(r for _, _, r in batches)
    n = rep.chunks_written
    print(f"{site}; --encoder {emb.backend}; one thread; load average {os.getloadavg()[0]:.2f}")
    print(f"chunks written {n}; texts encoded {len(texts)} ({len(texts) / max(n, 1):.2f} a chunk), "
          f"distinct {len(set(texts))}; word pieces a text: mean {np.mean(lengths):.0f}, "
          f"median {np.median(lengths):.0f}, {sum(x >= emb.max_seq_length for x in lengths)} cut at "
          f"{emb.max_seq_length}")  # fmt: skip
    print(f"forward batches {len(batches)}; padding {100 * (1 - real / max(padded, 1)):.1f}% of the tokens run")
    print(f"CPU s: ingest {total:.2f}, encoding {encode_cpu[0]:.2f} ({100 * encode_cpu[0] / total:.0f}%), "
          f"the rest {total - encode_cpu[0]:.2f}; chunks per CPU-second {n / total:.2f}")  # fmt: skip
    emb.embed_many = real_embed  # type: ignore[method-assign]
    cost: dict[int, list[float]] = {c: [] for c in caps}
    for _ in range(2):
        for c in caps:
            minilm.ONNX_BATCH_TOKENS = c
            t = time.process_time()
            emb.embed(texts)
            cost[c].append(time.process_time() - t)
    for c in caps:
        print(f"batch cap {c:5d} padded tokens: encoding CPU s {', '.join(f'{x:.2f}' for x in cost[c])}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("site")
    ap.add_argument("--baseline-src", type=Path, default=ROOT.parent / "main" / "src")
    ap.add_argument(
        "--also-src",
        type=Path,
        action="append",
        default=[],
        help="another tree to run as it is, after the baseline (e.g. an older default); repeatable",
    )
    ap.add_argument("--encoders", default="auto,numpy", help="this tree's --encoder values, comma-separated")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="what this tree encodes and where its time goes")
    ap.add_argument("--caps", default="", help="with --profile: batch caps (padded tokens) to encode at, e.g. 512,4096")
    a = ap.parse_args(argv)
    if a.profile:
        for e in a.encoders.split(","):
            _profile(a.site, e, [int(c) for c in a.caps.split(",") if c])
        return

    sides: list[tuple[str, Path, str | None]] = []
    if a.baseline_src.is_dir():
        sides.append((f"baseline ({a.baseline_src})", a.baseline_src, None))
    sides += [(f"also ({src})", src, None) for src in a.also_src if src.is_dir()]
    sides += [(f"this tree, --encoder {e}", ROOT / "src", e) for e in a.encoders.split(",") if e]
    print(f"{a.site}; threads {a.threads}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(a.repeat):
        for name, src, enc in sides:
            cpu, wall, chunks = _ingest(src, a.site, a.threads, enc)
            if name not in best or chunks / cpu > best[name][2] / best[name][0]:
                best[name] = (cpu, wall, chunks)
    base = None
    print(
        f"{'side':52s} {'chunks':>6s} {'CPU s':>7s} {'wall s':>7s} {'CPU ms/chunk':>12s} "
        f"{'chunks/CPU-s':>12s} {'x':>5s}"
    )
    for name, (cpu, wall, chunks) in best.items():
        rate = chunks / cpu
        base = base or rate
        print(
            f"{name:52s} {chunks:6d} {cpu:7.1f} {wall:7.1f} {1000 * cpu / chunks:12.1f} {rate:12.2f} {rate / base:5.2f}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
