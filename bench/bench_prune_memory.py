#!/usr/bin/env python3
"""Memory of ``admit prune`` over a long input: resident set size as the records go by.

Builds one JSONL input of ``--records`` records in the ``../shared/data`` format (cycling through the labelled
files of ``../shared/data`` and the documentation files of ``../shared/train``; labels are not read by the CLI), runs
``admit prune --input F --output O`` on it as a subprocess and samples its RSS (``/proc/PID/status``) while counting
the records written so far. The same input is run with ``--prune top_n`` (no model: the process's floor) in the
same run, as the baseline.

    python bench/bench_prune_memory.py [--records 1600] [--strategy setwise] [--sample-s 0.5]

Prints, per strategy, the RSS after 10%, 25%, 50%, 75% and 100% of the records, the peak, and the growth between the
25% and 100% marks (flat memory: the second half of a long input costs nothing more than the first).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"


def build_input(path: Path, n: int) -> int:
    files = sorted((SHARED / "data").glob("*.jsonl")) + sorted((SHARED / "train").glob("docs_*.jsonl.gz"))
    rows: list[dict[str, object]] = []
    for f in files:
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    if not rows:
        raise SystemExit(f"no records under {SHARED}")
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            r = rows[i % len(rows)]
            out.write(json.dumps({"id": f"{r['id']}#{i}", "question": r["question"], "candidates": r["candidates"]}))
            out.write("\n")
    return n


def rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0


def run(strategy: str, inp: Path, n: int, sample_s: float) -> dict[str, object]:
    out = inp.with_suffix(f".{strategy}.out.jsonl")
    cmd = [sys.executable, "-m", "admit.cli", "prune", "--input", str(inp), "--output", str(out)]
    cmd += ["--prune", strategy, "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[int, float]] = []
    while proc.poll() is None:
        r = rss_mib(proc.pid)
        if r is not None:
            samples.append((lines(out), r))
        time.sleep(sample_s)
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"admit prune --prune {strategy} failed ({proc.returncode}): {err[-2000:]}")
    done = lines(out)
    marks = {}
    for share in (0.10, 0.25, 0.50, 0.75, 1.00):
        want = int(share * n)
        at = [r for k, r in samples if k >= want] if share < 1 else [r for _, r in samples[-3:]]
        marks[f"{int(share * 100)}%"] = round(at[0], 1) if at else None
    peak = max((r for _, r in samples), default=0.0)
    growth = (marks["100%"] or 0) - (marks["25%"] or 0)
    return {
        "strategy": strategy,
        "records": done,
        "seconds": round(time.perf_counter() - t0, 1),
        "rss_mib": marks,
        "peak_mib": round(peak, 1),
        "growth_25_to_100_mib": round(growth, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1600)
    ap.add_argument("--strategy", default="setwise")
    ap.add_argument("--sample-s", type=float, default=0.5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / "long.jsonl"
        n = build_input(inp, args.records)
        rows = [run(s, inp, n, args.sample_s) for s in ("top_n", args.strategy)]
    print(f"admit prune over {n} records (RSS in MiB after each share of the records; baseline top_n first):")
    for r in rows:
        marks = ", ".join(f"{k} {v}" for k, v in r["rss_mib"].items())  # type: ignore[union-attr]
        print(
            f"  {r['strategy']:10s} {marks}; peak {r['peak_mib']}; growth 25%->100% {r['growth_25_to_100_mib']}"
            f" MiB; {r['seconds']} s"
        )
    print(json.dumps(rows))
    os.sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
