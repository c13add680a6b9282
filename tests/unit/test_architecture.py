"""The import rules of docs/architecture.md, checked by import-linter (contracts in pyproject.toml).

faces (cli, service, adapters) -> eval -> kb -> pipeline -> stages -> backends -> passages/_text -> types/errors;
no stage imports a face or eval, and no stage, kb or eval module imports a vendor module (or a vendor-backed
backend) directly.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is in the `test` extra")
    code = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "broken" in out and "0 broken" in out


def test_every_top_level_module_sits_in_a_layer() -> None:
    """A new module must be placed in the layers (else the contract silently ignores it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}
    src = ROOT / "src" / "admit"
    modules = {p.stem for p in src.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    outside = {"policies"}  # data
    assert modules - placed - outside == set()
    # the contract suites for backend authors sit on top, beside the CLI: no module of admit may import them
    assert {name.strip() for name in layers[0].replace("|", ":").split(":")} == {"cli", "testing"}


def test_one_decision_above_prune_and_answerability() -> None:
    """``admit.decide`` joins the pruner and the verdict: neither package imports the other, directly or through
    another module, and nothing below ``decide`` imports it (the contracts say the same; this reads the graph)."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the `test` extra)")
    graph = grimp.build_graph("admit", cache_dir=None)
    for a, b in (("admit.prune", "admit.answerability"), ("admit.answerability", "admit.prune")):
        assert not graph.chain_exists(importer=a, imported=b, as_packages=True), f"{a} reaches {b}"
    for low in ("admit.prune", "admit.answerability", "admit.outcome"):
        assert not graph.chain_exists(importer=low, imported="admit.decide", as_packages=True)
    assert "admit.prune.verdicts" not in graph.modules


def test_the_contracts_forbid_cycles_and_keep_the_two_stages_apart() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert any(c["type"] == "acyclic_siblings" and c["ancestors"] == ["admit"] for c in contracts)
    assert any(
        c["type"] == "independence" and set(c["modules"]) == {"admit.prune", "admit.answerability"} for c in contracts
    )
