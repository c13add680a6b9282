"""Fairness across tenants: a victim's ``/v1/search`` beside 2, 4, 8, 16 and 32 hostile tenants, in one run.

Starts ``admit serve`` as a real process on loopback with a knowledge base of ``examples/docs``, one key for
the victim (tenant ``acme``) and one key per hostile tenant (``evil0`` .. ``evil31``). Each hostile tenant keeps
one of the most expensive valid requests in flight, back to back: ``/v1/pack`` with 24 candidates of 49,000
characters of short sentences, a ``List all ...`` question and ``input_limit`` 200,000 (issue 26: the anchored
excerpt loop ran ~6,600 trials per candidate). The victim sends ordinary searches one after another: first on
a quiet server (the baseline), then beside each number of hostile tenants. Prints p50/p99 per phase and the
ratio to the quiet baseline of the same run (on a loaded machine only the ratios mean something).

    python bench/bench_fairness.py                          # 2,4,8,16,32 hostile tenants, 40 victim requests each
    python bench/bench_fairness.py --tenants 8,32 --victims 60

Issue 32's scenarios (``--scenarios``), each ``KIND:N``: ``pack:N`` N tenants each with one long pack in flight
(the above), ``tools:N`` N tenants each with a search carrying a 99,000-row tool output, ``setwise:N`` N
tenants each with a setwise prune of 200 chunks of 9,000 characters, ``conns:N`` one key holding N connections
of back-to-back searches. ``--modes threads,processes`` runs every scenario against a server whose work runs
in threads (``worker_processes = 0``, the design before issue 32) and one whose work runs in worker processes
(the default of ``admit serve``), each with its own quiet baseline; ``/healthz`` is polled every 50 ms during
each phase (its p99 printed beside the victim's):

    python bench/bench_fairness.py --scenarios pack:16,tools:8,setwise:8,conns:400 --modes threads,processes
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx

from admit.testing import serve_subprocess

REPO = Path(__file__).resolve().parents[1]
VICTIM_KEY = "victim-key"
QUESTION = "How do I fix error E4012 during a push?"


def hostile_body(tenant: str = "evil0") -> bytes:
    """The most expensive valid ``/v1/pack`` under the default limits (24 x 49,000 characters of sentences)."""
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]

    def text(c: int) -> str:
        sentences = [f"Item {c}-{i} lists {words[(i + c) % 8]} and {words[(i * 3 + c) % 8]}." for i in range(4000)]
        return " ".join(sentences)[:49_000]

    cands = [
        {
            "id": f"h{i}",
            "source_id": f"s{i}",
            "text": text(i),
            "title": f"t{i}",
            "access": {"tenant": tenant, "groups": []},
        }
        for i in range(24)
    ]
    body = {"question": "List all items that mention alpha and omega", "candidates": cands, "input_limit": 200_000}
    return json.dumps(body).encode()


def tools_body() -> bytes:
    """A ``/v1/search`` carrying a 99,000-row tool output (issue 32)."""
    rows = [{"n": i} for i in range(99_000)]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    out = {
        "id": "big",
        "tool": "lookup",
        "rows": rows,
        "row_schema": schema,
        "max_rows": 10_000,
        "max_bytes": 2_000_000,
    }
    return json.dumps({"question": QUESTION, "top_k": 10, "tool_outputs": [out]}).encode()


def setwise_body() -> bytes:
    """A setwise ``/v1/prune`` of 200 chunks of 9,000 characters (issue 32)."""
    words = ["push", "quota", "error", "disk", "garbage", "collection", "release", "token"]
    cands = [
        {
            "id": f"c{i}",
            "text": " ".join(f"The {words[(i + j) % 8]} note {i}-{j} says {words[j % 8]}." for j in range(400))[:9_000],
        }
        for i in range(200)
    ]
    return json.dumps({"question": QUESTION, "candidates": cands, "strategy": "setwise"}).encode()


HOSTILE = {"pack": ("/v1/pack", None), "tools": ("/v1/search", tools_body), "setwise": ("/v1/prune", setwise_body)}


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def _victim(url: str, n: int, budget_s: float) -> list[float]:
    """Up to ``n`` sequential searches within ``budget_s``; latencies in ms (an error counts as inf)."""
    out: list[float] = []
    end = time.monotonic() + budget_s
    with httpx.Client(base_url=url, headers={"X-API-Key": VICTIM_KEY}, timeout=120) as c:
        while len(out) < n and time.monotonic() < end:
            t = time.perf_counter()
            try:
                ok = c.post("/v1/search", json={"question": QUESTION, "top_k": 10}).status_code == 200
            except httpx.HTTPError:
                ok = False
            out.append((time.perf_counter() - t) * 1000 if ok else float("inf"))
    return out


def _health(url: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=30) as c:
        while not stop.is_set():
            t = time.perf_counter()
            try:
                c.get("/healthz")
                out.append((time.perf_counter() - t) * 1000)
            except httpx.HTTPError:
                out.append(float("inf"))
            stop.wait(0.05)


def _config(tmp: Path, tenants: int, timeout_s: float, mode: str) -> tuple[Path, dict[str, str]]:
    workers = "worker_processes = 0\n" if mode == "threads" else ""
    lines = [
        '[service]\nprune_strategy = "top_n"\n',
        f"[service.limits]\nrequest_timeout_s = {timeout_s}\n{workers}",
        '[service.keys.victim]\nkey_env = "ADMIT_VICTIM_KEY"\ntenant = "acme"\ngroups = ["support"]\n',
    ]
    env = {"ADMIT_VICTIM_KEY": VICTIM_KEY}
    for i in range(tenants):
        lines.append(f'[service.keys.h{i}]\nkey_env = "ADMIT_H{i}_KEY"\ntenant = "evil{i}"\n')
        env[f"ADMIT_H{i}_KEY"] = f"hostile-key-{i}"
    cfg = tmp / f"admit-{mode}.toml"
    cfg.write_text("".join(lines), "utf-8")
    return cfg, env


def _hostile_threads(url: str, kind: str, n: int, stop: threading.Event, ended: Counter[str]) -> list[threading.Thread]:
    lock = threading.Lock()
    route, make = HOSTILE[kind]
    shared = make() if make is not None else None

    def hostile(i: int) -> None:
        body = shared if shared is not None else hostile_body(f"evil{i}")
        head = {"X-API-Key": f"hostile-key-{i}", "Content-Type": "application/json"}
        with httpx.Client(base_url=url, headers=head, timeout=120) as c:
            while not stop.is_set():
                try:
                    status = str(c.post(route, content=body).status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                with lock:
                    ended[status] += 1
                if status == "429":
                    stop.wait(0.05)

    return [threading.Thread(target=hostile, args=(i,), daemon=True) for i in range(n)]


def _conns_main(url: str, n: int, stop: Any, results: Any) -> None:
    import asyncio

    ended: Counter[str] = Counter()

    async def run() -> None:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        head = {"X-API-Key": "hostile-key-0"}
        async with httpx.AsyncClient(base_url=url, headers=head, timeout=120, limits=limits) as c:

            async def one() -> None:
                while not stop.is_set():
                    try:
                        r = await c.post("/v1/search", json={"question": QUESTION, "top_k": 10})
                        status = str(r.status_code)
                    except httpx.HTTPError as exc:
                        status = type(exc).__name__
                    ended[status] += 1
                    if status == "429":
                        await asyncio.sleep(0.05)  # a client that does not honour Retry-After

            await asyncio.gather(*(one() for _ in range(n)))

    asyncio.run(run())
    results.put(dict(ended))


def _connections_thread(url: str, n: int, stop: threading.Event, ended: Counter[str]) -> list[threading.Thread]:
    """One key (``hostile-key-0``) holding ``n`` connections, each sending searches back to back, from its own
    process (a client in the benchmark's process would compete with the victim's client for its interpreter)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    mp_stop, results = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_conns_main, args=(url, n, mp_stop, results), daemon=True)

    def watch() -> None:
        proc.start()
        stop.wait()
        mp_stop.set()
        try:
            ended.update(results.get(timeout=150))
        except Exception:
            ended["lost"] += 1
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()

    return [threading.Thread(target=watch, daemon=True)]


