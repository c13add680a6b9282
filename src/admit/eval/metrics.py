"""Evaluation metrics: compression, retained recall, diagnosis, latency and cost. Pure functions.

Definitions (over a group of questions):

* **chunk compression** ``1 - kept chunks / candidate chunks``;
* **token compression** ``1 - kept tokens / candidate tokens``, tokens of ``title + "\\n" + text`` counted
  with the generator's tokenizer;
* **retained recall** the share of questions that keep **all** their required chunks (a required chunk that
  is not among the candidates counts as lost);
* **chunk recall** the share of required chunks kept;
* **diagnosis** per required chunk: ``missing`` (not among the candidates), ``dropped`` (retrieved but not
  admitted), ``admitted``; with a generator's citations also ``cited`` and ``supported``. A question gets
  the worst of its chunks';
* **latency** p50 / p95 of the pruner's wall time per question;
* **cost** the pruner's own cost (its reported ``cost_usd``, else its tokens priced with the
  :class:`CostRates`), the generator input tokens saved, and the **net change per query**
  ``pruner cost - tokens saved x generator input price`` (negative is a saving): the opposite of
  :func:`admit.prune.savings.net_saving_usd`, the one accounting, from which it is derived;
* **R@x** retained recall at compression ``x``, interpolated along (compression, recall) points
  (:func:`recall_at`; R@68 is the published target's).
"""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from admit.errors import ConfigError
from admit.prune.savings import net_saving_usd
from admit.types import AnswerState, Usage, answerable_of

__all__ = [
    "DIAGNOSES",
    "CostRates",
    "QuestionResult",
    "breakdowns",
    "diagnose",
    "percentile",
    "question_diagnosis",
    "recall_at",
    "summarize",
]

DIAGNOSES = ("missing", "dropped", "admitted", "cited", "supported")
"""Per-chunk diagnosis, worst first: missing from candidates, retrieved but not admitted, admitted, admitted
and cited by the generator, cited and supporting the answer."""

_GROUPS = ("source", "hop_type", "question_type", "query_class")


@dataclass(frozen=True, slots=True, kw_only=True)
class CostRates:
    """The evaluation's cost rates: one generator and one pruner, USD per million tokens (and per call / per CPU
    second for local pruners). Per-model LLM prices live in :class:`admit.backends.llms.PriceTable`."""

    generator_input_per_mtok: float = 2.50
    """Generator input price (default: gpt-4o, USD 2.50 / 1M input tokens)."""
    pruner_input_per_mtok: float = 0.15
    """LLM pruner prompt price (default: gpt-4o-mini, USD 0.15 / 1M)."""
    pruner_output_per_mtok: float = 0.60
    """LLM pruner completion price (default: gpt-4o-mini, USD 0.60 / 1M)."""
    pruner_per_call: float = 0.0
    """A fixed price per pruner call, if your provider has one."""
    pruner_per_cpu_second: float = 0.0
    """Price of a second of pruner wall time (to charge a local CPU pruner for its machine; default free)."""

    @classmethod
    def load(cls, path: str | Path | None) -> CostRates:
        """Load a TOML or JSON price table; ``None`` gives the defaults.

        The file is flat (``generator_input_per_mtok = 2.5``) or nested (``[generator] input_per_mtok = 2.5``,
        ``[pruner] input_per_mtok = ..., output_per_mtok = ..., per_call = ..., per_cpu_second = ...``).
        """
        if path is None:
            return cls()
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"Price table {str(path)!r} does not exist.")
        try:
            raw = json.loads(p.read_text("utf-8")) if p.suffix == ".json" else tomllib.loads(p.read_text("utf-8"))
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"Price table {p}: cannot parse: {exc}") from exc
        return cls.from_dict(raw, where=str(p))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, where: str = "price table") -> CostRates:
        """Build from a flat or nested mapping (see :meth:`load`)."""
        flat: dict[str, Any] = {}
        for k, v in raw.items():
            if isinstance(v, Mapping):
                for k2, v2 in v.items():
                    flat[f"{k}_{k2}"] = v2
            else:
                flat[k] = v
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(flat) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown price(s) {unknown}; known: {sorted(known)}.")
        out: dict[str, float] = {}
        for k, v in flat.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or not math.isfinite(v):
                raise ConfigError(f"{where}: `{k}` must be a non-negative number, got {v!r}.")
            out[k] = float(v)
        return cls(**out)

    def as_dict(self) -> dict[str, float]:
        """Return a JSON-ready dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionResult:
    """One question under one configuration: what was kept, what it cost, and the labels to judge it."""

    record_id: str
    """The record id."""
    candidate_ids: tuple[str, ...]
    """Candidate ids, in the record's order."""
    kept_ids: tuple[str, ...]
    """Ids the pruner kept."""
    required: tuple[str, ...]
    """Required ids (labels)."""
    candidate_tokens: Mapping[str, int]
    """Generator tokens of each candidate."""
    source: str = ""
    """Dataset name."""
    hop_type: str = ""
    """Hop type."""
    question_type: str = ""
    """Question type."""
    query_class: str = ""
    """admit's query class for the question."""
    latency_s: float = 0.0
    """Pruner wall time."""
    usage: Usage = field(default_factory=Usage)
    """The pruner's LLM tokens and calls, and its own reported cost (``cost_usd`` 0 when it reports none)."""
    error: str | None = None
    """The pruner failure, if one happened (on_error applied)."""
    cited: frozenset[str] | None = None
    """Ids the generator cited (when a generator is configured)."""
    supported: frozenset[str] | None = None
    """Cited ids that support the answer (when a generator is configured)."""
    grades: Mapping[str, int] = field(default_factory=dict)
    """The pruner's grade per candidate."""
    answer_state: AnswerState | None = None
    """The pipeline's answerability verdict on the kept chunks: ``answered``, ``unsure`` or ``not_answered``
    (``None``: not assessed)."""

    @property
    def answerable(self) -> bool | None:
        """``True`` for ``answered``, ``False`` for ``not_answered``, ``None`` for ``unsure`` or not assessed
        (:attr:`answer_state` tells them apart; :func:`admit.types.answerable_of`)."""
        return answerable_of(self.answer_state)

    @property
    def total_tokens(self) -> int:
        """Tokens of all candidates."""
        return sum(self.candidate_tokens.get(c, 0) for c in self.candidate_ids)

    @property
    def kept_tokens(self) -> int:
        """Tokens of the kept candidates."""
        return sum(self.candidate_tokens.get(c, 0) for c in self.kept_ids)

    @property
    def retained(self) -> bool:
        """Whether every required chunk was kept."""
        kept = set(self.kept_ids)
        return all(r in kept for r in self.required)

    @property
    def diagnosis(self) -> dict[str, str]:
        """Per required chunk diagnosis (see :func:`diagnose`)."""
        return diagnose(self.required, self.candidate_ids, self.kept_ids, cited=self.cited, supported=self.supported)


