"""The strategy and store catalogues: built-ins and entry-point plug-ins through one door."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from admit.errors import ConfigError, RequestError
from admit.kb.stores import open_store, reload_stores, store_schemes
from admit.prune import PrunerResources, PruneSettings, find_strategy, get_strategy, resolve_pruner, strategy_names
from admit.prune.catalogue import BUILTIN_STRATEGIES, reload_strategies
from tests.unit._plugin_site import plugin_site

PLUGIN = """
from admit.prune.checks import int_at_least
from admit.prune.spec import StrategySpec
from admit.prune.top_n import TopNPruner

SPEC = StrategySpec(name="plug_top", build=lambda res: TopNPruner(), params={"n": int_at_least(0)})
SHADOW = StrategySpec(name="top_n", build=lambda res: TopNPruner())
BROKEN = "not a spec"


def open_mem(url, *, dim):
    from admit.kb.sqlite_store import SqliteStore

    return SqliteStore(":memory:", dim=dim)


def _lance(url, *, dim):
    from admit.kb.memory_store import MemoryStore

    return MemoryStore(dim=dim)


from admit.kb.store import StoreSpec

STORE = StoreSpec(schemes=("lance",), open=_lance, stored_embedder=lambda url: "fake:8")
"""


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def warnings_of_the_catalogue() -> Iterator[list[str]]:
    # a handler on the catalogue's own logger: what other tests did to logging's propagation cannot hide it
    # (a library's logging.config.dictConfig earlier in the session may have disabled existing loggers)
    logs = [logging.getLogger("admit.prune.catalogue"), logging.getLogger("admit._plugins")]
    saved = [(log.disabled, log.level) for log in logs]
    h = _Records()
    for log in logs:
        log.disabled = False
        log.setLevel(logging.WARNING)
        log.addHandler(h)
    try:
        yield h.lines
    finally:
        for log, (disabled, level) in zip(logs, saved, strict=True):
            log.removeHandler(h)
            log.disabled, log.level = disabled, level


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    plugin_site(
        tmp_path,
        monkeypatch,
        "catalogue_plugin",
        PLUGIN,
        "[admit.strategies]\nplug_top = catalogue_plugin:SPEC\ntop_n = catalogue_plugin:SHADOW\n"
        "broken = catalogue_plugin:BROKEN\nmissing = no_such_module_here:SPEC\n\n"
        "[admit.stores]\nmem = catalogue_plugin:open_mem\nsqlite = catalogue_plugin:open_mem\n"
        "lance = catalogue_plugin:STORE\nwrong = catalogue_plugin:STORE\n",
    )
    reload_strategies()
    reload_stores()
    yield
    reload_strategies()
    reload_stores()


def test_builtins_come_first_and_every_one_loads() -> None:
    assert strategy_names()[: len(BUILTIN_STRATEGIES)] == tuple(BUILTIN_STRATEGIES)
    for name in BUILTIN_STRATEGIES:
        spec = get_strategy(name)
        assert spec.name == name and spec.source_modules


def test_a_plugin_strategy_is_found_built_and_checked(plugins: None) -> None:
    assert "plug_top" in strategy_names()
    assert resolve_pruner("plug_top").name == "top_n"
    assert PruneSettings(strategy="plug_top", params={"n": 2}).params == {"n": 2}
    with pytest.raises(RequestError, match="unknown prune parameter `m` for strategy 'plug_top'"):
        PruneSettings(strategy="plug_top", params={"m": 2})


def test_a_plugin_cannot_replace_a_builtin(plugins: None, warnings_of_the_catalogue: list[str]) -> None:
    names = strategy_names()
    assert names.count("top_n") == 1
    assert get_strategy("top_n").default_grid  # the built-in's spec, not the plug-in's bare one
    assert any("ignored: the name is taken" in w for w in warnings_of_the_catalogue)


def test_a_broken_plugin_is_left_out_with_a_warning(plugins: None, warnings_of_the_catalogue: list[str]) -> None:
    assert find_strategy("broken") is None
    assert find_strategy("missing") is None
    text = "\n".join(warnings_of_the_catalogue)
    assert "expected a StrategySpec" in text and "no_such_module_here" in text
    with pytest.raises(ConfigError, match="failed to load"):
        get_strategy("broken")


def test_unknown_strategy_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="Unknown pruning strategy 'nope'; known: setwise, graded"):
        resolve_pruner("nope")


def test_resources_keep_one_strategys_options_to_itself() -> None:
    res = PrunerResources.from_options({"llm": "fake", "concurrency": 2}, strategy="graded")
    assert res.llm == "fake" and res.options_for("graded") == {"concurrency": 2} and res.options_for("select") == {}
    with pytest.raises(ConfigError, match=r"\['concurrency'\] are not pruner resources"):
        PrunerResources.from_options({"concurrency": 2})


def test_store_schemes_open_through_the_catalogue(plugins: None, tmp_path: Path) -> None:
    assert {"sqlite", "qdrant", "postgresql", "mem"} <= set(store_schemes())
    store = open_store("mem://anything", dim=8)
    try:
        assert type(store).__name__ == "SqliteStore" and store.dim == 8
    finally:
        store.close()
    s2 = open_store(f"sqlite://{tmp_path / 'kb.sqlite'}", dim=8)  # the built-in keeps its scheme
    try:
        assert (tmp_path / "kb.sqlite").is_file() and s2.dim == 8
    finally:
        s2.close()
    with pytest.raises(ConfigError, match="No store opens nope:// URLs"):
        open_store("nope://x", dim=8)


def test_a_store_plugin_declares_its_spec(plugins: None) -> None:
    from admit.kb.memory_store import MemoryStore
    from admit.kb.stores import stored_embedder

    store = open_store("lance://x", dim=8)
    assert isinstance(store, MemoryStore) and store.dim == 8
    assert stored_embedder("lance://x") == "fake:8"
    assert stored_embedder("mem://x") is None  # a bare factory whose module has no stored_embedder
    with pytest.raises(ConfigError, match="'wrong' for a spec of lance"):
        open_store("wrong://x", dim=8)
