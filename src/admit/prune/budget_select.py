"""``budget_select``: keep the top ``m`` reranked chunks, and let the LLM add up to ``n`` more.

The result size is predictable (at most ``m + n`` chunks), but once the budget is spent every further chunk
is dropped however relevant. Parameters (``settings.params`` or constructor): ``m`` (default 2), ``n``
(default 3). Kept chunks get grade 5, the others 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from admit.errors import ConfigError
from admit.prune.checks import int_at_least
from admit.prune.llm import LLM_PARAMS, CallContext, LLMPruner, Rendered, data_rules, llm_spec, parse_selection
from admit.types import Scored

__all__ = ["SPEC", "BudgetSelectPruner"]


class BudgetSelectPruner(LLMPruner):
    """``BudgetSelectPruner(llm, m=2, n=3)``."""

    name = "budget_select"
    _param_names = ("m", "n")

    def __init__(self, llm: Any, **kwargs: Any) -> None:
        """Create the pruner; ``m`` and ``n`` default to 2 and 3."""
        kwargs.setdefault("m", 2)
        kwargs.setdefault("n", 3)
        super().__init__(llm, **kwargs)
        _check(self.defaults["m"], self.defaults["n"])

    def _mn(self, ctx: CallContext) -> tuple[int, int]:
        m, n = ctx.get("m", 2), ctx.get("n", 3)
        _check(m, n)
        return int(m), int(n)

    def instructions(self, boundary: str, ctx: CallContext) -> str:
        _, n = self._mn(ctx)
        return (
            "You choose retrieved text chunks for a question-answering system. Some chunks are already kept. "
            f"Add at most {n} more chunks that the answer also needs (a chunk can be needed only together with "
            "another one); add none when the kept chunks suffice.\n\n"
            f"{data_rules(boundary)}\n\n"
            f'Answer with JSON only: {{"add": ["C4", ...]}} (at most {n} ids, best first).'
        )

    def _pre(self, window: Sequence[Rendered], ctx: CallContext) -> list[str]:
        m, _ = self._mn(ctx)
        return [r.sid for r in window if r.item is not None and r.item.rank < m]

    def task(self, window: Sequence[Rendered], ctx: CallContext) -> str:
        pre = self._pre(window, ctx)
        _, n = self._mn(ctx)
        kept = ", ".join(pre) if pre else "none"
        return f"Already kept: {kept}. Which chunks (at most {n}) should be added? JSON only."

    def schema(self, window: Sequence[Rendered], ctx: CallContext) -> dict[str, Any]:
        pre = set(self._pre(window, ctx))
        choices = [r.sid for r in window if r.sid not in pre] or [r.sid for r in window]
        _, n = self._mn(ctx)
        return {
            "type": "object",
            "properties": {"add": {"type": "array", "items": {"type": "string", "enum": choices}, "maxItems": n}},
            "required": ["add"],
            "additionalProperties": False,
        }

    def _max_tokens(self, n: int) -> int:
        return 48 + 6 * n

    def interpret(
        self, text: str, window: Sequence[Rendered], ctx: CallContext
    ) -> tuple[dict[str, int], list[str], list[str]]:
        p = parse_selection(text, [r.sid for r in window])
        pre = set(self._pre(window, ctx))
        order = [s for s in p.selected if s not in pre]
        # 5 for the first choice down to 4 for the rest keeps the LLM's order for the budget; _finish maps to 5/1
        out = {r.sid: 5 if r.sid in pre else 1 for r in window}
        for k, s in enumerate(order):
            out[s] = 100 - k
        return out, [], p.notes

    def _finish(
        self, candidates: Sequence[Scored], grades: list[int], reasons: list[str], notes: list[str], ctx: CallContext
    ) -> None:
        m, n = self._mn(ctx)
        added = sorted((i for i, g in enumerate(grades) if g > 5), key=lambda i: (-grades[i], candidates[i].rank))
        if len(added) > n:
            notes.append(f"llm chose {len(added)} chunks; budget n={n} kept the first {n}")
        keep_added = set(added[:n])
        for i, c in enumerate(candidates):
            if c.rank < m:
                grades[i], reasons[i] = 5, f"budget_select: top {m} by rerank"
            elif i in keep_added:
                grades[i], reasons[i] = 5, "budget_select: added by the llm"
            elif grades[i] > 5:
                grades[i], reasons[i] = 1, f"budget_select: over the budget n={n}"
            elif "not graded" not in reasons[i]:
                grades[i], reasons[i] = 1, "budget_select: not chosen"


def _check(m: Any, n: Any) -> None:
    try:
        ok = int(m) >= 0 and int(n) >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"budget_select: m and n must be integers >= 0, got m={m!r}, n={n!r}.")


SPEC = llm_spec(
    "budget_select",
    BudgetSelectPruner,
    params={**LLM_PARAMS, "m": int_at_least(0), "n": int_at_least(0)},
    default_grid={"m": [1, 2], "n": [1, 2, 3]},
    color="#e377c2",
    summary="keep the top m, the LLM adds up to n",
)
"""``budget_select`` in the strategy catalogue."""
