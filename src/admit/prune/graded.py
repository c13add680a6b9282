"""``graded``: one listwise LLM call sees the question and ALL chunks and grades each on the five-level rubric.

A chunk stays when its grade is at or above ``settings.threshold``; the top ``keep_top_k`` reranked chunks
stay regardless. Because the grader sees the whole set, a bridge chunk (needed only together with another)
can be graded 4 even when it never mentions the question's topic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from admit.prune.llm import (
    LLM_PARAMS,
    CallContext,
    LLMPruner,
    Rendered,
    data_rules,
    llm_spec,
    parse_grades,
    rubric_text,
)

__all__ = ["SPEC", "GradedPruner"]


class GradedPruner(LLMPruner):
    """Listwise rubric grading. ``GradedPruner(llm)``; options in :class:`~admit.prune._llm_common.LLMPruner`."""

    name = "graded"
    supports_second_pass = True

    def instructions(self, boundary: str, ctx: CallContext) -> str:
        return (
            "You grade retrieved text chunks for a question-answering system. Judge the chunks as a set: "
            "a chunk can be needed only together with another chunk (for example it identifies the entity "
            "another chunk is about). For EACH chunk give one grade on this rubric:\n"
            f"{rubric_text()}\n\n"
            f"{data_rules(boundary)}\n\n"
            "Grade every chunk id exactly once. Answer with JSON only, mapping each id to its grade: "
            '{"C1": 5, "C2": 1, ...}'
        )

    def task(self, window: Sequence[Rendered], ctx: CallContext) -> str:
        ids = [r.sid for r in window]
        span = f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else ids[0]
        return f"Grade each chunk {span} (1-5) for the question. JSON only."

    def schema(self, window: Sequence[Rendered], ctx: CallContext) -> dict[str, Any]:
        ids = [r.sid for r in window]
        return {
            "type": "object",
            "properties": {i: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for i in ids},
            "required": ids,
            "additionalProperties": False,
        }

    def _max_tokens(self, n: int) -> int:
        return 24 + 9 * n

    def interpret(
        self, text: str, window: Sequence[Rendered], ctx: CallContext
    ) -> tuple[dict[str, int], list[str], list[str]]:
        p = parse_grades(text, [r.sid for r in window])
        return p.grades, p.missing, p.notes


SPEC = llm_spec(
    "graded",
    GradedPruner,
    params=LLM_PARAMS,
    default_grid={"threshold": [2, 3, 4], "keep_top_k": [0, 1, 2]},
    color="#9467bd",
    summary="listwise LLM grading on the five-level rubric",
)
"""``graded`` in the strategy catalogue."""
