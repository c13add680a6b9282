"""Injection-scanner figures on the held-out corpus (and the dev corpus the rules were tuned on).

``python bench/bench_injection_heldout.py`` prints, per file, the share of injections flagged (detection) and
the share of benign passages flagged (false positives). ``tests/security/injection_heldout.jsonl`` was written
before the rules were changed and is never used to tune them; ``injection_dev.jsonl`` is the tuning set.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from admit.security import flag_kinds

HERE = Path(__file__).resolve().parents[1] / "tests" / "security"


def rates(path: Path) -> dict[str, float | int]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    inj = [r for r in rows if r["label"] == "injection"]
    ben = [r for r in rows if r["label"] == "benign"]
    t0 = time.perf_counter()
    hit = sum(bool(flag_kinds(r["text"])) for r in inj)
    fp = sum(bool(flag_kinds(r["text"])) for r in ben)
    ms = 1000 * (time.perf_counter() - t0) / max(len(rows), 1)
    return {"injections": len(inj), "detected": hit, "benign": len(ben), "false_positives": fp, "ms_per_text": ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("files", nargs="*", default=["injection_heldout.jsonl", "injection_dev.jsonl"])
    args = ap.parse_args()
    for name in args.files:
        r = rates(HERE / name)
        print(
            f"{name}: detected {r['detected']}/{r['injections']} ({100 * r['detected'] / r['injections']:.0f} %), "
            f"false positives {r['false_positives']}/{r['benign']} ({100 * r['false_positives'] / r['benign']:.0f} %), "
            f"{r['ms_per_text']:.2f} ms/text"
        )


if __name__ == "__main__":
    main()
