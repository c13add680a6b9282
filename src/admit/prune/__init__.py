"""Prune: drop the chunks the answer does not need, keep every one it does (bridges included).

Strategies (select by name): ``setwise`` (the embedded CPU strategy), ``graded`` (listwise LLM, five-level
rubric), ``select``, ``budget_select``, ``anchors``, and the baselines ``top_n`` and ``score_threshold``.
"""

from __future__ import annotations

from typing import Any

from admit.errors import ConfigError
from admit.prune.base import RUBRIC, Grade, GradedChunk, PruneOutcome, Pruner, apply_threshold, run_pruner

__all__ = [
    "RUBRIC",
    "STRATEGIES",
    "Grade",
    "GradedChunk",
    "PruneOutcome",
    "Pruner",
    "apply_threshold",
    "resolve_pruner",
    "run_pruner",
]

STRATEGIES = ("setwise", "graded", "select", "budget_select", "anchors", "top_n", "score_threshold")
_LLM_STRATEGIES = {"graded", "select", "budget_select", "anchors"}


def resolve_pruner(name: str, **kwargs: Any) -> Pruner:
    """Return the pruner for a strategy name.

    ``kwargs`` go to the strategy: LLM strategies take ``llm=`` (an :class:`~admit.backends.llms.LLM`, or
    ``llm_base_url``/``llm_model``); ``setwise`` takes ``scorer=`` or ``embedder=``.
    """
    if name == "top_n":
        from admit.prune.top_n import TopNPruner

        return TopNPruner()
    if name == "score_threshold":
        from admit.prune.score_threshold import ScoreThresholdPruner

        return ScoreThresholdPruner()
    if name == "setwise":
        from admit.prune.setwise import SetwisePruner

        return SetwisePruner(**kwargs)
    if name in _LLM_STRATEGIES:
        from admit.prune import llm_strategies

        return llm_strategies.build(name, **kwargs)
    raise ConfigError(f"Unknown pruning strategy {name!r}; known: {', '.join(STRATEGIES)}.")
