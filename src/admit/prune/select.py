"""``select``: ask the LLM which chunks the answer needs, no rubric. Kept -> grade 5, else 1.

The simplest LLM pruner, and the one every rubric design has to beat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from admit.prune.llm import LLM_PARAMS, CallContext, LLMPruner, Rendered, data_rules, llm_spec, parse_selection

__all__ = ["SPEC", "SelectPruner"]


class SelectPruner(LLMPruner):
    """``SelectPruner(llm)``: the LLM returns the ids to keep."""

    name = "select"

    def instructions(self, boundary: str, ctx: CallContext) -> str:
        return (
            "You choose which retrieved text chunks a question-answering system must keep to answer the "
            "question. Judge the chunks as a set: keep every chunk the answer needs, including a chunk that is "
            "needed only together with another one; drop the rest.\n\n"
            f"{data_rules(boundary)}\n\n"
            'Answer with JSON only: {"keep": ["C1", ...]} (an empty list when no chunk helps).'
        )

    def task(self, window: Sequence[Rendered], ctx: CallContext) -> str:
        return "Which chunks does the answer need? JSON only."

    def schema(self, window: Sequence[Rendered], ctx: CallContext) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "keep": {"type": "array", "items": {"type": "string", "enum": [r.sid for r in window]}},
            },
            "required": ["keep"],
            "additionalProperties": False,
        }

    def _max_tokens(self, n: int) -> int:
        return 24 + 6 * n

    def interpret(
        self, text: str, window: Sequence[Rendered], ctx: CallContext
    ) -> tuple[dict[str, int], list[str], list[str]]:
        p = parse_selection(text, [r.sid for r in window])
        chosen = set(p.selected)
        return {r.sid: 5 if r.sid in chosen else 1 for r in window}, [], p.notes


SPEC = llm_spec(
    "select",
    SelectPruner,
    params=LLM_PARAMS,
    default_grid={"keep_top_k": [0, 1, 2]},
    color="#8c564b",
    summary="the LLM names the chunks to keep",
)
"""``select`` in the strategy catalogue."""