def _scenarios(args: argparse.Namespace) -> list[tuple[str, int]]:
    if args.scenarios:
        out = []
        for part in args.scenarios.split(","):
            kind, _, n = part.strip().partition(":")
            if kind not in (*HOSTILE, "conns"):
                raise SystemExit(f"unknown scenario {kind!r}")
            out.append((kind, int(n)))
        return out
    return [("pack", int(x)) for x in args.tenants.split(",") if x.strip()]


def _serve(kb: str, cfg: Path, keys: dict[str, str]) -> AbstractContextManager[str]:
    env = {**os.environ, **keys, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return serve_subprocess(["--kb", kb, "--config", str(cfg)], env=env)


def _phase(
    url: str, args: argparse.Namespace, kind: str | None, n: int
) -> tuple[list[float], list[float], Counter[str]]:
    stop, hstop = threading.Event(), threading.Event()
    ended: Counter[str] = Counter()
    threads: list[threading.Thread] = []
    if kind == "conns":
        threads = _connections_thread(url, n, stop, ended)
    elif kind is not None:
        threads = _hostile_threads(url, kind, n, stop, ended)
    for t in threads:
        t.start()
    if threads:
        time.sleep(3.0 + (0.25 * n if kind != "conns" else 3.0))  # every hostile tenant has had a request admitted
    health: list[float] = []
    ht = threading.Thread(target=_health, args=(url, hstop, health), daemon=True)
    ht.start()
    lat = _victim(url, args.victims, args.phase_s)
    hstop.set()
    stop.set()
    ht.join(timeout=30)
    for t in threads:
        t.join(timeout=args.timeout_s + 30)
    return lat, health, ended


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenants", default="2,4,8,16,32", help="comma-separated numbers of hostile tenants (pack)")
    ap.add_argument("--scenarios", default="", help="KIND:N,... (pack, tools, setwise, conns); overrides --tenants")
    ap.add_argument("--modes", default="processes", help="threads, processes or both (comma-separated)")
    ap.add_argument("--victims", type=int, default=40, help="victim searches per phase")
    ap.add_argument("--phase-s", type=float, default=40.0, help="most seconds a phase's victim requests may take")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="the server's request_timeout_s")
    args = ap.parse_args()
    scenarios = _scenarios(args)
    most = max([n for k, n in scenarios if k != "conns"] + [1])
    rows: list[tuple[str, str, list[float], list[float], Counter[str]]] = []
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        from admit.kb import KnowledgeBase

        kb = str(tmp / "kb.db")
        with KnowledgeBase(kb) as k:
            k.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            cfg, keys = _config(tmp, most, args.timeout_s, mode)
            with _serve(kb, cfg, keys) as url:
                _victim(url, 5, 30)  # warm up
                lat, health, ended = _phase(url, args, None, 0)
                rows.append((mode, "quiet", lat, health, ended))
                for kind, n in scenarios:
                    lat, health, ended = _phase(url, args, kind, n)
                    rows.append((mode, f"{kind}:{n}", lat, health, ended))
    print(
        f"victim /v1/search, {args.victims} sequential requests per phase (load 1-min: {load0:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end; {os.cpu_count()} CPUs)"
    )
    print(
        f"{'mode':<10} {'phase':<12} {'n':>4} {'p50 ms':>9} {'p99 ms':>9} {'p50 x':>7} {'p99 x':>7} "
        f"{'healthz p99':>12}  hostile requests ended"
    )
    base: dict[str, tuple[float, float]] = {}
    for mode, name, lat, health, ended in rows:
        p50, p99 = statistics.median(lat), _pct(lat, 0.99)
        if name == "quiet":
            base[mode] = (p50, p99)
        q50, q99 = base[mode]
        hp99 = _pct(health, 0.99) if health else float("nan")
        done = ", ".join(f"{k}: {v}" for k, v in sorted(ended.items())) or "-"
        print(
            f"{mode:<10} {name:<12} {len(lat):>4} {p50:>9.1f} {p99:>9.1f} {p50 / q50:>7.2f} {p99 / q99:>7.2f} "
            f"{hp99:>10.1f}ms  {done}"
        )


if __name__ == "__main__":
    main()
