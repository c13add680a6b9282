"""``admit ingest`` throughput: chunks per CPU-second of one site, this tree beside another (``main``) in one run.

Each side is a fresh ``admit ingest SITE --kb NEW --json`` process (import, model load, parse, chunk, embed,
write: what a user pays), timed by its own CPU time (user + system, ``getrusage`` of the child), so the figure
holds on a machine other processes share; wall time is printed beside it. The sides run in turn, ``--repeat``
times, the best of each reported. This tree runs with each ``--encoder`` asked for (``auto``: onnxruntime when
installed; ``numpy``: the batching changes alone); the other tree (``--baseline-src``, e.g. a checkout of main)
runs as it is.

    nice -n 0 python bench/bench_ingest.py SITE [--baseline-src ../main/src] [--encoders auto,numpy]
        [--threads 2] [--repeat 1]

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


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("site")
    ap.add_argument("--baseline-src", type=Path, default=ROOT.parent / "main" / "src")
    ap.add_argument("--encoders", default="auto,numpy", help="this tree's --encoder values, comma-separated")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args(argv)

    sides: list[tuple[str, Path, str | None]] = []
    if a.baseline_src.is_dir():
        sides.append((f"baseline ({a.baseline_src})", a.baseline_src, None))
    sides += [(f"this tree, --encoder {e}", ROOT / "src", e) for e in a.encoders.split(",") if e]
    print(f"{a.site}; threads {a.threads}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(a.repeat):
        for name, src, enc in sides:
            cpu, wall, chunks = _ingest(src, a.site, a.threads, enc)
            if name not in best or chunks / cpu > best[name][2] / best[name][0]:
                best[name] = (cpu, wall, chunks)
    base = None
    print(f"{'side':60s} {'chunks':>6s} {'CPU s':>7s} {'wall s':>7s} {'chunks/CPU-s':>12s} {'x':>5s}")
    for name, (cpu, wall, chunks) in best.items():
        rate = chunks / cpu
        base = base or rate
        print(f"{name:60s} {chunks:6d} {cpu:7.1f} {wall:7.1f} {rate:12.2f} {rate / base:5.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