def diagnose(
    required: Sequence[str],
    candidate_ids: Iterable[str],
    kept_ids: Iterable[str],
    *,
    cited: Iterable[str] | None = None,
    supported: Iterable[str] | None = None,
) -> dict[str, str]:
    """Diagnose every required chunk: ``missing``, ``dropped``, ``admitted`` (or ``cited``/``supported``).

    Example:
        >>> diagnose(["a", "b", "z"], ["a", "b", "c"], ["a"])
        {'a': 'admitted', 'b': 'dropped', 'z': 'missing'}
    """
    cands, kept = set(candidate_ids), set(kept_ids)
    cit = set(cited) if cited is not None else None
    sup = set(supported) if supported is not None else None
    out: dict[str, str] = {}
    for r in required:
        if r not in cands:
            out[r] = "missing"
        elif r not in kept:
            out[r] = "dropped"
        elif cit is not None and r in cit:
            out[r] = "supported" if sup is not None and r in sup else "cited"
        else:
            out[r] = "admitted"
    return out


def question_diagnosis(per_chunk: Mapping[str, str]) -> str:
    """The worst diagnosis of a question's required chunks (``admitted`` when it needs none)."""
    if not per_chunk:
        return "admitted"
    return min(per_chunk.values(), key=DIAGNOSES.index)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between ranks (numpy's default); 0 if empty.

    Example:
        >>> percentile([1, 2, 3, 4], 50)
        2.5
    """
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def recall_at(points: Sequence[tuple[float, float] | tuple[float, float, str]], x: float) -> float | None:
    """Retained recall at compression ``x``, interpolated between the neighbouring points; ``None`` when no point
    compresses that much.

    Points are ``(compression, retained recall)``, optionally with a name (a Pareto front's configurations);
    where the points start above ``x``, the best recall among them.

    Example:
        >>> recall_at([(0.5, 1.0), (0.75, 0.5)], 0.625)
        0.75
    """
    pts = sorted(points, key=lambda p: (p[0], p[1]))
    if not pts or pts[-1][0] < x:
        return None
    if pts[0][0] >= x:
        return max(p[1] for p in pts if p[0] >= x)
    for p0, p1 in itertools.pairwise(pts):
        (x0, y0), (x1, y1) = p0[:2], p1[:2]
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


def pruner_cost(r: QuestionResult, prices: CostRates) -> float:
    """The pruner's cost for one question: its own figure, else its tokens and time priced."""
    u = r.usage
    if u.cost_usd > 0:
        return u.cost_usd
    return (
        u.prompt_tokens * prices.pruner_input_per_mtok / 1e6
        + u.completion_tokens * prices.pruner_output_per_mtok / 1e6
        + u.calls * prices.pruner_per_call
        + r.latency_s * prices.pruner_per_cpu_second
    )


def summarize(results: Sequence[QuestionResult], prices: CostRates | None = None) -> dict[str, Any]:
    """All metrics over ``results`` (one configuration)."""
    prices = prices or CostRates()
    n = len(results)
    n_cand = n_kept = tok_all = tok_kept = n_req = req_kept = retained = 0
    saved: list[int] = []
    chunk_diag = dict.fromkeys(DIAGNOSES, 0)
    q_diag = dict.fromkeys(DIAGNOSES, 0)
    for r in results:
        kept = set(r.kept_ids)
        toks = r.candidate_tokens
        total = sum(toks.get(c, 0) for c in r.candidate_ids)
        kt = sum(toks.get(c, 0) for c in kept)
        n_cand += len(r.candidate_ids)
        n_kept += len(kept)
        tok_all += total
        tok_kept += kt
        saved.append(total - kt)
        n_req += len(r.required)
        got = sum(1 for x in r.required if x in kept)
        req_kept += got
        retained += got == len(r.required)
        diag = r.diagnosis
        for v in diag.values():
            chunk_diag[v] += 1
        q_diag[question_diagnosis(diag)] += 1
    if not any(r.cited is not None for r in results):
        for d in ("cited", "supported"):
            chunk_diag.pop(d)
            q_diag.pop(d)
    lat_ms = [r.latency_s * 1000 for r in results]
    costs = [pruner_cost(r, prices) for r in results]
    cost_pq = sum(costs) / n if n else 0.0
    saved_pq = sum(saved) / n if n else 0.0
    saved_usd_pq = saved_pq * prices.generator_input_per_mtok / 1e6
    return {
        "questions": n,
        "candidates": n_cand,
        "kept": n_kept,
        "chunk_compression": 1 - n_kept / n_cand if n_cand else 0.0,
        "token_compression": 1 - tok_kept / tok_all if tok_all else 0.0,
        "retained_recall": retained / n if n else 0.0,
        "chunk_recall": req_kept / n_req if n_req else 1.0,
        "kept_per_question": n_kept / n if n else 0.0,
        "candidate_tokens": tok_all,
        "kept_tokens": tok_kept,
        "diagnosis_questions": q_diag,
        "diagnosis_chunks": chunk_diag,
        "latency_ms_p50": percentile(lat_ms, 50),
        "latency_ms_p95": percentile(lat_ms, 95),
        **_verdict_shares(results),
        "pruner_prompt_tokens": sum(r.usage.prompt_tokens for r in results),
        "pruner_completion_tokens": sum(r.usage.completion_tokens for r in results),
        "pruner_calls": sum(r.usage.calls for r in results),
        "pruner_errors": sum(1 for r in results if r.error),
        "pruner_cost_usd": sum(costs),
        "pruner_cost_per_query_usd": cost_pq,
        "generator_tokens_saved": sum(saved),
        "generator_tokens_saved_per_query": saved_pq,
        "generator_cost_saved_per_query_usd": saved_usd_pq,
        # a change of cost: the saving with its sign turned (0.0 - x, so no saving is +0.0, never -0.0)
        "net_cost_change_per_query_usd": 0.0 - net_saving_usd(saved_usd_pq, cost_pq),
    }


def _verdict_shares(results: Sequence[QuestionResult]) -> dict[str, float | None]:
    """The shares of each verdict. The labelled lists hold their gold chunks: "not answered" on one is a false
    alarm when it was retained, and right when the pruner lost a gold chunk; "unsure" is its own share, in
    neither."""
    retained = [r for r in results if r.retained]
    lost = [r for r in results if not r.retained]
    return {
        "said_answerable": _share(results, lambda r: r.answer_state == "answered"),
        "said_unsure": _share(results, lambda r: r.answer_state == "unsure"),
        "said_not_answered": _share(results, lambda r: r.answer_state == "not_answered"),
        "said_not_answered_when_retained": _share(retained, lambda r: r.answer_state == "not_answered"),
        "said_unsure_when_retained": _share(retained, lambda r: r.answer_state == "unsure"),
        "said_not_answered_when_lost": _share(lost, lambda r: r.answer_state == "not_answered"),
    }


def _share(results: Sequence[QuestionResult], pred: Callable[[QuestionResult], bool]) -> float | None:
    """The share of the assessed results for which ``pred`` holds (``None`` when none was assessed)."""
    assessed = [r for r in results if r.answer_state is not None]
    return sum(1 for r in assessed if pred(r)) / len(assessed) if assessed else None


def breakdowns(
    results: Sequence[QuestionResult],
    prices: CostRates | None = None,
    *,
    groups: Sequence[str] = _GROUPS,
    summarizer: Callable[[Sequence[QuestionResult], CostRates | None], dict[str, Any]] = summarize,
) -> dict[str, Any]:
    """Metrics overall and per group.

    Returns:
        ``{"overall": ..., "by_source": {name: ...}, "by_hop_type": ..., "by_question_type": ...,
        "by_query_class": ...}``.
    """
    out: dict[str, Any] = {"overall": summarizer(results, prices)}
    for g in groups:
        buckets: dict[str, list[QuestionResult]] = {}
        for r in results:
            buckets.setdefault(str(getattr(r, g)) or "-", []).append(r)
        out[f"by_{g}"] = {k: summarizer(v, prices) for k, v in sorted(buckets.items())}
    return out
