"""The strategy catalogue: every pruning strategy by name, the built-ins and third-party ones through one door.

Built-in strategies are listed in :data:`BUILTIN_STRATEGIES` as ``module:ATTRIBUTE`` references to their
:class:`~admit.prune.spec.StrategySpec`; a third-party package adds one with an entry point in the
``admit.strategies`` group (the way ``llm`` loads its plug-ins)::

    # pyproject.toml of the plug-in
    [project.entry-points."admit.strategies"]
    first_word = "my_package.first_word:SPEC"

Both are loaded the same way and lazily: listing the names imports nothing, looking a strategy up imports its
module once. A plug-in cannot replace a built-in (a warning says so, and the built-in stays); one that fails
to load is left out with a warning, so a broken plug-in never breaks admit.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from admit._plugins import SpecCatalogue
from admit.errors import ConfigError, unknown_name
from admit.prune.checks import Check
from admit.prune.settings import use_params_lookup
from admit.prune.spec import StrategySpec, Switch
from admit.types import DEFAULT_STRATEGY

__all__ = [
    "BUILTIN_STRATEGIES",
    "DEFAULT_STRATEGY",
    "ENTRY_POINT_GROUP",
    "declared_switches",
    "find_strategy",
    "get_strategy",
    "reload_strategies",
    "strategy_names",
    "strategy_specs",
    "strategy_switches",
    "switch_resources",
]

ENTRY_POINT_GROUP = "admit.strategies"
"""The entry-point group third-party strategies register in."""

BUILTIN_STRATEGIES: dict[str, str] = {
    "setwise": "admit.prune.setwise:SPEC",
    "graded": "admit.prune.graded:SPEC",
    "select": "admit.prune.select:SPEC",
    "budget_select": "admit.prune.budget_select:SPEC",
    "anchors": "admit.prune.anchors:SPEC",
    "top_n": "admit.prune.top_n:SPEC",
    "score_threshold": "admit.prune.score_threshold:SPEC",
}
"""The shipped strategies, in the order help texts and ``--prune all`` list them."""


_CATALOGUE: SpecCatalogue[StrategySpec] = SpecCatalogue(
    "pruning strategy", ENTRY_POINT_GROUP, BUILTIN_STRATEGIES, StrategySpec, reserved=frozenset({"none"})
)


def strategy_names() -> tuple[str, ...]:
    """Every strategy name: the built-ins first, then the plug-ins (imports nothing)."""
    return _CATALOGUE.names()


def find_strategy(name: str) -> StrategySpec | None:
    """The spec of ``name``, or ``None`` when no strategy has that name (or it failed to load)."""
    return _CATALOGUE.find(name)


def get_strategy(name: str) -> StrategySpec:
    """The spec of ``name``.

    Raises:
        ConfigError: No strategy has that name (the message lists the known ones).
    """
    return _CATALOGUE.get(name)


def strategy_specs() -> tuple[StrategySpec, ...]:
    """The specs of every strategy that loads, in :func:`strategy_names` order."""
    return _CATALOGUE.specs()


def reload_strategies() -> None:
    """Forget what was loaded; the next lookup reads the entry points again (tests, a freshly installed plug-in)."""
    _CATALOGUE.reset()


def _params(strategy: str) -> Mapping[str, Check] | None:
    spec = find_strategy(strategy)
    return None if spec is None else spec.params


use_params_lookup(_params)  # the settings below check strategy parameters against the specs


def strategy_switches() -> dict[str, tuple[str, Switch]]:
    """Every strategy's switches by key (``setwise_cross``), with the strategy's name: what the faces spell."""
    return {sw.key(spec.name): (spec.name, sw) for spec in strategy_specs() for sw in spec.switches}


def declared_switches() -> dict[str, tuple[str, Switch]]:
    """:func:`strategy_switches` for a help text: read from each spec's source where it declares its switches as
    literals (the way setuptools reads ``attr:`` values without importing the module), else from the imported spec.

    ``admit search --help`` lists ``--setwise-cross`` without loading setwise (numpy); a spec built by code is
    imported. Only ``resource`` and ``help`` are read this way (:meth:`Switch.value` needs the imported spec:
    :func:`switch_resources` imports it).
    """
    out: dict[str, tuple[str, Switch]] = {}
    refs = _CATALOGUE.plugins.refs()
    for name in strategy_names():
        switches = _literal_switches(refs[name])
        if switches is None:
            spec = find_strategy(name)
            switches = spec.switches if spec is not None else ()
        out.update({sw.key(name): (name, sw) for sw in switches})
    return out


def _literal_switches(ref: str) -> tuple[Switch, ...] | None:
    """The switches of the ``module:NAME = StrategySpec(...)`` that ``ref`` names, read from the module's source;
    ``None`` when the module is loaded already (its spec is at hand) or the declaration is not literal."""
    module, _, attr = ref.partition(":")
    if not attr.isidentifier() or module in sys.modules:
        return None
    try:
        found = importlib.util.find_spec(module)
        source = Path(found.origin).read_text(encoding="utf-8") if found and found.origin else ""
        tree = ast.parse(source)
    except (ImportError, ValueError, OSError, SyntaxError):
        return None
    call = next((v for n in tree.body if (v := _assigned(n, attr)) is not None), None)
    if not isinstance(call, ast.Call) or _called(call) != "StrategySpec" or any(k.arg is None for k in call.keywords):
        return None  # built by a function, or with ``**kwargs``: not literal
    declared = next((k.value for k in call.keywords if k.arg == "switches"), ast.Tuple(elts=[]))
    if not isinstance(declared, ast.Tuple | ast.List):
        return None
    switches = [_literal_switch(el) for el in declared.elts]
    return tuple(sw for sw in switches if sw is not None) if None not in switches else None


def _assigned(node: ast.stmt, name: str) -> ast.expr | None:
    """The value ``node`` assigns to ``name`` (``NAME = ...`` or ``NAME: T = ...``), else ``None``."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
        return node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
        return node.value
    return None


def _called(call: ast.Call) -> str:
    """The name a call calls (``Switch`` for ``Switch(...)`` and ``spec.Switch(...)``)."""
    return str(getattr(call.func, "id", getattr(call.func, "attr", "")))


def _literal_switch(node: ast.expr) -> Switch | None:
    """``Switch(resource="...", help="...", ...)`` as a :class:`Switch` of those two; ``None``: not that."""
    if not isinstance(node, ast.Call) or node.args or _called(node) != "Switch":
        return None
    given = {k.arg: k.value for k in node.keywords}
    try:
        resource, text = ast.literal_eval(given["resource"]), ast.literal_eval(given["help"])
    except (KeyError, ValueError, TypeError, SyntaxError):  # absent, or not a literal
        return None
    return Switch(resource=resource, help=text) if isinstance(resource, str) and isinstance(text, str) else None


def switch_resources(values: Mapping[str, bool | None]) -> dict[str, Any]:
    """The :class:`~admit.prune.spec.PrunerResources` fields the switches a face read stand for, by key
    (``{"setwise_cross": True}`` -> ``{"cross": True}``); ``None`` (not given) sets nothing.

    Raises:
        ConfigError: A key no strategy declares.
    """
    switches = strategy_switches()
    out: dict[str, Any] = {}
    for key, on in values.items():
        if key not in switches:
            raise ConfigError(unknown_name("switch", key, switches))
        sw = switches[key][1]
        if on is not None:
            out[sw.resource] = sw.value(on)
    return out
