"""How much ``/metrics`` grows under requests with random HTTP methods (the label-cardinality check).

Usage: ``python bench/bench_metrics_labels.py --requests 2000``. Prints the exposition's size and line count
before and after; with bounded labels the growth is the ``other`` series, once.
"""

from __future__ import annotations

import argparse
import random
import string

import httpx

from admit.service.http import LoopbackServer, create_app


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with LoopbackServer(create_app()) as srv, httpx.Client(base_url=srv.url) as c:
        c.get("/healthz")
        before = c.get("/metrics").text
        for _ in range(args.requests):
            method = "".join(rng.choices(string.ascii_uppercase + string.digits, k=8))
            c.request(method, rng.choice(["/healthz", "/v1/search", "/nope"]))
        after = c.get("/metrics").text
    print(
        f"/metrics {len(before):,} bytes -> {len(after):,} bytes after {args.requests:,} random methods; "
        f"lines {len(before.splitlines())} -> {len(after.splitlines())}"
    )


if __name__ == "__main__":
    main()
