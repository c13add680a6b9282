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
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
VICTIM_KEY = "victim-key"
QUESTION = "How do I fix error E4012 during a push?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def _config(tmp: Path, tenants: int, timeout_s: float) -> tuple[Path, dict[str, str]]:
    lines = [
        '[service]\nprune_strategy = "top_n"\n',
        f"[service.limits]\nrequest_timeout_s = {timeout_s}\n",
        '[service.keys.victim]\nkey_env = "ADMIT_VICTIM_KEY"\ntenant = "acme"\ngroups = ["support"]\n',
    ]
    env = {"ADMIT_VICTIM_KEY": VICTIM_KEY}
    for i in range(tenants):
        lines.append(f'[service.keys.h{i}]\nkey_env = "ADMIT_H{i}_KEY"\ntenant = "evil{i}"\n')
        env[f"ADMIT_H{i}_KEY"] = f"hostile-key-{i}"
    cfg = tmp / "admit.toml"
    cfg.write_text("".join(lines), "utf-8")
    return cfg, env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenants", default="2,4,8,16,32", help="comma-separated numbers of hostile tenants")
    ap.add_argument("--victims", type=int, default=40, help="victim searches per phase")
    ap.add_argument("--phase-s", type=float, default=40.0, help="most seconds a phase's victim requests may take")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="the server's request_timeout_s")
    args = ap.parse_args()
    counts = [int(x) for x in args.tenants.split(",") if x.strip()]
    rows: list[tuple[str, list[float], Counter[str]]] = []
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        from admit.kb import KnowledgeBase

        kb = str(tmp / "kb.db")
        with KnowledgeBase(kb) as k:
            k.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
        cfg, keys = _config(tmp, max(counts, default=0), args.timeout_s)
        port = _free_port()
        env = {**os.environ, **keys, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        cmd = [sys.executable, "-c", "from admit.cli import main; main()", "serve", "--kb", kb, "--config", str(cfg)]
        proc = subprocess.Popen([*cmd, "--port", str(port), "--log-level", "warning"], env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("server did not start")
                time.sleep(0.2)
            _victim(url, 5, 30)  # warm up
            rows.append(("quiet", _victim(url, args.victims, args.phase_s), Counter()))
            lock = threading.Lock()
            for n in counts:
                stop = threading.Event()
                ended: Counter[str] = Counter()

                def hostile(i: int, stop: threading.Event = stop, ended: Counter[str] = ended) -> None:
                    body = hostile_body(f"evil{i}")
                    head = {"X-API-Key": f"hostile-key-{i}", "Content-Type": "application/json"}
                    with httpx.Client(base_url=url, headers=head, timeout=120) as c:
                        while not stop.is_set():
                            try:
                                status = str(c.post("/v1/pack", content=body).status_code)
                            except httpx.HTTPError as exc:
                                status = type(exc).__name__
                            with lock:
                                ended[status] += 1

                threads = [threading.Thread(target=hostile, args=(i,), daemon=True) for i in range(n)]
                for t in threads:
                    t.start()
                time.sleep(3.0 + 0.25 * n)  # every hostile tenant has had a request admitted
                lat = _victim(url, args.victims, args.phase_s)
                stop.set()
                for t in threads:
                    t.join(timeout=args.timeout_s + 30)
                rows.append((f"{n} hostile", lat, ended))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    q50, q99 = statistics.median(rows[0][1]), _pct(rows[0][1], 0.99)
    print(f"victim /v1/search, {args.victims} sequential requests per phase (load: {os.getloadavg()[0]:.1f})")
    print(f"{'phase':<12} {'n':>4} {'p50 ms':>9} {'p99 ms':>9} {'p50 x':>7} {'p99 x':>7}  hostile packs ended")
    for name, lat, ended in rows:
        p50, p99 = statistics.median(lat), _pct(lat, 0.99)
        done = ", ".join(f"{k}: {v}" for k, v in sorted(ended.items())) or "-"
        print(f"{name:<12} {len(lat):>4} {p50:>9.1f} {p99:>9.1f} {p50 / q50:>7.2f} {p99 / q99:>7.2f}  {done}")


if __name__ == "__main__":
    main()
