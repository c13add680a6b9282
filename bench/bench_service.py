"""Benchmark the HTTP service on loopback: RPS and p50/p99 latency per endpoint at 1, 8 and 32 clients.

Starts ``admit serve`` as a real process (so its memory is measured alone), ingests ``examples/docs`` into a
temporary knowledge base (or uses ``--kb``), and drives ``/healthz`` (the baseline), ``/v1/pack``,
``/v1/search`` without pruning and ``/v1/search`` with the embedded pruner (``setwise`` when installed, else
``top_n``, printed). Prints one table and the server's RSS before, at its peak, and after the run.

    python bench/bench_service.py                   # defaults: 200 requests per cell (100 for search)
    python bench/bench_service.py --requests 400 --concurrency 1,8,32
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from admit.testing import serve_subprocess

REPO = Path(__file__).resolve().parents[1]
KEY = "bench-key"


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class RssSampler(threading.Thread):
    """Samples a process's RSS every 100 ms; keeps the peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_mib(self.pid))
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()


def _embedded_strategy() -> str:
    try:
        from admit.prune import resolve_pruner

        resolve_pruner("setwise")
        return "setwise"
    except Exception:
        return "top_n"


def _pack_body() -> dict[str, Any]:
    data = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    data.pop("principal", None)
    return data


def drive(url: str, method: str, path: str, body: Any, n: int, conc: int) -> dict[str, float]:
    """Send ``n`` requests with ``conc`` concurrent clients; return rps, p50, p99 (ms) and errors.

    Each client opens its connection and sends one untimed request first; timing starts when all are ready.
    """
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()
    per = [n // conc + (1 if i < n % conc else 0) for i in range(conc)]
    per = [p for p in per if p]
    t0_box: list[float] = []
    barrier = threading.Barrier(len(per), action=lambda: t0_box.append(time.perf_counter()))

    def worker(count: int) -> None:
        nonlocal errors
        with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=120) as c:

            def call() -> int:
                r = c.get(path) if method == "GET" else c.post(path, json=body)
                return r.status_code

            call()
            barrier.wait()
            for _ in range(count):
                t = time.perf_counter()
                status = call()
                dt = (time.perf_counter() - t) * 1000
                with lock:
                    lat.append(dt)
                    if status != 200:
                        errors += 1

    with ThreadPoolExecutor(len(per)) as ex:
        list(ex.map(worker, per))
    wall = time.perf_counter() - t0_box[0]
    lat.sort()
    return {
        "rps": len(lat) / wall,
        "p50": statistics.median(lat),
        "p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "errors": errors,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200, help="requests per cell (search cells get half)")
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--kb", default=None, help="an existing knowledge base (default: ingest examples/docs)")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    strategy = _embedded_strategy()
    with tempfile.TemporaryDirectory() as tmp:
        kb = args.kb
        if kb is None:
            from admit.kb import KnowledgeBase

            kb = str(Path(tmp) / "kb.db")
            t = time.perf_counter()
            with KnowledgeBase(kb) as k:
                k.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
            print(f"ingested examples/docs in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        cfg = Path(tmp) / "admit.toml"
        cfg.write_text(
            f'[service]\nprune_strategy = "{strategy}"\n[service.limits]\nrequest_timeout_s = 120\n'
            '[service.keys.bench]\nkey_env = "ADMIT_BENCH_KEY"\ntenant = "acme"\ngroups = ["support"]\n',
            "utf-8",
        )
        env = {**os.environ, "ADMIT_BENCH_KEY": KEY, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        started: list[subprocess.Popen[bytes]] = []
        with serve_subprocess(["--kb", kb, "--config", str(cfg)], env=env, on_start=started.append) as url:
            proc = started[0]
            q = {"question": "How do I fix error E4012 during a push?", "top_k": 20}
            cells = [
                ("GET /healthz (baseline)", "GET", "/healthz", None, args.requests),
                ("POST /v1/pack", "POST", "/v1/pack", _pack_body(), args.requests),
                ("POST /v1/search prune=false", "POST", "/v1/search", q, max(args.requests // 2, 1)),
                (
                    f"POST /v1/search prune={strategy}",
                    "POST",
                    "/v1/search",
                    {**q, "prune": True},
                    max(args.requests // 2, 1),
                ),
            ]
            # warm up every endpoint once (model loads, tokenizer caches) before measuring
            for _, m, p, b, _ in cells:
                drive(url, m, p, b, 2, 1)
            rss_before = _rss_mib(proc.pid)
            sampler = RssSampler(proc.pid)
            sampler.start()
            print(f"{'endpoint':34} {'clients':>7} {'n':>5} {'rps':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}")
            for name, m, p, b, n in cells:
                for conc in levels:
                    r = drive(url, m, p, b, n, conc)
                    print(
                        f"{name:34} {conc:7d} {n:5d} {r['rps']:8.1f} {r['p50']:8.1f} {r['p99']:8.1f} "
                        f"{int(r['errors']):6d}",
                        flush=True,
                    )
            sampler.stop()
            rss_after = _rss_mib(proc.pid)
            print(
                f"server RSS: before {rss_before:.0f} MiB, peak {max(sampler.peak, rss_after):.0f} MiB, "
                f"after {rss_after:.0f} MiB  (embedded pruner: {strategy}; cpus: {os.cpu_count()})"
            )


if __name__ == "__main__":
    main()
