"""A contract over every catalogued strategy's spec: no silent defaults. Its source modules exist and include the
module that defines it (so eval's cache key sees its code change), its default point and grid are valid settings,
and the facts other tables used to spell (baselines) are the spec's own."""

from __future__ import annotations

import importlib.util

import pytest

from admit.errors import ConfigError
from admit.prune import DEFAULT_STRATEGY, PruneSettings, StrategySpec, strategy_names, strategy_specs
from admit.prune.catalogue import BUILTIN_STRATEGIES
from admit.prune.settings import SETTING_KEYS
from admit.prune.top_n import TopNPruner

SPECS = {s.name: s for s in strategy_specs()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_spec_names_its_own_source(name: str) -> None:
    spec = SPECS[name]
    assert spec.source_modules, name
    for m in spec.source_modules:
        assert importlib.util.find_spec(m) is not None, (name, m)
    if name in BUILTIN_STRATEGIES:
        assert BUILTIN_STRATEGIES[name].split(":")[0] in spec.source_modules


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_default_point_and_grid_is_a_valid_setting(name: str) -> None:
    spec = SPECS[name]
    PruneSettings(strategy=name).with_overrides(dict(spec.default_params))  # raises on a bad default
    for key, values in spec.default_grid.items():
        assert key in spec.params or key in SETTING_KEYS, (name, key)
        for v in values:
            PruneSettings(strategy=name).with_overrides({key: v})


def test_the_baselines_are_declared_by_their_specs_and_the_default_is_catalogued() -> None:
    assert {n for n, s in SPECS.items() if s.baseline} == {"top_n", "score_threshold"}
    assert DEFAULT_STRATEGY in strategy_names()


def test_a_spec_derives_its_source_module_or_refuses() -> None:
    derived = StrategySpec(name="mine", build=_build)  # defined in this module: its source
    assert derived.source_modules == (__name__,)
    with pytest.raises(ConfigError, match="give source_modules"):
        StrategySpec(name="mine", build=eval("lambda res: None", {"__name__": "__main__"}))  # a script: no digest
    with pytest.raises(ConfigError, match="not importable"):
        StrategySpec(name="mine", build=_build, source_modules=("no_such_module_anywhere",))


def _build(res: object) -> TopNPruner:
    return TopNPruner()
