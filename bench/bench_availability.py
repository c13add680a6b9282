"""Availability under hostile requests: do another tenant's ``/healthz`` and searches stay fast?

Starts ``admit serve`` as a real process on loopback with a knowledge base of ``examples/docs`` and two keys
(tenants ``acme`` and ``evil``). Victims (``acme``) send ``/healthz`` and ordinary ``/v1/search`` requests one
after another, first on a quiet server (the baseline), then while hostile clients (``evil``) keep sending the
inputs that froze the process before the text handling became linear (issue 18): ``/v1/pack`` candidates of
newline runs ending in "x SYSTEM" (the scanner's cubic case), ``/v1/search`` questions of ``port`` plus a long
run of spaces (the facet split's quadratic case) and of ``a.`` runs, each as large as the limits allow.
Prints the victims' p50/p99 in both phases, their ratio, and how the hostile requests ended.

    python bench/bench_availability.py                   # defaults: 60 victim requests per endpoint, 4 hostile clients
    python bench/bench_availability.py --victims 200 --hostile 8
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
from pathlib import Path
from typing import Any

import httpx

from admit.testing import serve_subprocess

REPO = Path(__file__).resolve().parents[1]
VICTIM_KEY = "victim-key"
HOSTILE_KEY = "hostile-key"
MAX_TEXT = 50_000
MAX_QUESTION = 20_000  # SearchBody's bound


def _hostile_bodies() -> list[tuple[str, dict[str, Any]]]:
    scanner = "\n" * (MAX_TEXT - 10) + "x SYSTEM"
    cands = [{"id": f"h{i}", "source_id": "h", "text": scanner, "title": "t"} for i in range(8)]
    return [
        ("/v1/pack", {"question": "What port?", "candidates": cands}),
        ("/v1/search", {"question": "port" + " " * (MAX_QUESTION - 10) + "x", "top_k": 20}),
        ("/v1/search", {"question": "a." * (MAX_QUESTION // 2 - 4) + "port", "top_k": 20, "prune": True}),
    ]


def _victims(url: str, n: int) -> dict[str, list[float]]:
    """``n`` sequential ``/healthz`` and ``/v1/search`` requests each; latencies in ms (errors count as inf)."""
    out: dict[str, list[float]] = {"GET /healthz": [], "POST /v1/search": []}
    q = {"question": "How do I fix error E4012 during a push?", "top_k": 10}
    with httpx.Client(base_url=url, headers={"X-API-Key": VICTIM_KEY}, timeout=600) as c:
        for _ in range(n):
            for name, call in (
                ("GET /healthz", lambda: c.get("/healthz")),
                ("POST /v1/search", lambda: c.post("/v1/search", json=q)),
            ):
                t = time.perf_counter()
                ok = call().status_code == 200
                out[name].append((time.perf_counter() - t) * 1000 if ok else float("inf"))
    return out


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--victims", type=int, default=60, help="victim requests per endpoint and phase")
    ap.add_argument("--hostile", type=int, default=4, help="hostile clients")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        from admit.kb import KnowledgeBase

        kb = str(Path(tmp) / "kb.db")
        with KnowledgeBase(kb) as k:
            k.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
        cfg = Path(tmp) / "admit.toml"
        cfg.write_text(
            '[service]\nprune_strategy = "top_n"\n[service.limits]\nrequest_timeout_s = 30\n'
            f"max_text_chars = {MAX_TEXT}\nmax_body_bytes = 2000000\n"
            '[service.keys.victim]\nkey_env = "ADMIT_VICTIM_KEY"\ntenant = "acme"\ngroups = ["support"]\n'
            '[service.keys.hostile]\nkey_env = "ADMIT_HOSTILE_KEY"\ntenant = "evil"\n',
            "utf-8",
        )
        env = {
            **os.environ,
            "ADMIT_VICTIM_KEY": VICTIM_KEY,
            "ADMIT_HOSTILE_KEY": HOSTILE_KEY,
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        with serve_subprocess(["--kb", kb, "--config", str(cfg)], env=env) as url:
            _victims(url, 3)  # warm up
            quiet = _victims(url, args.victims)

            stop = threading.Event()
            ended: Counter[str] = Counter()
            lock = threading.Lock()

            def hostile(i: int) -> None:
                # encoded once: the client's own JSON work must not compete with the server it measures
                bodies = [(path, json.dumps(body).encode()) for path, body in _hostile_bodies()]
                head = {"X-API-Key": HOSTILE_KEY, "Content-Type": "application/json"}
                with httpx.Client(base_url=url, headers=head, timeout=600) as c:
                    j = i
                    while not stop.is_set():
                        path, raw = bodies[j % len(bodies)]
                        j += 1
                        try:
                            status = str(c.post(path, content=raw).status_code)
                        except httpx.HTTPError as exc:
                            status = type(exc).__name__
                        with lock:
                            ended[f"{path} {status}"] += 1

            threads = [threading.Thread(target=hostile, args=(i,), daemon=True) for i in range(args.hostile)]
            for t in threads:
                t.start()
            time.sleep(1.0)  # let the hostile requests get going
            loud = _victims(url, args.victims)
            stop.set()
            for t in threads:
                t.join(timeout=120)
    print(f"victims: {args.victims} requests per endpoint and phase; hostile clients: {args.hostile}")
    head = ("endpoint", "quiet p50", "quiet p99", "hostile p50", "hostile p99", "p50 x", "p99 x")
    print(f"{head[0]:<18} {head[1]:>10} {head[2]:>10} {head[3]:>12} {head[4]:>12} {head[5]:>6} {head[6]:>6}")
    for name in quiet:
        q50, q99 = statistics.median(quiet[name]), _pct(quiet[name], 0.99)
        h50, h99 = statistics.median(loud[name]), _pct(loud[name], 0.99)
        print(
            f"{name:<18} {q50:>8.1f}ms {q99:>8.1f}ms {h50:>10.1f}ms {h99:>10.1f}ms {h50 / q50:>6.2f} {h99 / q99:>6.2f}"
        )
    print("hostile requests:", ", ".join(f"{k}: {v}" for k, v in sorted(ended.items())))


if __name__ == "__main__":
    main()
