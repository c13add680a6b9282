"""HTML ingest on hostile shapes: seconds to parse ~60 KB of each (nested tables, deep nesting, stray brackets).

PYTHONPATH=src python bench/bench_html.py            # this checkout's parser
PYTHONPATH=/path/to/old/src python bench/bench_html.py   # the parser to compare with
"""

from __future__ import annotations

import time
from collections.abc import Callable

from admit.kb.parse import parse_html

SIZE = 60_000


def nested_tables(n: int) -> str:
    return "<table><tr><td>cell text " * n + "</td></tr></table>" * n


def nested_tables_two_cells(n: int) -> str:
    return "<table><tr><td>left</td><td>right " * n + "</td></tr></table>" * n


def tables_8_deep(n: int) -> str:
    return ("<table><tr><td>cell text " * 8 + "</td></tr></table>" * 8) * n


def tables_600_deep(n: int) -> str:
    return "<table><tr><td>" * 600 + "<p>cell text</p>" * n + "</td></tr></table>" * 600


def deep_divs(n: int) -> str:
    return "<div>" * n + "<p>deep text</p>" + "</div>" * n


def stray_brackets(n: int) -> str:
    return "<p>" + "<a" * n + "</p>"


SHAPES: dict[str, Callable[[int], str]] = {
    "nested_tables": nested_tables,
    "nested_tables_two_cells": nested_tables_two_cells,
    "tables_8_deep": tables_8_deep,
    "tables_600_deep": tables_600_deep,
    "deep_divs": deep_divs,
    "stray_brackets": stray_brackets,
}


def sized(make: Callable[[int], str]) -> str:
    n = 1
    while len(make(n * 2)) <= SIZE:
        n *= 2
    lo, hi = n, n * 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(make(mid)) <= SIZE else (lo, mid)
    return "<html><body>" + make(lo) + "</body></html>"


def main() -> None:
    for name, make in SHAPES.items():
        page = sized(make)
        t = time.perf_counter()
        try:
            doc = parse_html(page, fallback_title="x")
            outcome = f"{sum(len(s.paragraphs) for s in doc.sections)} paragraphs"
        except ValueError as exc:  # refused: deeper than the parser goes
            outcome = f"refused: {exc}"
        dt = time.perf_counter() - t
        print(f"{name:26s} {len(page):7d} bytes  {dt:8.3f} s  {outcome}")


if __name__ == "__main__":
    main()
