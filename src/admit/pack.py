"""Pack: fit the evidence to the budget by relevance, novelty, authority, recency and facet coverage.

Greedy by marginal value: at each step the candidate with the best value is tried, where value blends
rerank relevance, novelty against what is already admitted, authority (from the caller's source registry),
recency (when the class says so), and a bonus for covering facets of the question. A candidate that covers
a facet nothing admitted covers yet goes first (when the class weighs coverage at all), so a lower-scoring
chunk that covers a missing facet beats a high-scoring one whose facet is covered. Token costs are counted
with the target model's tokenizer on the rendered envelopes, and the final block is counted again as sent;
passages are removed (lowest value first, recorded) until it fits.

No silent tail-drop: a passage that does not fit is recorded as dropped for ``budget``, and the class's
fallbacks apply in order: an anchored excerpt of an oversized section (sentences that match the question,
cut at sentence boundaries, elisions marked, citation id kept), a scope note, a request to narrow, or a
flag asking for a second retrieval pass for an uncovered facet.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from admit import _deadline, _linear
from admit._text import content_words, jaccard_estimates, sentences, signatures
from admit.backends.tokenizers import Tokenizer
from admit.backends.tokenizers.base import cached_count, count_by_lines, line_additive
from admit.budget import evidence_message_tokens
from admit.policy import Policy
from admit.render import EvidenceRenderer, body_lines, clean_text
from admit.types import AdmittedPassage, Budget, Chunk, Decision, Fallback, Scored

__all__ = ["PackOutcome", "anchored_excerpt", "covers", "pack", "split_facets"]

ELISION = "[…]"
_MIN_EXCERPT_TOKENS = 24
_PATTERNS = _linear.table(
    "pack",
    {
        "question_word": (
            r"\s*(?:how|what|why|when|where|which|who|whom|whose|can|could|should|would|is|are|was|were|do|does|did)\b"
        ),
        "facet_split": (
            r"\s*(?:[,;?]|\band\b|\bor\b|\bvs\.?|\bversus\b|\bas well as\b|\bcompare[sd]? (?:to|with)\b|\bplus\b)\s*"
        ),
    },
    re.I,
)
_QUESTION_WORD, _FACET_SPLIT = _PATTERNS["question_word"], _PATTERNS["facet_split"]


def split_facets(question: str) -> list[frozenset[str]]:
    """Split a question into facets (content-word sets): the parts a complete answer must cover.

    Parts are cut at "and", "or", "vs", commas and semicolons; a part that is only a question lead-in with
    fewer than two content words ("how do I fix it", "which is older") joins its neighbour, so only real
    sub-questions or compared entities become facets. Words every facet shares tell nothing apart and
    are dropped from each facet. Linear in the question: RE2 patterns, and a facet's own words are those that
    no other facet holds (counted once), not a union of the others per facet.
    """
    raw = [p.strip() for p in _FACET_SPLIT.split(question) if p and p.strip()]
    merged: list[set[str]] = []
    carry: set[str] = set()
    for part in raw:
        words = content_words(part)
        filler = _QUESTION_WORD.match(part) is not None and len(words) < 2
        if filler or not words:
            if merged:
                merged[-1] |= words
            else:
                carry |= words  # "Which is older, X or Y": the lead-in belongs to what follows
            continue
        merged.append(set(words) | carry)
        carry = set()
    if len(merged) <= 1:
        whole = content_words(question)
        return [whole] if whole else []
    facets = [frozenset(f) for f in merged]
    holders = Counter(w for f in facets for w in f)
    out = [frozenset(w for w in f if holders[w] == 1) or f for f in facets]
    return list(dict.fromkeys(out))


def covers(words: frozenset[str], facet: frozenset[str]) -> bool:
    """Whether ``words`` (a passage's content words) hold at least half of ``facet``'s words."""
    if not facet:
        return False
    return len(words & facet) / len(facet) >= 0.5


def anchored_excerpt(question: str, text: str, max_tokens: int, tokenizer: Tokenizer) -> str | None:
    """The sentences of ``text`` that best match ``question`` within ``max_tokens``, cut at sentence boundaries.

    The best-matching sentence is the anchor; more sentences join in order of match, then nearness to the
    anchor, while they fit. Kept sentences appear in document order; every gap is marked with ``[…]``.
    Returns ``None`` when not even the anchor sentence fits.
    """
    sents = sentences(text)
    if not sents or max_tokens <= 0:
        return None
    qw = content_words(question)
    scores = []
    for s in sents:
        _deadline.checkpoint()
        scores.append(len(content_words(s) & qw))
    anchor = max(range(len(sents)), key=lambda i: (scores[i], -i))
    order = sorted(range(len(sents)), key=lambda i: (-scores[i], abs(i - anchor), i))
    # Linear: each sentence is counted once (with the space that joins it) and the excerpt's cost is kept as a
    # running sum (sentences + one elision mark per gap); only the finished excerpt is counted as rendered,
    # and trimmed (last joined first) in the rare case the sum under-counted it.
    n = len(sents)
    mark = tokenizer.count(" " + ELISION)
    chosen: set[int] = set()
    added: list[int] = []
    total = runs = lo = hi = 0
    for i in order:
        _deadline.checkpoint()
        cost = tokenizer.count(" " + sents[i])
        left, right = (i - 1) in chosen, (i + 1) in chosen
        new_runs = runs + 1 - int(left) - int(right)
        new_lo, new_hi = (min(i, lo), max(i, hi)) if chosen else (i, i)
        gaps = (new_runs - 1) + int(new_lo > 0) + int(new_hi < n - 1)
        if total + cost + gaps * mark <= max_tokens:
            chosen.add(i)
            added.append(i)
            total += cost
            runs, lo, hi = new_runs, new_lo, new_hi
        elif not chosen:
            return None
    tries = 0
    while added:  # a bounded number of exact counts: one at a time 8 times, then halving
        _deadline.checkpoint()
        rendered = _join_excerpt(sents, set(added))
        if tokenizer.count(rendered) <= max_tokens:
            return rendered
        tries += 1
        added = added[:-1] if tries < 8 else added[: len(added) // 2]
    return None


def _envelope_count(tok: Tokenizer, renderer: EvidenceRenderer, chunk: Chunk) -> int:
    """``count_by_lines(tok, renderer.envelope(chunk, chunk.text))`` for a line-additive tokenizer, the text's lines
    split once per text: the head line (its newline included), the body's lines, the closing tag."""
    lines = body_lines(chunk.text)
    if lines[0][0] in "/\n":  # an empty body, or one starting with "/": the head's line break is no cut there
        return count_by_lines(tok, renderer.envelope(chunk, chunk.text))
    head = cached_count(tok, renderer.head(chunk) + "\n")
    return head + sum(cached_count(tok, line) for line in lines) + cached_count(tok, renderer.tail())


def _checked(value: frozenset[str]) -> frozenset[str]:
    _deadline.checkpoint()  # per candidate: long work may wait (the service's scheduler) or stop (the deadline)
    return value


def _join_excerpt(sents: Sequence[str], chosen: set[int]) -> str:
    idx = sorted(chosen)
    out: list[str] = []
    if idx[0] > 0:
        out.append(ELISION)
    prev = None
    for i in idx:
        if prev is not None and i != prev + 1:
            out.append(ELISION)
        out.append(sents[i])
        prev = i
    if idx[-1] < len(sents) - 1:
        out.append(ELISION)
    return " ".join(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class PackOutcome:
    """What the packer admitted and why."""

    admitted: tuple[AdmittedPassage, ...]
    """Admitted passages in prompt order."""
    decisions: tuple[Decision, ...]
    """One decision per packed candidate (admitted or dropped for budget)."""
    fallbacks: tuple[Fallback, ...]
    """Fallbacks applied."""
    prompt: str
    """The rendered evidence block."""
    evidence_tokens: int
    """Tokens of the block as sent (chat overhead included)."""
    uncovered_facets: tuple[str, ...]
    """Facets of the question that no admitted passage covers."""


def _minmax(vals: Sequence[float]) -> list[float]:
    finite = [v for v in vals if math.isfinite(v)]
    if not finite:
        return [0.5] * len(vals)
    lo, hi = min(finite), max(finite)
    if hi - lo <= 1e-12:
        return [1.0] * len(vals)
    return [(v - lo) / (hi - lo) if math.isfinite(v) else 0.0 for v in vals]


def pack(
    question: str,
    items: Sequence[Scored],
    *,
    policy: Policy,
    budget: Budget,
    tokenizer: Tokenizer,
    renderer: EvidenceRenderer,
    grades: Mapping[str, int] | None = None,
    query_class: str = "",
    notes: Sequence[str] = (),
) -> PackOutcome:
    """Pack ``items`` (best rerank first, already deduped and pruned) into the evidence budget.

    The steps: value the candidates (:class:`_Packer`), choose greedily within the room (:meth:`_Packer.select`,
    again with a note's room held back when a note will be sent), apply the class's fallbacks to what did not fit
    (:meth:`_Packer.fallbacks`), count the block exactly as sent and remove the lowest-value passages until it fits
    (:meth:`_Packer.fit`), and record a decision per candidate (:meth:`_Packer.outcome`).

    ``notes``: notes sent first in the block whatever fits (the pipeline's ``no_answer`` note); their room is
    held back before choosing.
    """
    packer = _Packer(question, items, policy=policy, tokenizer=tokenizer, renderer=renderer, grades=grades or {})
    limit = budget.evidence_budget - sum(tokenizer.count(n) + 12 for n in notes)
    sel = packer.select(limit - packer.base_cost)
    if sel.dropped and any(k in policy.fallbacks for k in ("scope_note", "ask_to_narrow")):
        # a note will be sent: choose again with its room held back, rather than cutting the last passage
        note_room = sum(
            tokenizer.count(_note(k, 999, 999)) + 12 for k in ("scope_note", "ask_to_narrow") if k in policy.fallbacks
        )
        sel = packer.select(limit - packer.base_cost - note_room)
    more, uncovered = packer.fallbacks(sel)
    order, block, tokens = packer.fit(sel, [*notes, *more], budget.evidence_budget)
    return packer.outcome(sel, order, block, tokens, uncovered)


@dataclass(slots=True, kw_only=True)
class _Selection:
    """What one greedy pass chose: indices in order, their text (excerpt or not) and cost, the drops, the
    fallbacks applied so far, and the facets covered."""

    chosen: list[int]
    text: dict[int, tuple[str, bool, int]]
    dropped: dict[int, Decision]
    fallbacks: list[Fallback]
    covered: set[int]


class _Packer:
    """The state of packing one request: each candidate's static value, facet cover, similarity and cost."""

    def __init__(
        self,
        question: str,
        items: Sequence[Scored],
        *,
        policy: Policy,
        tokenizer: Tokenizer,
        renderer: EvidenceRenderer,
        grades: Mapping[str, int],
    ) -> None:
        self.question, self.items, self.policy = question, items, policy
        self.tokenizer, self.renderer, self.grades = tokenizer, renderer, grades
        n = self.n = len(items)
        self.facets = facets = split_facets(question)
        self.multi = multi = len(facets) > 1
        # facet coverage matters only for a question of several facets; the words of title and text are the
        # union of each's (they are cached per text, and the text's were normalised by dedupe already)
        words = [_checked(content_words(s.chunk.title) | content_words(s.chunk.text)) for s in items] if multi else []
        # pairwise text similarity for novelty, estimated once from MinHash signatures
        self.sim = jaccard_estimates(signatures([s.chunk.text for s in items]))
        rel = _minmax([s.score for s in items])
        auth = [s.chunk.authority if s.chunk.authority is not None else 0.5 for s in items]
        stamps = [s.chunk.updated_at.timestamp() if isinstance(s.chunk.updated_at, datetime) else None for s in items]
        known = [t for t in stamps if t is not None]
        lo_t, hi_t = (min(known), max(known)) if known else (0.0, 0.0)
        rec = [((t - lo_t) / (hi_t - lo_t)) if t is not None and hi_t > lo_t else 0.5 for t in stamps]
        self.base_cost = evidence_message_tokens(tokenizer, renderer.block(["x"])) - tokenizer.count("x")
        self.sep_cost = 2  # the blank line between envelopes, counted generously; the final count is exact
        # static part of each candidate's value; novelty and coverage change as passages are admitted
        self.static = np.array(
            [
                policy.relevance_weight * rel[i]
                + policy.authority_weight * auth[i]
                + policy.recency_weight * rec[i]
                + (0.1 * (g - 3) if (g := grades.get(items[i].chunk.id)) is not None else 0.0)
                for i in range(n)
            ],
            dtype=np.float64,
        )
        self.cover = np.zeros((n, len(facets)), dtype=bool)
        if multi:
            self.cover = np.array([[covers(words[i], f) for f in facets] for i in range(n)], dtype=bool).reshape(
                n, len(facets)
            )
        self.use_cover_first = multi and policy.coverage_weight > 0
        self.neg_rank = -np.array([s.rank for s in items], dtype=np.float64)
        self._cost: dict[int, int] = {}

    def env_cost(self, i: int) -> int:
        """Envelope tokens of candidate ``i``: its frame (counted) plus its text (counted once and remembered).

        The frame ends in a newline, so BPE pieces do not merge across it. The final block count is exact.
        """
        if i not in self._cost:
            c, tok, r = self.items[i].chunk, self.tokenizer, self.renderer
            if line_additive(tok):  # exact, and its lines are the ones the final count looks up
                self._cost[i] = _envelope_count(tok, r, c) + self.sep_cost
            else:
                frame = tok.count(r.envelope(c, ""))
                self._cost[i] = frame + cached_count(tok, clean_text(c.text).strip()) + self.sep_cost
        return self._cost[i]

    def select(self, room: int) -> _Selection:
        """Choose greedily by marginal value within ``room`` tokens; an oversized passage may enter as an excerpt."""
        policy, n, items, facets = self.policy, self.n, self.items, self.facets
        sel = _Selection(chosen=[], text={}, dropped={}, fallbacks=[], covered=set())
        remaining = room
        covered_mask = np.zeros(len(facets), dtype=bool)
        pending = np.ones(n, dtype=bool)
        max_sim = np.zeros(n, dtype=np.float64)
        min_useful = _MIN_EXCERPT_TOKENS if "anchored_excerpt" in policy.fallbacks else 1
        while pending.any():
            if remaining < min_useful + self.sep_cost + 8:
                # no room left for anything: record every remaining candidate (never a silent tail-drop)
                for i in np.flatnonzero(pending):
                    sel.dropped[int(i)] = _budget_drop(items[int(i)], None, remaining)
                break
            new_cov = (self.cover & ~covered_mask).sum(axis=1) if self.multi else np.zeros(n)
            val = self.static + policy.novelty_weight * (1.0 - max_sim)
            if self.multi:
                val = val + policy.coverage_weight * new_cov / len(facets)
            first = (new_cov > 0).astype(np.float64) if self.use_cover_first else np.zeros(n)
            idx = np.flatnonzero(pending)
            order = np.lexsort((self.neg_rank[idx], val[idx], first[idx]))
            best = int(idx[order[-1]])
            pending[best] = False
            cost = self.env_cost(best)
            remaining -= self._admit(sel, best, cost, remaining)
            if best in sel.text:
                covered_mask |= self.cover[best]
                np.maximum(max_sim, self.sim[:, best], out=max_sim)
        sel.covered = {int(k) for k in np.flatnonzero(covered_mask)}
        return sel

    def _admit(self, sel: _Selection, best: int, cost: int, remaining: int) -> int:
        """Admit candidate ``best`` whole or as an anchored excerpt, or record it dropped; return the tokens used."""
        policy, s, tok, r = self.policy, self.items[best], self.tokenizer, self.renderer
        oversized = policy.max_passage_tokens is not None and cost > policy.max_passage_tokens
        if cost <= remaining and not oversized:
            sel.chosen.append(best)
            sel.text[best] = (s.chunk.text, False, cost)
            return cost
        if "anchored_excerpt" not in policy.fallbacks:
            sel.dropped[best] = _budget_drop(s, cost, remaining)
            return 0
        cap = remaining if policy.max_passage_tokens is None else min(remaining, policy.max_passage_tokens)
        overhead = tok.count(r.envelope(s.chunk, "", excerpt=True)) + self.sep_cost + 2
        excerpt = None
        if cap - overhead >= _MIN_EXCERPT_TOKENS:
            excerpt = anchored_excerpt(self.question, s.chunk.text, cap - overhead, tok)
        ecost = tok.count(r.envelope(s.chunk, excerpt, excerpt=True)) + self.sep_cost if excerpt else 0
        if not excerpt or ecost > remaining:
            sel.dropped[best] = _budget_drop(s, cost, remaining)
            return 0
        sel.chosen.append(best)
        sel.text[best] = (excerpt, True, ecost)
        why = "larger than max_passage_tokens" if oversized else "larger than the room left"
        sel.fallbacks.append(
            Fallback(
                kind="anchored_excerpt",
                detail=f"{s.chunk.id}: section {why} ({cost} tokens); admitted the sentences that "
                f"match the question ({ecost} tokens), elisions marked",
                chunk_ids=(s.chunk.id,),
            )
        )
        return ecost

    def fallbacks(self, sel: _Selection) -> tuple[list[str], tuple[str, ...]]:
        """Apply the class's fallbacks, in its order, to what did not fit; return the notes and uncovered facets."""
        facets, items = self.facets, self.items
        notes: list[str] = []
        budget_ids = tuple(items[i].chunk.id for i in sorted(sel.dropped))
        uncovered = (
            tuple(" ".join(sorted(f)) for k, f in enumerate(facets) if k not in sel.covered) if len(facets) > 1 else ()
        )
        if not sel.chosen and facets and self.n:
            uncovered = tuple(" ".join(sorted(f)) for f in facets)
        for kind in self.policy.fallbacks:
            if kind in ("scope_note", "ask_to_narrow") and budget_ids:
                note = _note(kind, len(budget_ids), len(sel.chosen))
                notes.append(note)
                sel.fallbacks.append(Fallback(kind=kind, detail=note, chunk_ids=budget_ids))
            elif kind == "second_retrieval" and uncovered:
                sel.fallbacks.append(
                    Fallback(
                        kind="second_retrieval",
                        detail="no admitted passage covers these parts of the question; run a second retrieval "
                        "pass for them",
                        facets=uncovered,
                    )
                )
        return notes, uncovered

    def fit(self, sel: _Selection, notes: list[str], limit: int) -> tuple[list[int], str, int]:
        """Count the block exactly as sent; remove the lowest-value admitted passages until it fits."""
        order = list(sel.chosen)
        while True:
            envs = [self.renderer.envelope(self.items[i].chunk, sel.text[i][0], excerpt=sel.text[i][1]) for i in order]
            block = self.renderer.block(envs, notes=notes)
            if not self.renderer.sealed(block, len(envs)):
                # the boundary turned up in a rendered string (an excerpt's joins): draw another of the same cost
                self.renderer = self.renderer.redraw([block])
                continue
            tokens = evidence_message_tokens(self.tokenizer, block)
            if tokens <= limit:
                return order, block, tokens
            if not order:
                # even the notes do not fit: send nothing, keep the fallbacks in the result and the trace
                notes.clear()
                return order, "", 0
            victim = order.pop()
            sel.dropped[victim] = _budget_drop(self.items[victim], sel.text[victim][2], 0, final=True)

    def outcome(
        self, sel: _Selection, order: list[int], block: str, tokens: int, uncovered: tuple[str, ...]
    ) -> PackOutcome:
        """The admitted passages in prompt order and a decision per candidate."""
        admitted: list[AdmittedPassage] = []
        decisions: list[Decision] = []
        for i in order:
            s = self.items[i]
            text, is_excerpt, cost = sel.text[i]
            g = self.grades.get(s.chunk.id)
            why = f"rank {s.rank + 1}" + (f", grade {g}" if g is not None else "")
            if is_excerpt:
                why += ", anchored excerpt"
            admitted.append(
                AdmittedPassage(
                    chunk=s.chunk, text=text, tokens=cost, excerpt=is_excerpt, score=s.score, grade=g, why=why
                )
            )
            decisions.append(
                Decision(
                    chunk_id=s.chunk.id,
                    state="admitted",
                    stage="pack",
                    reason="admitted",
                    score=s.score,
                    grade=g,
                    detail="anchored excerpt" if is_excerpt else "",
                )
            )
        decisions.extend(sel.dropped[i] for i in sorted(sel.dropped))
        return PackOutcome(
            admitted=tuple(admitted),
            decisions=tuple(decisions),
            fallbacks=tuple(sel.fallbacks),
            prompt=block,
            evidence_tokens=tokens,
            uncovered_facets=uncovered,
        )


def _note(kind: str, dropped: int, admitted: int) -> str:
    if kind == "scope_note":
        return (
            f"{dropped} further relevant passage(s) did not fit the evidence budget; answer within the scope of "
            "the passages below and say that the answer may be incomplete."
        )
    return (
        f"The request matches more evidence than fits ({dropped + admitted} passages); ask the user to narrow it "
        "(a product, version, time range or subset)."
    )


def _budget_drop(s: Scored, cost: int | None, remaining: int, *, final: bool = False) -> Decision:
    if final:
        detail = f"removed at the final exact count ({cost} tokens)"
    elif cost is None:
        detail = f"no room left ({max(remaining, 0)} tokens)"
    else:
        detail = f"needs {cost} tokens, {max(remaining, 0)} left"
    return Decision(chunk_id=s.chunk.id, state="dropped", stage="pack", reason="budget", score=s.score, detail=detail)
