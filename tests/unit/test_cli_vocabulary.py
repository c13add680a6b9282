"""One vocabulary across the ``admit`` commands, checked on the click tree itself (no process started)."""

from __future__ import annotations

import click
import pytest

from admit.cli import main

COMMANDS = sorted(main.commands)
# commands that print a result (serve and mcp serve; they print none; inspect writes an HTML page)
RESULT_COMMANDS = ["adapt", "copy", "eval", "ingest", "pack", "policy", "prune", "replay", "schema", "search"]


def _options(name: str) -> dict[str, click.Option]:
    cmd = main.commands[name]
    return {opt: p for p in cmd.params if isinstance(p, click.Option) for opt in p.opts}


def test_every_command_is_registered() -> None:
    assert sorted([*RESULT_COMMANDS, "inspect", "mcp", "serve"]) == COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_every_visible_option_has_help_text(name: str) -> None:
    cmd = main.commands[name]
    assert cmd.help and cmd.help.strip()
    visible = [p for p in cmd.params if isinstance(p, click.Option) and not p.hidden]
    missing = [p.name for p in visible if not (p.help or "").strip()]
    assert not missing, f"admit {name}: options without help: {missing}"


@pytest.mark.parametrize("name", RESULT_COMMANDS)
def test_every_command_that_prints_a_result_has_json(name: str) -> None:
    opt = _options(name).get("--json")
    assert opt is not None and opt.is_flag and opt.name == "as_json"


@pytest.mark.parametrize("name", ["eval", "mcp", "pack", "prune", "search"])
def test_prune_names_a_strategy_on_every_command_that_prunes(name: str) -> None:
    opt = _options(name)["--prune"]
    assert opt.name == "prune" and not opt.hidden
    assert "none" in (opt.help or "") and "setwise" in (opt.help or "")
    # the old spelling is a hidden alias, not a second vocabulary
    if "--strategy" in _options(name):
        assert _options(name)["--strategy"].hidden
    # --no-prune is what click suggests for a near miss, so --help shows it, as the spelling of --prune none
    # (issue 34 item 7)
    if "--no-prune" in _options(name):
        no = _options(name)["--no-prune"]
        assert not no.hidden and "--prune none" in (no.help or "")


@pytest.mark.parametrize("name", ["mcp", "search"])
def test_one_principal_syntax(name: str) -> None:
    opt = _options(name)["--principal"]
    assert opt.metavar == "tenant:T[,group:G...]" and not opt.hidden
    for old in ("--tenant", "--group"):
        if old in _options(name):
            assert _options(name)[old].hidden


def test_ingest_access_uses_the_principal_syntax() -> None:
    opts = _options("ingest")
    assert opts["--access"].metavar == "tenant:T[,group:G...]"
    assert opts["--tenant"].hidden and opts["--groups"].hidden


def test_stages_do_not_import_the_command_line() -> None:
    """Faces import stages, never the reverse: no module outside admit.cli imports it."""
    import ast
    from pathlib import Path

    import admit

    root = Path(admit.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.is_relative_to(root / "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "admit.cli" or n.startswith("admit.cli.") for n in names):
                offenders.append(str(path.relative_to(root)))
    assert not offenders, offenders
