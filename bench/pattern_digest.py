"""A digest of every pattern admit registers (``admit._linear.REGISTRY``): each one's name, pattern and flags.

Run it with two trees on ``PYTHONPATH`` and compare: a change that only moves where patterns are declared (one
table a module instead of one ``compile`` call a pattern) must leave the digest equal. Every module of ``admit``
is imported (a module whose optional dependency is missing is named and skipped).

    PYTHONPATH=src python bench/pattern_digest.py [--list]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import pkgutil

import admit
from admit import _linear


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true", help="print each pattern's (name, pattern, flags) too")
    args = ap.parse_args()
    for m in pkgutil.walk_packages(admit.__path__, "admit."):
        if m.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(m.name)
        except ImportError as exc:
            print(f"skipped {m.name}: {exc}")
    rows = sorted((p.name, p.pattern, p.flags) for p in _linear.REGISTRY)
    if args.list:
        for row in rows:
            print(repr(row))
    print(f"{len(rows)} patterns, sha256 {hashlib.sha256(repr(rows).encode()).hexdigest()}")


if __name__ == "__main__":
    main()
