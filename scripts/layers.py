#!/usr/bin/env python
"""The layers of ``src/admit`` as its import graph has them: for the closing note's "layers before and after".

``python scripts/layers.py [--src DIR] [--pyproject FILE]`` reads the layer list of the import-linter contract
"faces -> pipeline -> stages -> backends" (``--pyproject``, default this repository's) and the import graph of the
``admit`` package under ``--src`` (default this repository's ``src``; another checkout's, for a "before"), and
prints:

- the layers, top first, each with its modules;
- every import from a module of a lower layer to one of a higher layer (an arrow back up), by top-level module;
- every import cycle among the top-level modules of ``admit`` and among the siblings of each package below it
  (the "no import cycle ... at any depth" contract), as strongly connected groups.

Run the same layer list over two trees to compare them (``--pyproject`` from now, ``--src`` from before): a top-level
module the list does not name is reported as unplaced. Exits 0; it describes, ``lint-imports`` enforces.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "faces -> pipeline -> stages -> backends"

_GRAPH = """
import json, sys
import grimp
g = grimp.build_graph("admit", include_external_packages=False, cache_dir=None)
edges = sorted({(a, b) for a in g.modules for b in g.find_modules_directly_imported_by(a) if b.startswith("admit")})
print(json.dumps(edges))
"""


def layer_list(pyproject: Path) -> list[list[str]]:
    """The contract's layers, top first, each a list of top-level module names."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract.get("name") == CONTRACT:
            return [[m.strip() for m in layer.replace("|", ":").split(":")] for layer in contract["layers"]]
    raise SystemExit(f"{pyproject}: no contract named {CONTRACT!r}")


def import_edges(src: Path) -> list[tuple[str, str]]:
    """Every direct import between modules of ``admit`` under ``src`` (read in a fresh interpreter)."""
    import json

    out = subprocess.run(
        [sys.executable, "-c", _GRAPH], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(src)}
    )
    return [(a, b) for a, b in json.loads(out.stdout)]


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward(edges: list[tuple[str, str]], layers: list[list[str]]) -> tuple[dict[tuple[str, str], int], set[str]]:
    """Imports that go up a layer, counted by (importer, imported) top-level module; and the unplaced modules."""
    rank = {m: i for i, layer in enumerate(layers) for m in layer}
    up: dict[tuple[str, str], int] = {}
    unplaced: set[str] = set()
    for a, b in edges:
        ta, tb = _top(a), _top(b)
        if not ta or not tb or ta == tb:
            continue
        for t in (ta, tb):
            if t not in rank:
                unplaced.add(t)
        if ta in rank and tb in rank and rank[tb] < rank[ta]:
            up[(ta, tb)] = up.get((ta, tb), 0) + 1
    return up, unplaced


def sibling_cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """Groups of sibling modules (children of one package) that import each other in a circle, at any depth."""
    by_parent: dict[str, dict[str, set[str]]] = {}
    for a, b in edges:
        pa, pb = a.split("."), b.split(".")
        depth = 0
        while depth < min(len(pa), len(pb)) and pa[depth] == pb[depth]:
            depth += 1
        if depth == 0 or depth >= min(len(pa), len(pb)):
            continue  # not siblings below one package, or one contains the other
        parent = ".".join(pa[:depth])
        graph = by_parent.setdefault(parent, {})
        graph.setdefault(f"{parent}.{pa[depth]}", set()).add(f"{parent}.{pb[depth]}")
    return [group for graph in by_parent.values() for group in _strong_groups(graph) if len(group) > 1]


def _strong_groups(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def main() -> None:
    """Print the layers, the arrows back up and the cycles."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the folder holding the admit package")
    ap.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml", help="the layer list's file")
    args = ap.parse_args()
    layers = layer_list(args.pyproject)
    edges = import_edges(args.src.resolve())
    print(f"layers ({args.pyproject}), top first:")
    for i, layer in enumerate(layers, 1):
        print(f"  {i:2}. {' : '.join(layer)}")
    up, unplaced = upward(edges, layers)
    print(f"imports in {args.src}: {len(edges)} between modules of admit")
    print(f"arrows back up a layer: {sum(up.values())}")
    for (a, b), n in sorted(up.items()):
        print(f"  {a} -> {b} ({n})")
    if unplaced:
        print(f"top-level modules the list does not place: {', '.join(sorted(unplaced))}")
    cycles = sibling_cycles(edges)
    print(f"import cycles among siblings: {len(cycles)}")
    for group in cycles:
        print(f"  {' <-> '.join(group)}")


if __name__ == "__main__":
    main()
