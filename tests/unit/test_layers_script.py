"""``scripts/layers.py``: what it calls an arrow back up and a cycle (the closing note's layers before and after)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layers_script", ROOT / "scripts" / "layers.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["layers_script"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_an_import_from_a_lower_layer_up_is_counted_by_module(layers: ModuleType) -> None:
    order = [["cli"], ["pipeline"], ["prune", "answerability"], ["types"]]
    edges = [
        ("admit.cli", "admit.pipeline"),
        ("admit.prune.base", "admit.pipeline"),  # up
        ("admit.prune.verdicts", "admit.pipeline.x"),  # up, same pair
        ("admit.prune", "admit.answerability"),  # one layer: allowed
        ("admit.types", "admit.newthing"),  # not placed
    ]
    up, unplaced = layers.upward(edges, order)
    assert up == {("prune", "pipeline"): 2}
    assert unplaced == {"newthing"}


def test_a_cycle_among_siblings_is_found_at_any_depth(layers: ModuleType) -> None:
    edges = [
        ("admit.prune.verdicts", "admit.answerability.terms"),
        ("admit.answerability", "admit.prune.base"),
        ("admit.kb.parse", "admit.kb.docsite.walk"),
        ("admit.kb.docsite", "admit.kb.parse"),
        ("admit.kb", "admit.kb.parse"),  # a package importing its child is no cycle
        ("admit.kb.home", "admit.kb.parse"),
    ]
    assert sorted(layers.sibling_cycles(edges)) == [
        ["admit.answerability", "admit.prune"],
        ["admit.kb.docsite", "admit.kb.parse"],
    ]


def test_this_tree_has_no_arrow_back_up_and_no_cycle(layers: ModuleType) -> None:
    edges = layers.import_edges(ROOT / "src")
    up, _ = layers.upward(edges, layers.layer_list(ROOT / "pyproject.toml"))
    assert up == {}
    assert layers.sibling_cycles(edges) == []
