"""A strategy declares its on/off resources in its spec (:attr:`StrategySpec.switches`), and every face spells
and reads them from there: the command line's options and variables, the service's settings and variables, and
the resources they turn into (:func:`admit.prune.catalogue.switch_resources`)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import admit.prune.catalogue as catalogue
from admit.cli._resources import SwitchCommand, llm_and_setwise_options
from admit.errors import ConfigError
from admit.prune.catalogue import declared_switches, get_strategy, strategy_switches, switch_resources
from admit.prune.spec import StrategySpec, Switch


def _commands(group: click.Group) -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out.update({f"{name} {k}": v for k, v in _commands(cmd).items()})
        else:
            out[name] = cmd
    return out


def test_setwise_declares_its_switches() -> None:
    assert [sw.resource for sw in get_strategy("setwise").switches] == ["cross", "multilingual"]
    assert set(strategy_switches()) >= {"setwise_cross", "setwise_multilingual"}


def test_the_command_line_spells_each_switch_as_its_spec_does() -> None:
    from admit.cli import main

    commands = {n: (c, c.get_params(click.Context(c))) for n, c in _commands(main).items()}
    readers = {n: ps for n, (c, ps) in commands.items() if any(p.name == "setwise_cross" for p in ps)}
    assert {"pack", "prune", "search", "eval", "replay"} <= set(readers)
    for key, (strategy, sw) in strategy_switches().items():
        for name, params in readers.items():
            opt = next((p for p in params if p.name == key), None)
            assert isinstance(opt, click.Option), f"admit {name} has no {sw.option(strategy)}"
            assert f"{' / '.join(opt.opts + opt.secondary_opts)}" == sw.option(strategy).replace("/", " / ")
            assert opt.envvar == sw.env(strategy) and opt.help == sw.help


def test_the_service_reads_each_switch_from_its_setting_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from admit.service.config import ServiceSettings

    for key, (strategy, sw) in strategy_switches().items():
        assert key in ServiceSettings.model_fields
        monkeypatch.setenv(sw.env(strategy), "0")
        assert getattr(ServiceSettings(), key) is False
        assert getattr(ServiceSettings.model_validate({key: True}), key) is True  # the file wins
    assert ServiceSettings().pruner_switches() == {"cross": False, "multilingual": False}


def test_a_new_strategys_switch_reaches_the_resources_with_no_face_edited(monkeypatch: pytest.MonkeyPatch) -> None:
    real = catalogue.strategy_specs()
    mine = StrategySpec(
        name="mine",
        build=lambda res: None,  # type: ignore[arg-type,return-value]
        source_modules=("admit.prune.top_n",),
        switches=(Switch(resource="window", help="w"), Switch(resource="cache", help="c", available=lambda: False)),
    )

    def specs() -> tuple[Any, ...]:
        return (*real, mine)

    monkeypatch.setattr(catalogue, "strategy_specs", specs)
    assert switch_resources({"mine_window": True, "mine_cache": True, "setwise_cross": None}) == {
        "window": True,
        "cache": False,  # "on" where it cannot be had is off
    }
    with pytest.raises(ConfigError, match="did you mean 'mine_window'"):
        switch_resources({"mine_windw": True})


def test_the_specs_switches_are_read_from_their_source_as_they_are_declared() -> None:
    def facts(switches: dict[str, tuple[str, Switch]]) -> dict[str, tuple[str, str, str]]:
        return {k: (n, sw.resource, sw.help) for k, (n, sw) in switches.items()}

    assert facts(declared_switches()) == facts(strategy_switches())


_PLUGIN = """
from admit.prune.spec import StrategySpec, Switch

def _build(res):
    raise AssertionError("not built here")

SPEC = StrategySpec(
    name="mine",
    build=_build,
    source_modules=("admit.prune.top_n",),
    switches=(Switch(resource="window", help="Whether mine reads a " "window."),),
)
"""


def _install(source: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A plug-in strategy ``mine`` in a module of its own (entry point ``NAME:SPEC``), not imported yet."""
    name = f"{prefix}_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = catalogue._CATALOGUE.plugins
    monkeypatch.setattr(plugins, "_refs", {**plugins.refs(), "mine": f"{name}:SPEC"})
    monkeypatch.setattr(plugins, "_loaded", {})
    monkeypatch.setattr(catalogue._CATALOGUE, "_specs", {})
    return name


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return _install(_PLUGIN, "mine_strategy", tmp_path, monkeypatch)


def test_a_plugin_strategys_switch_is_a_command_line_option_with_no_face_edited(plugin: str) -> None:
    @click.command(cls=SwitchCommand)
    @llm_and_setwise_options()
    def cmd(pruner_options: dict[str, Any]) -> None:
        click.echo(json.dumps(pruner_options, sort_keys=True))

    shown = CliRunner().invoke(cmd, ["--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "--mine-window / --no-mine-window" in shown.output and "Whether mine reads a window." in shown.output
    assert plugin not in sys.modules  # the help read the spec's source; the strategy was not imported
    ran = CliRunner().invoke(cmd, ["--mine-window", "--no-setwise-cross"], catch_exceptions=False)
    assert json.loads(ran.output) == {"cross": False, "window": True}
    by_env = CliRunner().invoke(cmd, [], env={"ADMIT_MINE_WINDOW": "1"}, catch_exceptions=False)
    assert json.loads(by_env.output) == {"window": True}


def test_a_spec_made_by_code_is_imported_to_read_its_switches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _PLUGIN.replace("SPEC = StrategySpec(", "def _make():\n    return StrategySpec(") + "\nSPEC = _make()\n"
    name = _install(made, "made_strategy", tmp_path, monkeypatch)
    assert name not in sys.modules
    assert declared_switches()["mine_window"][1].resource == "window"
    assert name in sys.modules
