"""Prune: drop the chunks the answer does not need, keep every one it does (bridges included).

Strategies are found by name in the :mod:`~admit.prune.catalogue`: the shipped ones (``setwise``, the embedded
CPU strategy; ``graded``, listwise LLM on the five-level rubric; ``select``, ``budget_select``, ``anchors``; the
baselines ``top_n`` and ``score_threshold``) and any a package registers in the ``admit.strategies`` entry-point
group. Each declares a :class:`~admit.prune.spec.StrategySpec` beside its pruner.
"""

from __future__ import annotations

from typing import Any

from admit.prune.base import RUBRIC, Grade, GradedChunk, PruneOutcome, Pruner, apply_threshold, run_pruner
from admit.prune.catalogue import DEFAULT_STRATEGY, find_strategy, get_strategy, strategy_names, strategy_specs
from admit.prune.settings import PruneSettings
from admit.prune.spec import PrunerResources, StrategySpec

__all__ = [
    "DEFAULT_STRATEGY",
    "RUBRIC",
    "Grade",
    "GradedChunk",
    "PruneOutcome",
    "PruneSettings",
    "Pruner",
    "PrunerResources",
    "StrategySpec",
    "apply_threshold",
    "find_strategy",
    "get_strategy",
    "resolve_pruner",
    "run_pruner",
    "strategy_names",
    "strategy_specs",
]


def resolve_pruner(name: str, resources: PrunerResources | None = None, /, **kwargs: Any) -> Pruner:
    """Return the pruner of the strategy ``name``, built by its spec from ``resources``.

    ``kwargs`` are the flat spelling of :class:`PrunerResources`: keys naming a field set it (``llm=``,
    ``embedder=``, ``llm_base_url=`` ...), any other key is a constructor option of this strategy
    (``concurrency=``, ``n=`` ...).

    Example:
        >>> resolve_pruner("top_n").name
        'top_n'
    """
    spec = get_strategy(name)
    res = resources if resources is not None else PrunerResources()
    if kwargs:
        flat = PrunerResources.from_options(kwargs, strategy=name)
        res = _merge(res, flat)
    return spec.build(res)


def _merge(base: PrunerResources, more: PrunerResources) -> PrunerResources:
    from dataclasses import fields, replace

    changes: dict[str, Any] = {
        f.name: getattr(more, f.name) for f in fields(more) if f.name != "options" and getattr(more, f.name) is not None
    }
    options = {**base.options, **{k: {**base.options.get(k, {}), **v} for k, v in more.options.items()}}
    return replace(base, **changes, options=options)
