"""The public base of LLM strategies: what a third-party LLM pruner subclasses and declares.

A strategy that shows candidate text to a language model subclasses :class:`LLMPruner` (the prompt with its
data boundary, windows, re-asks, the cache, cost and latency are done there) and fills in four hooks:
``instructions`` (the system message, with :func:`data_rules`), ``task``, ``schema`` and ``interpret`` (the
reply as grades by short id). Its module declares ``SPEC = llm_spec(NAME, ThePruner, params=LLM_PARAMS, ...)``
and its package an entry point in ``admit.strategies``::

    from admit.prune.llm import LLM_PARAMS, CallContext, LLMPruner, Rendered, data_rules, llm_spec, parse_grades

    class FirstPruner(LLMPruner):
        name = "first"
        def instructions(self, boundary, ctx): return f"Grade each chunk 1..5.\n{data_rules(boundary)}"
        def task(self, window, ctx): return "Grades as JSON only."
        def schema(self, window, ctx): return {"type": "object"}
        def interpret(self, text, window, ctx):
            p = parse_grades(text, [r.sid for r in window])
            return p.grades, p.missing, p.notes

    SPEC = llm_spec("first", FirstPruner, params=LLM_PARAMS, default_grid={"threshold": [2, 3]},
                    color="#777777", summary="first: an example LLM strategy")

``tests/integration/test_strategy_plugin.py`` runs such a plug-in through the catalogue.
"""

from __future__ import annotations

from admit.prune._llm_common import PROMPT_VERSION, CallContext, Rendered, data_rules, rubric_text
from admit.prune._llm_common import LLMPrunerBase as LLMPruner
from admit.prune._parsing import parse_grades, parse_selection
from admit.prune.llm_strategies import LLM_PARAMS, llm_spec

__all__ = [
    "LLM_PARAMS",
    "PROMPT_VERSION",
    "CallContext",
    "LLMPruner",
    "Rendered",
    "data_rules",
    "llm_spec",
    "parse_grades",
    "parse_selection",
    "rubric_text",
]
