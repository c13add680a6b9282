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
each phase (its p99 printed beside the victim's; ``new conn``: a second poller opening a new connection for each
probe, as kubelet does: answered by the server's probe helper process, ``[service.limits] probe_process``):

    python bench/bench_fairness.py --scenarios pack:16,tools:8,setwise:8,conns:400 --modes threads,processes

Issue 47's scenarios: ``flood:N`` N tenants each holding ``--conns`` (70) connections of back-to-back searches
(the quiet tenant must never get 429); ``bodies:N`` N tenants x ``--conns`` connections of 1.8 MB ``/v1/pack``
bodies (the peak resident memory of the server and its workers is sampled every 0.25 s and printed);
``tools5k:N`` N tenants each sending a search with 5,000 tool rows (run it in mode ``traced``: the server
writes its trace file with ``trace_requests`` on). ``--long-prune`` times one tenant's setwise prune alone and
beside 3 light tenants sending searches back to back (ratio: at most 3x). ``--deadline-s S`` starts a server and
an ``admit mcp --transport streamable-http`` with ``request_timeout_s = S`` and sends each the setwise prune
(HTTP) and ``prune_context`` (MCP) that outrun it: how long past the deadline the answer came, and the CPU
seconds the server and its workers used in the 5 s after it (work left running). Every loop is bounded; run it
niced on a shared machine and read the ratios:

    nice -n 10 python bench/bench_fairness.py --modes processes --scenarios flood:17,bodies:8,conns:400 \
        --long-prune --deadline-s 3
    nice -n 10 python bench/bench_fairness.py --modes traced --scenarios tools5k:4

Where the quiet tenant's time goes: ``--stages`` turns the server's ``server_timing`` on and prints, per phase,
each stage of its searches (``Server-Timing``: the loop's backlog, gate, route, fair queue, hand-off, the
worker's wall and CPU time, the way back; ``client``: its time outside the server's total) as the median and the
mean of its slowest tenth, the CPU the server, its workers and the flood's client used (% of a core), and
``/healthz``'s p99 at the server. ``--flood-nice N`` runs each ``flood``, ``bodies`` and ``conns`` phase twice:
its client process at the server's priority (as before), then niced by N (as a flood from other machines would
be, not competing for the server's cores); both rows are printed (``n10``):

    nice -n 10 python bench/bench_fairness.py --modes processes --scenarios flood:17 --stages --flood-nice 10

With ``--stages`` the worker's time is split further (``runq``: the job thread runnable but waiting for a core,
``blocked``: off a core otherwise; ``busy``: workers holding a job when it was queued), and the CPU line names
this benchmark's own process, the other processes on the machine and how long the server's event-loop thread
waited for a core.

**The flood's client** (``flood``, ``bodies``, ``conns``; ``--flood-client``) is, since issue 47's round XI, a
light one by default (``raw``): asyncio streams, each request's bytes built once, each answer read by its length
and not parsed: about a sixth of the CPU per request of the ``httpx.AsyncClient`` used before (``httpx``, still
there to compare with earlier figures), which was runnable in every sample of a ``flood:17`` phase and shared
the server's 2 cores at its priority. The light client sends more requests for the same CPU (a flood from other
machines would too): the server refuses more of them, so ``flood`` figures of the two clients are not comparable.

