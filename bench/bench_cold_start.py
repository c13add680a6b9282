"""Cold start: import time, ``admit --help``, and the time to the first result of ``admit search``, ``admit prune``
and MCP ``initialize``, for this checkout and a baseline commit in the same run.

Every figure is a fresh process (``python -m admit.cli ...``) timed from launch to its first line on stdout and
to its exit, the median of ``--runs``, with the CPU time (user + system) the process used to its exit: on a busy
machine the wall times stretch, the CPU time much less, so it stands in for what an idle core would take. Both
sides run in this Python environment: the baseline (default ``197f7bb``, the last commit whose MiniLM ran
through torch and sentence-transformers) from its own ``src/`` (``git archive``), with a knowledge base it
ingested itself. The load average is printed: on a busy machine every figure is inflated, the baseline's too.

    python bench/bench_cold_start.py [--runs 3] [--baseline-ref 197f7bb] [--no-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REF = "197f7bb"
QUESTION = "What does error E4012 mean and how do I fix it?"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}


def _first_line(cmd: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[float, float, float]:
    """Seconds from launch to the first stdout line, to the exit, and the CPU seconds (user + system) it used."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.flush()
    line = proc.stdout.readline()
    first = time.perf_counter() - t0
    if stdin is not None:
        proc.stdin.close()  # an MCP server over stdio ends when its input does
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # the child's own CPU time: what an idle core would have to give it
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    if rc != 0 or not line:
        raise RuntimeError(f"{' '.join(cmd)} exited {rc} with first line {line!r}")
    return first, time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def _median(fn: object, runs: int) -> tuple[float, float, float]:
    firsts, totals, cpus = [], [], []
    for _ in range(runs):
        first, total, cpu = fn()  # type: ignore[operator]
        firsts.append(first)
        totals.append(total)
        cpus.append(cpu)
    return statistics.median(firsts), statistics.median(totals), statistics.median(cpus)


def _records(path: Path) -> Path:
    cands = [
        {"id": f"c{k}", "text": f"Error E40{k:02d}: the push was rejected for reason {k}; see the quota settings."}
        for k in range(15)
    ]
    path.write_text(json.dumps({"id": "q1", "question": QUESTION, "candidates": cands}) + "\n", "utf-8")
    return path


def _side(src: Path, work: Path, runs: int) -> dict[str, tuple[float, float, float]]:
    env = _env(src)
    py = [sys.executable]
    cli = [*py, "-m", "admit.cli"]
    kb = work / "demo.kb"
    docs, registry = ROOT / "examples" / "docs", ROOT / "examples" / "sources.toml"
    out: dict[str, tuple[float, float, float]] = {}
    out["import admit"] = _median(lambda: _first_line([*py, "-c", "import admit; print(1)"], env), runs)
    out["admit --help"] = _median(lambda: _first_line([*cli, "--help"], env), runs)
    ingest = [*cli, "ingest", str(docs), "--kb", str(kb), "--registry", str(registry), "--no-progress"]
    out["admit ingest examples/docs (first line: its report)"] = _first_line(ingest, env)
    search = [*cli, "search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune"]
    out["admit search --prune (first line)"] = _median(lambda: _first_line(search, env), runs)
    records = _records(work / "records.jsonl")
    prune = [*cli, "prune", "--input", str(records), "--output", "-"]
    out["admit prune, 15 candidates (first record)"] = _median(lambda: _first_line(prune, env), runs)
    mcp = [*cli, "mcp", "--kb", str(kb), "--principal", "tenant:acme"]
    out["admit mcp: initialize answered"] = _median(
        lambda: _first_line(mcp, env, stdin=json.dumps(INITIALIZE) + "\n"), runs
    )
    return out


def _export_src(ref: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = dest / "src.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-ref", default=BASELINE_REF)
    ap.add_argument("--no-baseline", action="store_true")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {a.runs} fresh processes")
    with tempfile.TemporaryDirectory(prefix="admit-cold-") as d:
        work = Path(d)
        (work / "now").mkdir()
        sides = {"now": _side(ROOT / "src", work / "now", a.runs)}
        if not a.no_baseline:
            base_src = _export_src(a.baseline_ref, work / "baseline")
            sides[f"baseline {a.baseline_ref}"] = _side(base_src, work / "baseline", a.runs)
    names = list(next(iter(sides.values())))
    width = max(len(n) for n in names)
    print(f"{'':{width}}  " + "  ".join(f"{s:>40}" for s in sides))
    for n in names:
        cells = [f"{v[n][0]:6.2f} s (exit {v[n][1]:6.2f}, cpu {v[n][2]:6.2f})" for v in sides.values()]
        print(f"{n:{width}}  " + "  ".join(f"{c:>40}" for c in cells))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
