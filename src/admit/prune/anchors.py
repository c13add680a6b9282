"""``anchors`` (Sinhababu et al.): calibrate the reranker with synthetic anchor chunks of known relevance.

One LLM call writes a synthetic passage for each rubric level (5 essential .. 1 unrelated) for the question.
The reranker scores those anchors together with the real chunks; a chunk's grade is the highest level whose
anchor it outscores. With ``settings.threshold = T`` a chunk is kept when it scores above the anchor of level
T (and above every lower-level anchor: the anchor scores are made monotone first, so an inverted pair of
anchors cannot open a hole in the scale; inversions are noted).

It fixes calibration, not the scores themselves: a pointwise reranker still ranks a bridge chunk below a
plainly unrelated one, which is why the listwise ``graded`` strategy is the default LLM pruner.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from admit.backends.llms import LLM, PriceTable
from admit.backends.rerankers import Reranker, resolve_reranker
from admit.errors import BackendError, GraderOutputError
from admit.prune._llm_common import llm_cache_key, rubric_text
from admit.prune._parsing import parse_anchors
from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.cache import PruneCache, cached_outcome
from admit.prune.llm_strategies import llm_spec
from admit.prune.settings import PruneSettings
from admit.types import Chunk, Message, Scored, Usage

__all__ = ["ANCHOR_SCHEMA", "SPEC", "AnchorsPruner"]

_LEVELS = (5, 4, 3, 2, 1)
ANCHOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {f"level_{g}": {"type": "string"} for g in _LEVELS},
    "required": [f"level_{g}" for g in _LEVELS],
    "additionalProperties": False,
}


class AnchorsPruner:
    """``AnchorsPruner(llm, reranker="bm25")``; the reranker should be the pipeline's own."""

    name = "anchors"

    def __init__(
        self,
        llm: LLM,
        *,
        reranker: str | Reranker | None = "bm25",
        cache: PruneCache | None = None,
        price_table: PriceTable | None = None,
        max_tokens: int = 600,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> None:
        """Create the pruner.

        Args:
            llm: Writes the anchor passages.
            reranker: Scores anchors and chunks together (a spec for ``resolve_reranker`` or an instance).
            cache: Optional result cache.
            price_table: Prices for the cost in ``Usage``.
            max_tokens: Completion bound of the anchor call.
            temperature: Sampling temperature.
            timeout: Per-call timeout.
        """
        self.llm = llm
        self.reranker = resolve_reranker(reranker or "bm25")
        self.cache = cache
        self.price_table = price_table or PriceTable()
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.timeout = timeout

    def messages(self, question: str) -> list[Message]:
        """The anchor-writing prompt."""
        return [
            Message(
                role="system",
                content=(
                    "You write synthetic reference passages that calibrate a relevance ranker. For the user's "
                    "question, write one short passage (2-4 sentences, like a paragraph from a document) for "
                    "EACH relevance level below, so that a careful grader would give it exactly that level. "
                    "Invent plausible content where needed; never refuse.\n"
                    f"{rubric_text()}\n\n"
                    'Answer with JSON only: {"level_5": "...", "level_4": "...", "level_3": "...", '
                    '"level_2": "...", "level_1": "..."}'
                ),
            ),
            Message(role="user", content=f"Question: {question}"),
        ]

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        """Write anchors, rerank them with the chunks, and grade each chunk by the band it falls in."""
        t0 = time.perf_counter()
        params = {**dict(settings.params), "threshold": settings.threshold, "reranker": self.reranker.name}
        key = llm_cache_key(self.cache, self.name, self.llm, question, candidates, params)
        cached = cached_outcome(self.cache, key, self.name, candidates, settings, t0)
        if cached is not None:
            return cached
        reply = self.llm.complete(
            self.messages(question),
            json_schema=ANCHOR_SCHEMA,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            timeout=self.timeout,
        )
        cost, _ = self.price_table.cost(self.llm.model, reply.prompt_tokens, reply.completion_tokens)
        usage = Usage(
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            calls=1,
            cost_usd=cost,
        )
        anchors, notes = parse_anchors(reply.text)
        t = settings.threshold
        if t > 1 and t not in anchors:
            raise GraderOutputError(
                f"anchors: no anchor passage for the threshold level {t} (got levels {sorted(anchors)})."
            )
        levels = sorted(anchors)
        missing = [g for g in _LEVELS if g not in anchors]
        if missing:
            notes.append(f"no anchor for level(s) {missing}; grades snap to {levels}")
        anchor_chunks = [Chunk(id=f"__admit_anchor_{g}", source_id="__admit_anchor__", text=anchors[g]) for g in levels]
        try:
            scores = self.reranker.score(question, anchor_chunks + [c.chunk for c in candidates])
        except Exception as exc:
            raise BackendError(f"anchors: reranker {self.reranker.name!r} failed: {exc}") from exc
        if len(scores) != len(anchor_chunks) + len(candidates):
            raise BackendError(
                f"anchors: reranker returned {len(scores)} scores for {len(anchor_chunks) + len(candidates)}."
            )
        raw = dict(zip(levels, (float(s) for s in scores[: len(levels)]), strict=True))
        edge: dict[int, float] = {}
        running = float("-inf")
        for g in levels:  # ascending: the edge of level g is the highest anchor score at or below g
            if raw[g] < running:
                notes.append(f"anchor {g} scored below a lower-level anchor ({raw[g]:.4g} < {running:.4g})")
            running = max(running, raw[g])
            edge[g] = running
        grades: list[int] = []
        reasons: list[str] = []
        for s in scores[len(levels) :]:
            score = float(s)
            g = max((lv for lv in levels if lv >= 2 and score > edge[lv]), default=1)
            grades.append(g)
            above = f"above anchor {g} ({edge[g]:.4g})" if g >= 2 else "below every anchor"
            reasons.append(f"anchors: score {score:.4g} {above}")
        usage = Usage(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            calls=1,
            cost_usd=usage.cost_usd,
            latency_s=time.perf_counter() - t0,
        )
        if self.cache is not None and key is not None:
            self.cache.put(key, {"grades": grades, "reasons": reasons})
        return apply_threshold(self.name, candidates, grades, settings, reasons=reasons, usage=usage, notes=notes)


SPEC = llm_spec(
    "anchors",
    AnchorsPruner,
    params={},
    windowed=False,
    extra=lambda res: {} if res.reranker is None else {"reranker": res.reranker},
    default_grid={"threshold": [2, 3, 4, 5]},
    color="#17becf",
    summary="LLM-written anchors calibrate the reranker",
)
"""``anchors`` in the strategy catalogue."""
