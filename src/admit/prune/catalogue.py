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

import functools
import importlib
import logging
import threading
from collections.abc import Callable
from importlib.metadata import entry_points

from admit.errors import ConfigError
from admit.prune.spec import StrategySpec

__all__ = [
    "BUILTIN_STRATEGIES",
    "ENTRY_POINT_GROUP",
    "find_strategy",
    "get_strategy",
    "reload_strategies",
    "strategy_names",
    "strategy_specs",
]

logger = logging.getLogger(__name__)

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


def _import_ref(ref: str) -> object:
    module, _, attr = ref.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class _Catalogue:
    """Names to loaders; a loader runs once, under a lock, and its spec is kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaders: dict[str, Callable[[], object]] | None = None
        self._specs: dict[str, StrategySpec | None] = {}

    def loaders(self) -> dict[str, Callable[[], object]]:
        with self._lock:
            if self._loaders is None:
                found: dict[str, Callable[[], object]] = {
                    name: functools.partial(_import_ref, ref) for name, ref in BUILTIN_STRATEGIES.items()
                }
                for ep in entry_points(group=ENTRY_POINT_GROUP):
                    if ep.name in BUILTIN_STRATEGIES or ep.name == "none":
                        logger.warning("strategy plug-in %r (%s) is ignored: the name is taken", ep.name, ep.value)
                        continue
                    found.setdefault(ep.name, ep.load)
                self._loaders = found
            return self._loaders

    def spec(self, name: str) -> StrategySpec | None:
        loader = self.loaders().get(name)
        if loader is None:
            return None
        with self._lock:
            if name in self._specs:
                return self._specs[name]
        try:
            obj = loader()
            spec = obj() if callable(obj) and not isinstance(obj, StrategySpec) else obj
            if not isinstance(spec, StrategySpec):
                raise TypeError(f"expected a StrategySpec, got {type(spec).__name__}")
            if spec.name != name:
                raise ValueError(f"the spec is named {spec.name!r}")
        except ModuleNotFoundError as exc:
            if name in BUILTIN_STRATEGIES:
                logger.info("strategy %r is not available in this build: %s", name, exc)
            else:
                logger.warning("strategy plug-in %r failed to load: %s", name, exc)
            spec = None
        except Exception as exc:
            if name in BUILTIN_STRATEGIES:
                raise
            logger.warning("strategy plug-in %r failed to load: %s: %s", name, type(exc).__name__, exc)
            spec = None
        with self._lock:
            self._specs[name] = spec
        return spec

    def reset(self) -> None:
        with self._lock:
            self._loaders = None
            self._specs = {}


_CATALOGUE = _Catalogue()


def strategy_names() -> tuple[str, ...]:
    """Every strategy name: the built-ins first, then the plug-ins (imports nothing)."""
    return tuple(_CATALOGUE.loaders())


def find_strategy(name: str) -> StrategySpec | None:
    """The spec of ``name``, or ``None`` when no strategy has that name (or it failed to load)."""
    return _CATALOGUE.spec(name)


def get_strategy(name: str) -> StrategySpec:
    """The spec of ``name``.

    Raises:
        ConfigError: No strategy has that name (the message lists the known ones).
    """
    spec = _CATALOGUE.spec(name)
    if spec is None:
        known = ", ".join(strategy_names())
        if name in _CATALOGUE.loaders():
            raise ConfigError(f"Pruning strategy {name!r} is not available here (it failed to load); known: {known}.")
        raise ConfigError(f"Unknown pruning strategy {name!r}; known: {known}.")
    return spec


def strategy_specs() -> tuple[StrategySpec, ...]:
    """The specs of every strategy that loads, in :func:`strategy_names` order."""
    return tuple(s for n in strategy_names() if (s := find_strategy(n)) is not None)


def reload_strategies() -> None:
    """Forget what was loaded; the next lookup reads the entry points again (tests, a freshly installed plug-in)."""
    _CATALOGUE.reset()
