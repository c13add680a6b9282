"""A strategy declares its on/off resources in its spec (:attr:`StrategySpec.switches`), and every face spells
and reads them from there: the command line's options and variables, the service's settings and variables, and
the resources they turn into (:func:`admit.prune.catalogue.switch_resources`)."""

from __future__ import annotations

from typing import Any

import click
import pytest

import admit.prune.catalogue as catalogue
from admit.errors import ConfigError
from admit.prune.catalogue import get_strategy, strategy_switches, switch_resources
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

    commands = _commands(main)
    readers = {n: c for n, c in commands.items() if any(p.name == "setwise_cross" for p in c.params)}
    assert {"pack", "prune", "search", "eval"} <= set(readers)
    for key, (strategy, sw) in strategy_switches().items():
        for name, cmd in readers.items():
            opt = next((p for p in cmd.params if p.name == key), None)
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