``--gc`` records every full garbage collection (generation 2) of the server and of its workers (a
``sitecustomize`` on the server's ``PYTHONPATH``, the benchmark's only: nothing of it ships) and prints, per phase,
how many the server made while the victim ran and their CPU and wall time (the event loop stops meanwhile).
``conns:N`` is the per-key connection flood (one key, N connections; ``[service.limits]
max_connections_per_key`` refuses those beyond it, 429 before the body).
"""

from __future__ import annotations

import argparse
import itertools
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
        "schema": schema,
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


def big_body() -> bytes:
    """A ``/v1/pack`` of 1.8 MB: 36 candidates of 50,000 characters (issue 47: 8 tenants x 70 connections)."""
    words = ["push", "quota", "error", "disk", "garbage", "collection", "release", "token"]
    text = " ".join(f"Note {j} says {words[j % 8]} and {words[(j * 3) % 8]}." for j in range(3000))[:49_990]
    cands = [{"id": f"b{i}", "source_id": f"s{i}", "text": text, "title": f"t{i}"} for i in range(36)]
    return json.dumps({"question": QUESTION, "candidates": cands, "input_limit": 4000}).encode()


def tools5k_body() -> bytes:
    """A ``/v1/search`` carrying 5,000 tool rows (issue 47: with ``trace_requests`` on)."""
    rows = [{"n": i, "note": f"row {i} of the lookup"} for i in range(5000)]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}}}
    out = {"id": "t", "tool": "lookup", "rows": rows, "schema": schema, "max_rows": 5000, "max_bytes": 2_000_000}
    return json.dumps({"question": QUESTION, "top_k": 10, "tool_outputs": [out]}).encode()


def search_body() -> bytes:
    """An ordinary search (a light tenant's)."""
    return json.dumps({"question": QUESTION, "top_k": 10}).encode()


HOSTILE = {
    "pack": ("/v1/pack", None),
    "tools": ("/v1/search", tools_body),
    "setwise": ("/v1/prune", setwise_body),
    "tools5k": ("/v1/search", tools5k_body),
    "search": ("/v1/search", search_body),
}
MANY = {"flood": ("/v1/search", search_body), "bodies": ("/v1/pack", big_body)}
"""Scenarios of many tenants, each holding ``--conns`` connections (driven from a process of their own)."""


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def _victim(
    url: str,
    n: int,
    budget_s: float,
    codes: Counter[str] | None = None,
    stages: list[dict[str, float]] | None = None,
) -> list[float]:
    """Up to ``n`` sequential searches within ``budget_s``; latencies in ms (an error counts as inf); each
    answer's status counted in ``codes``; each answer's ``Server-Timing`` stages (ms) in ``stages``, with
    ``client``: the client's time outside the server's ``total``."""
    out: list[float] = []
    end = time.monotonic() + budget_s
    with httpx.Client(base_url=url, headers={"X-API-Key": VICTIM_KEY}, timeout=120) as c:
        while len(out) < n and time.monotonic() < end:
            t = time.perf_counter()
            timing = ""
            try:
                r = c.post("/v1/search", json={"question": QUESTION, "top_k": 10})
                status, timing = str(r.status_code), r.headers.get("server-timing", "")
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            if codes is not None:
                codes[status] += 1
            ms = (time.perf_counter() - t) * 1000 if status == "200" else float("inf")
            out.append(ms)
            if stages is not None and timing:
                parsed = _parse_timing(timing)
                parsed["client"] = ms - parsed.get("total", 0.0)
                parsed["ms"] = ms
                stages.append(parsed)
    return out


STAGE_NAMES = (
    *("client", "read", "gate", "route", "queue", "hand", "work", "cpu"),
    *("runq", "blocked", "back", "resume", "busy"),
)
"""The stages printed (``Server-Timing``, :mod:`admit.service.timing`; ``client``: outside the server)."""


def _parse_timing(value: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in value.split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur)
    return out


def _stage_line(stages: list[dict[str, float]]) -> str:
    """The median of each stage over all the victim's answers, and the mean over its slowest tenth."""
    if not stages:
        return "-"
    tail = sorted(stages, key=lambda s: s["ms"])[-max(1, len(stages) // 10) :]
    cols = []
    for name in STAGE_NAMES:
        med = statistics.median(s.get(name, 0.0) for s in stages)
        slow = statistics.fmean(s.get(name, 0.0) for s in tail)
        cols.append(f"{name} {med:.1f}/{slow:.1f}")
    return ", ".join(cols)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from ``/proc``)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        ppid = int(raw[raw.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree_cpu(pid: int) -> float:
    """CPU seconds ``pid`` and its live descendants have used (their own, not their reaped children's)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in _tree(pid):
        try:
            raw = Path(f"/proc/{p}/stat").read_bytes()
        except OSError:
            continue
        f = raw[raw.rfind(b")") + 2 :].split()
        total += (int(f[11]) + int(f[12])) / tick
    return total


class MemoryWatch:
    """Samples the resident memory of the server (``pid``) and of it with its workers every 0.25 s; keeps the
    peaks."""

    def __init__(self) -> None:
        self.pid = 0
        self.peak_server = self.peak_total = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, proc: Any) -> None:
        self.pid = proc.pid
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def reset(self) -> tuple[float, float]:
        peaks = (self.peak_server, self.peak_total)
        self.peak_server = self.peak_total = 0.0
        return peaks

    def _run(self) -> None:
        pids: list[int] = []
        for i in itertools.count():
            if self._stop.wait(0.25):
                return
            if i % 8 == 0:  # the tree walks all of /proc: every 2 s, not every sample (it shares the victim's GIL)
                pids = _tree(self.pid)
            server = _rss_mb(self.pid)
            total = sum(_rss_mb(p) for p in pids)
            self.peak_server = max(self.peak_server, server)
            self.peak_total = max(self.peak_total, total)

    def stop(self) -> None:
        self._stop.set()


def _health(
    url: str, stop: threading.Event, out: list[float], server: list[float] | None = None, fresh: bool = False
) -> None:
    """Poll ``/healthz`` every 50 ms: its latencies in ``out`` (ms), the server's ``total`` in ``server`` (when
    it sends ``Server-Timing``). ``fresh``: a new connection for each probe (as kubelet's), else one kept alive."""
    limits = httpx.Limits(max_keepalive_connections=0) if fresh else httpx.Limits()
    with httpx.Client(base_url=url, timeout=30, limits=limits) as c:
        while not stop.is_set():
            t = time.perf_counter()
            try:
                r = c.get("/healthz")
                out.append((time.perf_counter() - t) * 1000)
                timing = r.headers.get("server-timing")
                if server is not None and timing:
                    server.append(_parse_timing(timing).get("total", 0.0))
            except httpx.HTTPError:
                out.append(float("inf"))
            stop.wait(0.05)


def _config(tmp: Path, tenants: int, timeout_s: float, mode: str, timing: bool = False) -> tuple[Path, dict[str, str]]:
    workers = "worker_processes = 0\n" if mode == "threads" else ""
    traced = f'trace_file = "{tmp / "trace.jsonl"}"\ntrace_requests = true\n' if mode == "traced" else ""
    if timing:
        traced += "server_timing = true\n"
    lines = [
        f'[service]\nprune_strategy = "setwise"\n{traced}',  # setwise loaded before the workers fork
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


async def _raw_post(url: str, key: str, route: str, body: bytes, stop: Any, ended: Counter[str]) -> None:
    """One connection of the light flood client: ``route`` posted back to back on a kept-alive HTTP/1.1
    connection, the request's bytes built once, the answer read by its ``Content-Length`` (or its chunks) and not
    parsed; a new connection when the server closes it."""
    import asyncio
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    head = (
        f"POST {route} HTTP/1.1\r\nHost: {host}:{port}\r\nX-API-Key: {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    request = head.encode("latin-1") + body
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    while not stop.is_set():
        close = True
        try:
            if writer is None or reader is None:
                reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
            writer.write(request)
            await writer.drain()
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 120)
            status = raw[9:12].decode("latin-1")
            low = raw.lower()
            at = low.find(b"\r\ncontent-length:")
            if at >= 0:
                await reader.readexactly(int(low[at + 17 : low.find(b"\r\n", at + 2)]))
            elif b"\r\ntransfer-encoding: chunked" in low:
                while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                    await reader.readexactly(size + 2)
                await reader.readuntil(b"\r\n")
            close = b"\r\nconnection: close" in low
        except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as exc:
            status = type(exc).__name__
        ended[status] += 1
        if close and writer is not None:
            writer.close()
            reader = writer = None
        if status == "429":
            await asyncio.sleep(0.05)  # a client that does not honour Retry-After
    if writer is not None:
        writer.close()


def _conns_main(
    url: str,
    keys: list[str],
    n: int,
    route: str,
    body: bytes,
    stop: Any,
    results: Any,
    nice: int = 0,
    client: str = "raw",
) -> None:
    import asyncio

    if nice:
        os.nice(nice)  # as a flood from other machines would be: not competing with the server for its cores

    ended: Counter[str] = Counter()

    async def run_raw() -> None:
        await asyncio.gather(*(_raw_post(url, k, route, body, stop, ended) for k in keys for _ in range(n)))

    async def run() -> None:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        clients = [
            httpx.AsyncClient(
                base_url=url,
                headers={"X-API-Key": key, "Content-Type": "application/json"},
                timeout=120,
                limits=limits,
            )
            for key in keys
        ]

        async def one(c: httpx.AsyncClient) -> None:
            while not stop.is_set():
                try:
                    r = await c.post(route, content=body)
                    status = str(r.status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                ended[status] += 1
                if status == "429":
                    await asyncio.sleep(0.05)  # a client that does not honour Retry-After

        try:
            await asyncio.gather(*(one(c) for c in clients for _ in range(n)))
        finally:
            for c in clients:
                await c.aclose()

    asyncio.run(run_raw() if client == "raw" else run())
    results.put(dict(ended))


_FLOOD_CLIENT = ["raw"]
"""The flood's client (``--flood-client``): ``raw`` (asyncio streams, each request's bytes built once) or
``httpx`` (an ``httpx.AsyncClient`` per key, the client of the rounds before issue 47's round XI)."""


def _connections_thread(
    url: str,
    n: int,
    stop: threading.Event,
    ended: Counter[str],
    kind: str = "conns",
    tenants: int = 1,
    nice: int = 0,
) -> list[threading.Thread]:
    """``tenants`` keys (``hostile-key-0`` ..) each holding ``n`` connections, each sending ``kind``'s request back
    to back, from a process of their own (a client in the benchmark's process would compete with the victim's
    client for its interpreter)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    mp_stop, results = ctx.Event(), ctx.Queue()
    route, make = MANY.get(kind, ("/v1/search", search_body))
    keys = [f"hostile-key-{i}" for i in range(tenants)]
    args = (url, keys, n, route, make(), mp_stop, results, nice, _FLOOD_CLIENT[0])
    proc = ctx.Process(target=_conns_main, args=args, daemon=True)

    def watch() -> None:
        proc.start()
        _GEN_PIDS.append(proc.pid)
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
            if kind not in (*HOSTILE, *MANY, "conns"):
                raise SystemExit(f"unknown scenario {kind!r}")
            out.append((kind, int(n)))
        return out
    return [("pack", int(x)) for x in args.tenants.split(",") if x.strip()]


GC_HOOK = """
import gc, os, time
_log = os.environ.get("ADMIT_BENCH_GC_LOG")
_t = [0.0, 0.0]
def _on_gc(phase, info):
    if info.get("generation") != 2:
        return
    if phase == "start":
        _t[0], _t[1] = time.perf_counter(), time.thread_time()
        return
    line = "%d %.4f %.2f %.2f %d\\n" % (
        os.getpid(), time.time(), (time.perf_counter() - _t[0]) * 1000, (time.thread_time() - _t[1]) * 1000,
        len(gc.get_objects(2)),
    )
    try:
        with open(_log, "a") as fh:
            fh.write(line)
    except OSError:
        pass
if _log:
    gc.callbacks.append(_on_gc)
"""
"""The ``sitecustomize`` of ``--gc``: each full collection's pid, end time, wall and CPU ms, objects left in the
oldest generation (frozen ones aside)."""

_GC_LOG: list[Path] = []
_PHASE_TIMES: list[tuple[float, float]] = []
"""Per phase, the wall-clock window (``time.time()``) the victim ran in."""


def _serve(kb: str, cfg: Path, keys: dict[str, str], watch: MemoryWatch | None = None) -> AbstractContextManager[str]:
    env = {**os.environ, **keys, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if _GC_LOG:
        hook = _GC_LOG[0].parent / "gc_hook"
        hook.mkdir(exist_ok=True)
        (hook / "sitecustomize.py").write_text(GC_HOOK, "utf-8")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook), env.get("PYTHONPATH", "")) if p)
        env["ADMIT_BENCH_GC_LOG"] = str(_GC_LOG[0])

    def on_start(proc: Any) -> None:
        _PIDS[url_of[0]] = proc.pid
        if watch is not None:
            watch.start(proc)

    from admit.testing.serve import free_port

    port = free_port()
    url_of = [f"http://127.0.0.1:{port}"]
    return serve_subprocess(["--kb", kb, "--config", str(cfg)], env=env, on_start=on_start, port=port)


def _phase(
    url: str,
    args: argparse.Namespace,
    kind: str | None,
    n: int,
    nice: int = 0,
    stages: list[dict[str, float]] | None = None,
) -> tuple[list[float], list[float], Counter[str]]:
    stop, hstop = threading.Event(), threading.Event()
    ended: Counter[str] = Counter()
    threads: list[threading.Thread] = []
    if kind == "conns":
        threads = _connections_thread(url, n, stop, ended, nice=nice)
    elif kind in MANY:
        threads = _connections_thread(url, args.conns, stop, ended, kind=kind, tenants=n, nice=nice)
    elif kind is not None:
        threads = _hostile_threads(url, kind, n, stop, ended)
    for t in threads:
        t.start()
    if threads:
        time.sleep(3.0 + (0.25 * n if kind not in ("conns", *MANY) else 5.0))  # every hostile tenant is in
    health: list[float] = []
    hserver: list[float] = []
    fresh: list[float] = []
    ht = threading.Thread(target=_health, args=(url, hstop, health, hserver), daemon=True)
    ht.start()
    ft = threading.Thread(target=_health, args=(url, hstop, fresh, None, True), daemon=True)
    ft.start()
    codes: Counter[str] = Counter()
    cpu0, t0, w0 = _cpu_split(_PIDS[url]), time.perf_counter(), time.time()
    lat = _victim(url, args.victims, args.phase_s, codes, stages)
    cpu1, took = _cpu_split(_PIDS[url]), time.perf_counter() - t0
    _PHASE_TIMES.append((w0, time.time()))
    _CPU.append(tuple(100 * (b - a) / took for a, b in zip(cpu0, cpu1, strict=True)))  # type: ignore[arg-type]
    _GEN_PIDS.clear()
    _HEALTH_SERVER.append(hserver)
    _HEALTH_FRESH.append(fresh)
    ended.update({f"victim {k}": v for k, v in codes.items() if k != "200"})
    hstop.set()
    stop.set()
    ht.join(timeout=30)
    ft.join(timeout=30)
    for t in threads:
        t.join(timeout=args.timeout_s + 30)
    return lat, health, ended


_RUNS = iter(range(1_000_000))


def long_prune_body() -> bytes:
    """A setwise ``/v1/prune`` of 10 chunks of 2,000 characters (issue 47: "a tenant's prune that takes 3 s
    alone"), each call's text new (a run number in every chunk): no worker's embedding cache answers it."""
    run = next(_RUNS)
    body = json.loads(setwise_body())
    body["candidates"] = [{**c, "text": f"Run {run}. " + c["text"][:2000]} for c in body["candidates"][:10]]
    return json.dumps(body).encode()


def _timed_prune(url: str) -> float:
    """One setwise prune of the quiet tenant (:func:`long_prune_body`); ms (an error counts as inf)."""
    with httpx.Client(base_url=url, headers={"X-API-Key": VICTIM_KEY, "Content-Type": "application/json"}) as c:
        body = long_prune_body()
        t = time.perf_counter()
        r = c.post("/v1/prune", content=body, timeout=300)
        return (time.perf_counter() - t) * 1000 if r.status_code == 200 else float("inf")


def _long_prune(url: str, runs: int = 3) -> tuple[float, float, Counter[str]]:
    """The quiet tenant's setwise prune alone, then beside 3 light tenants sending searches back to back: the
    median ms of ``runs`` each."""
    _timed_prune(url)  # warm: the first prune also loads what it needs
    alone = statistics.median(_timed_prune(url) for _ in range(runs))
    stop, ended = threading.Event(), Counter[str]()
    threads = _hostile_threads(url, "search", 3, stop, ended)
    for t in threads:
        t.start()
    time.sleep(3.0)
    beside = statistics.median(_timed_prune(url) for _ in range(runs))
    stop.set()
    for t in threads:
        t.join(timeout=150)
    return alone, beside, ended


def _mcp_server(kb: str, cfg: Path, keys: dict[str, str], port: int) -> Any:
    import socket
    import subprocess

    env = {**os.environ, **keys, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    from admit.testing.serve import ADMIT

    argv = [*ADMIT, "mcp", "--transport", "streamable-http", "--kb", kb]
    argv += ["--config", str(cfg), "--port", str(port)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):  # bounded: 10 minutes
        if proc.poll() is not None:
            raise SystemExit(f"admit mcp exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("admit mcp did not start")


def _mcp_prune(url: str) -> tuple[float, str]:
    """``prune_context`` with the setwise body's 200 chunks over streamable HTTP; (seconds, outcome)."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    body = json.loads(setwise_body())
    args = {"question": body["question"], "chunks": [c["text"] for c in body["candidates"]], "strategy": "setwise"}

    async def main() -> tuple[float, str]:
        with anyio.fail_after(300):
            async with (
                create_mcp_http_client(headers={"X-API-Key": VICTIM_KEY}) as client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                t = time.perf_counter()
                res = await session.call_tool("prune_context", args)
                text = " ".join(getattr(c, "text", "") for c in res.content)
                outcome = "timeout" if "request_timeout_s" in text else ("error" if res.is_error else "ok")
                return time.perf_counter() - t, outcome

    return anyio.run(main)


def _deadlines(kb: str, tmp: Path, deadline_s: float) -> list[tuple[str, float, str, float]]:
    """The setwise prune that outruns ``deadline_s`` over HTTP and over MCP: (face, seconds past the deadline,
    outcome, CPU seconds the server and its workers used in the 5 s after the answer)."""
    from admit.testing.serve import free_port

    cfg, keys = _config(tmp, 1, deadline_s, "processes")
    out = []
    with _serve(kb, cfg, keys) as url:
        pid = _server_pid(url)
        with httpx.Client(base_url=url, headers={"X-API-Key": VICTIM_KEY, "Content-Type": "application/json"}) as c:
            for _ in range(2):
                t = time.perf_counter()
                r = c.post("/v1/prune", content=setwise_body(), timeout=300)
                took = time.perf_counter() - t
                cpu0 = _tree_cpu(pid)
                time.sleep(5)
                out.append(("http", took - deadline_s, str(r.status_code), _tree_cpu(pid) - cpu0))
    port = free_port()
    proc = _mcp_server(kb, cfg, keys, port)
    try:
        for _ in range(2):
            took, outcome = _mcp_prune(f"http://127.0.0.1:{port}/mcp")
            cpu0 = _tree_cpu(proc.pid)
            time.sleep(5)
            out.append(("mcp", took - deadline_s, outcome, _tree_cpu(proc.pid) - cpu0))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except Exception:
            proc.kill()
    return out


_PIDS: dict[str, int] = {}
_GEN_PIDS: list[int] = []
_CPU: list[tuple[float, ...]] = []
_HEALTH_SERVER: list[list[float]] = []
_HEALTH_FRESH: list[list[float]] = []
"""Per phase, ``/healthz`` latencies (ms) of the poller that opens a new connection for each probe."""
"""Per phase, ``/healthz``'s time at the server (``Server-Timing`` total, ms)."""
"""Per phase, % of one core while the victim ran: the server's process, its workers, the flood's client, this
benchmark's own process (the victim's client, the ``/healthz`` poller), the whole machine's busy time (every
process of every user), and the server's event-loop thread's time runnable but waiting for a core."""
"""The flood clients' processes started (their CPU is read while they run)."""


def _proc_cpu(pid: int) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0.0
    f = raw[raw.rfind(b")") + 2 :].split()
    return (int(f[11]) + int(f[12])) / tick


def _machine_busy() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``: all but idle and iowait, every core)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def _run_delay(pid: int) -> float:
    """Seconds the main thread of ``pid`` (the server's event loop) has been runnable but waiting for a core."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu_split(server: int) -> tuple[float, ...]:
    """CPU seconds so far: the server's process, its workers (live ones), the flood clients running now, this
    process, the whole machine; the server loop's time waiting for a core (:data:`_CPU`)."""
    main = _proc_cpu(server)
    return (
        main,
        _tree_cpu(server) - main,
        sum(_proc_cpu(p) for p in _GEN_PIDS),
        _proc_cpu(os.getpid()),
        _machine_busy(),
        _run_delay(server),
    )


def _server_pid(url: str) -> int:
    return _PIDS[url]


def _print_gc(rows: list[Any], lines: list[str], servers: list[int]) -> None:
    """Per phase, the full collections of the server (its event loop stopped) and of its workers."""
    parts = [ln.split() for ln in lines if ln.strip()]
    seen = [(int(p), float(t), float(w), float(c), int(n)) for p, t, w, c, n in parts]
    print("full garbage collections while the victim ran: server n, CPU ms max/sum, wall ms max; workers n, CPU max")
    srv_all = [g[3] for g in seen if g[0] in servers]
    print(
        f"whole run: server {len(srv_all)}, CPU max {max(srv_all, default=0):.1f} ms; workers "
        f"{sum(1 for g in seen if g[0] not in servers)}"
    )
    for row, (t0, t1) in zip(rows, _PHASE_TIMES, strict=False):
        mine = [g for g in seen if t0 <= g[1] <= t1]
        srv = [g for g in mine if g[0] in servers]
        wrk = [g for g in mine if g[0] not in servers]
        cpu = [g[3] for g in srv]
        print(
            f"{row[0]:<10} {row[1]:<16} server {len(srv)}, CPU {max(cpu, default=0):.1f}/{sum(cpu):.1f} ms, wall "
            f"{max((g[2] for g in srv), default=0):.1f} ms, objects {max((g[4] for g in srv), default=0)}; "
            f"workers {len(wrk)}, CPU {max((g[3] for g in wrk), default=0):.1f} ms"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenants", default="2,4,8,16,32", help="comma-separated numbers of hostile tenants (pack)")
    ap.add_argument(
        "--scenarios",
        default="",
        help="KIND:N,... (pack, tools, setwise, conns, flood, bodies, tools5k); overrides --tenants",
    )
    ap.add_argument("--modes", default="processes", help="threads, processes, traced (comma-separated)")
    ap.add_argument("--victims", type=int, default=40, help="victim searches per phase")
    ap.add_argument("--phase-s", type=float, default=40.0, help="most seconds a phase's victim requests may take")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="the server's request_timeout_s")
    ap.add_argument("--conns", type=int, default=70, help="connections per tenant in flood and bodies")
    ap.add_argument("--long-prune", action="store_true", help="time a setwise prune alone and beside 3 light tenants")
    ap.add_argument("--deadline-s", type=float, default=0.0, help="check work past this deadline (HTTP and MCP)")
    ap.add_argument(
        "--stages",
        action="store_true",
        help="server_timing on: print where the victim's time went (median / mean of its slowest tenth, ms)",
    )
    ap.add_argument(
        "--gc", action="store_true", help="record the server's and workers' full garbage collections per phase"
    )
    ap.add_argument(
        "--flood-nice",
        type=int,
        default=0,
        help="also run each flood, bodies and conns phase with its client process niced by this much",
    )
    ap.add_argument(
        "--flood-client",
        choices=("raw", "httpx"),
        default="raw",
        help="the flood's client: raw asyncio streams (default; about a sixth of httpx's CPU per request) or httpx",
    )
    args = ap.parse_args()
    _FLOOD_CLIENT[0] = args.flood_client
    scenarios = _scenarios(args)
    most = max([n for k, n in scenarios if k != "conns"] + [3])
    rows: list[tuple[str, str, list[float], list[float], Counter[str], tuple[float, float]]] = []
    stage_rows: list[tuple[str, str, list[dict[str, float]]]] = []
    prunes: list[tuple[str, float, float, Counter[str]]] = []
    deadlines: list[tuple[str, float, str, float]] = []
    load0 = os.getloadavg()[0]
    server_pids: list[int] = []
    gc_lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        if args.gc:
            _GC_LOG.append(tmp / "gc.log")
        from admit.kb import KnowledgeBase

        kb = str(tmp / "kb.db")
        with KnowledgeBase(kb) as k:
            k.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            cfg, keys = _config(tmp, most, args.timeout_s, mode, args.stages)
            watch = MemoryWatch()
            with _serve(kb, cfg, keys, watch) as url:
                _victim(url, 5, 30)  # warm up
                watch.reset()
                stages: list[dict[str, float]] = []
                lat, health, ended = _phase(url, args, None, 0, stages=stages)
                rows.append((mode, "quiet", lat, health, ended, watch.reset()))
                stage_rows.append((mode, "quiet", stages))
                for kind, n in scenarios:
                    # the flood's client at the server's priority, then (--flood-nice) niced, as a flood from
                    # other machines would be: both figures printed
                    nices = [0, args.flood_nice] if args.flood_nice and kind in (*MANY, "conns") else [0]
                    for nice in nices:
                        name = f"{kind}:{n}" + (f" n{nice}" if nice else "")
                        stages = []
                        lat, health, ended = _phase(url, args, kind, n, nice, stages)
                        rows.append((mode, name, lat, health, ended, watch.reset()))
                        stage_rows.append((mode, name, stages))
                if args.long_prune:
                    alone, beside, ended = _long_prune(url)
                    prunes.append((mode, alone, beside, ended))
                server_pids.append(_PIDS[url])
            watch.stop()
        gc_lines = _GC_LOG[0].read_text("utf-8").splitlines() if _GC_LOG and _GC_LOG[0].exists() else []
        if args.deadline_s:
            deadlines = _deadlines(kb, tmp, args.deadline_s)
    print(
        f"victim /v1/search, {args.victims} sequential requests per phase (load 1-min: {load0:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end; {os.cpu_count()} CPUs)"
    )
    print(
        f"{'mode':<10} {'phase':<16} {'n':>4} {'p50 ms':>9} {'p99 ms':>9} {'p50 x':>7} {'p99 x':>7} "
        f"{'healthz p99':>12} {'new conn':>9} {'peak MB srv/all':>16}  requests ended"
    )
    base: dict[str, tuple[float, float]] = {}
    for (mode, name, lat, health, ended, (mem_server, mem_all)), fresh in zip(rows, _HEALTH_FRESH, strict=False):
        p50, p99 = statistics.median(lat), _pct(lat, 0.99)
        fp99 = _pct(fresh, 0.99) if fresh else float("nan")
        if name == "quiet":
            base[mode] = (p50, p99)
        q50, q99 = base[mode]
        hp99 = _pct(health, 0.99) if health else float("nan")
        done = ", ".join(f"{k}: {v}" for k, v in sorted(ended.items())) or "-"
        print(
            f"{mode:<10} {name:<16} {len(lat):>4} {p50:>9.1f} {p99:>9.1f} {p50 / q50:>7.2f} {p99 / q99:>7.2f} "
            f"{hp99:>10.1f}ms {fp99:>7.1f}ms {mem_server:>7.0f}/{mem_all:<8.0f}  {done}"
        )
    if args.stages:
        print("victim's time by stage, ms: median / mean of the slowest tenth (client: outside the server's total)")
        for (mode, name, stages), cpu, hs in zip(stage_rows, _CPU, _HEALTH_SERVER, strict=False):
            srv, workers, gen, bench, machine, loop_wait = cpu
            print(f"{mode:<10} {name:<16} {_stage_line(stages)}")
            at_server = f"{_pct(hs, 0.99):.1f}" if hs else "-"
            others = machine - srv - workers - gen - bench
            print(
                f"{'':<10} {'':<16} CPU, % of a core: server {srv:.0f}, workers {workers:.0f}, flood client "
                f"{gen:.0f}, this bench {bench:.0f}, other processes {others:.0f} (machine {machine:.0f} of "
                f"{100 * (os.cpu_count() or 1)}); server loop waiting for a core {loop_wait:.0f}%; /healthz p99 at "
                f"the server {at_server} ms"
            )
    if args.gc:
        _print_gc(rows, gc_lines, server_pids)
    for mode, alone, beside, ended in prunes:
        done = ", ".join(f"{k}: {v}" for k, v in sorted(ended.items())) or "-"
        print(
            f"{mode:<10} long prune: alone {alone:.0f} ms, beside 3 light tenants {beside:.0f} ms "
            f"({beside / alone:.2f}x); light requests ended {done}"
        )
    for face, past, outcome, cpu_after in deadlines:
        print(
            f"deadline {args.deadline_s:g} s, {face}: answered {past:+.2f} s past it ({outcome}); "
            f"server and workers used {cpu_after:.2f} CPU-s in the 5 s after"
        )


if __name__ == "__main__":
    main()
