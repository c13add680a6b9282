"""Benchmark: ``admit eval`` of the embedded default over the whole development set, cold and warm.

Runs the CLI (what a user runs) three times on the same data:

1. the embedded default (``setwise``, its default grid; ``top_n`` when setwise is not in this build) with a
   fresh, empty cache: the cold time (reranking and grading everything);
2. the same command again: the warm time (everything from the cache);
3. the ``top_n`` baseline grid on the same cache (reranker scores cached, only top_n graded), as the
   reference beside it.

Usage::

    python bench/bench_eval.py                      # all of ../shared/data (641 questions)
    python bench/bench_eval.py --limit 20           # 20 questions per file
    python bench/bench_eval.py --cache /tmp/c       # reuse a cache (then "cold" is not cold)

Targets (2-core machine): cold < 10 min, warm < 30 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"


def _run(args: list[str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", *args], capture_output=True, text=True, check=False
    )
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"admit eval failed ({proc.returncode})")
    paths = json.loads(proc.stdout)["paths"]
    return dt, json.loads(Path(paths["metrics"]).read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="file or folder of labelled JSONL")
    ap.add_argument("--limit", type=int, default=None, help="questions per file")
    ap.add_argument("--reranker", default="dense")
    ap.add_argument("--cache", default=None, help="cache folder (default: a fresh temporary one)")
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    if not Path(a.data).exists():
        raise SystemExit(f"{a.data} not found")
    strategy = "setwise" if importlib.util.find_spec("admit.prune.setwise") else "top_n"
    if strategy != "setwise":
        print("note: admit.prune.setwise is not in this build; benchmarking top_n as the default instead")
    with tempfile.TemporaryDirectory() as tmp:
        cache = a.cache or str(Path(tmp) / "cache")
        common = [
            "eval",
            "--data",
            a.data,
            "--reranker",
            a.reranker,
            "--cache",
            cache,
            "--no-progress",
            "--json",
            "--workers",
            str(a.workers),
        ]
        if a.limit:
            common += ["--limit", str(a.limit)]
        cold_s, cold = _run([*common, "--prune", strategy, "--out", str(Path(tmp) / "cold")])
        warm_s, warm = _run([*common, "--prune", strategy, "--out", str(Path(tmp) / "warm")])
        base_s, base = _run([*common, "--prune", "top_n", "--out", str(Path(tmp) / "top_n")])
    n = cold["questions"]

    def best(m: dict) -> str:
        top = max(
            m["configs"],
            key=lambda e: (
                e["metrics"]["overall"]["chunk_compression"] >= 0.68,
                e["metrics"]["overall"]["retained_recall"],
            ),
        )
        o = top["metrics"]["overall"]
        return f"{top['name']}: comp {o['chunk_compression']:.3f} recall {o['retained_recall']:.3f}"

    print(f"questions: {n}   reranker: {cold['reranker']}   strategy: {strategy}")
    print(f"{'run':<28}{'wall s':>10}{'computed':>10}{'cached':>10}   best config at >=68% compression")
    first = strategy + (" first (given cache)" if a.cache else " cold")
    print(f"{first:<28}{cold_s:>10.1f}{cold['computed']:>10}{cold['cached']:>10}   {best(cold)}")
    print(f"{strategy + ' warm':<28}{warm_s:>10.1f}{warm['computed']:>10}{warm['cached']:>10}   {best(warm)}")
    print(f"{'top_n (scores cached)':<28}{base_s:>10.1f}{base['computed']:>10}{base['cached']:>10}   {best(base)}")
    print(
        f"targets: cold < 600 s ({'met' if cold_s < 600 else 'NOT met'}), "
        f"warm < 30 s ({'met' if warm_s < 30 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
