"""The transport-free core of the service: search, prune and pack, shared by the HTTP routes and the MCP tools.

Each operation comes twice: a blocking ``run_*`` function (the work itself, with metrics and shadow runs)
and an ``async`` function that checks the limits, waits for the models if they are still loading, and runs
the blocking work in a worker thread under the request deadline. The principal is always an argument,
resolved by the transport (an API key over HTTP, the configuration over MCP stdio), never read from a body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from admit.backends.tokenizers import resolve_tokenizer
from admit.errors import BackendError
from admit.pipeline import PackRequest, PruneRun, request_hash
from admit.service.limits import (
    check_pack_limits,
    check_prune_limits,
    check_search_limits,
    resolve_model,
    run_bounded,
)
from admit.service.state import ServiceState
from admit.tools import ToolOutput
from admit.trace import TraceRecord, build_prune_record, new_request_id
from admit.types import Chunk, PackResult, Principal

if TYPE_CHECKING:
    from admit.kb import KnowledgeBase
    from admit.policy import Resolution

__all__ = [
    "PruneAnswer",
    "PruneQuery",
    "SearchQuery",
    "cap_tools",
    "pack",
    "pack_now",
    "prune",
    "prune_now",
    "run_pack",
    "run_prune",
    "run_search",
    "search",
    "search_now",
    "trace_summary",
]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- the async entry points (limits + deadline)


async def search(state: ServiceState, query: SearchQuery, principal: Principal) -> PackResult:
    """Search the knowledge base as ``principal`` and admit the result, within the limits and the deadline."""
    return await run_bounded(state, lambda: search_now(state, query, principal), tenant=principal.tenant)


async def prune(state: ServiceState, query: PruneQuery, principal: Principal | None = None) -> PruneAnswer:
    """Prune bring-your-own chunks, within the limits and the deadline (in ``principal``'s share of workers)."""
    tenant = principal.tenant if principal is not None else None
    return await run_bounded(state, lambda: prune_now(state, query), tenant=tenant)


async def pack(state: ServiceState, req: PackRequest) -> PackResult:
    """Run the whole pipeline on the caller's candidates, within the limits and the deadline.

    ``req.principal`` must be the transport's principal; ``req.model`` a caller's model name.
    """
    tenant = req.principal.tenant if req.principal is not None else None
    return await run_bounded(state, lambda: pack_now(state, req), tenant=tenant)


def search_now(state: ServiceState, query: SearchQuery, principal: Principal) -> PackResult:
    """:func:`search` in the calling thread (a worker): the limits, then the work."""
    check_search_limits(query.question, query.top_k, state.limits)
    kb = state.kb
    if kb is None:
        raise BackendError("no knowledge base is configured on this server (start it with --kb)")
    return run_search(state, kb, query, principal)[0]


def prune_now(state: ServiceState, query: PruneQuery) -> PruneAnswer:
    """:func:`prune` in the calling thread (a worker): the limits, then the work."""
    check_prune_limits(query.question, [c.text for c in query.candidates], state.limits)
    return run_prune(state, query)


def pack_now(state: ServiceState, req: PackRequest) -> PackResult:
    """:func:`pack` in the calling thread (a worker): the limits, the model name, the tool caps, then the work."""
    check_pack_limits(req, state.limits)
    req = replace(
        req,
        model=resolve_model(req.model if isinstance(req.model, str) else "", state.settings),
        tool_outputs=cap_tools(req.tool_outputs, state),
    )
    return _pack_with_shadow(state, "/v1/pack", req)[0]


def cap_tools(outputs: Sequence[ToolOutput], state: ServiceState) -> list[ToolOutput]:
    """The caller's tool outputs under the server's ``[service.tools]`` ceilings (the lower cap wins)."""
    cfg = state.settings.tools
    return [
        replace(o, max_rows=min(o.max_rows, cfg.max_rows), max_bytes=min(o.max_bytes, cfg.max_bytes)) for o in outputs
    ]


# ---------------------------------------------------------------- the work


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchQuery:
    """A knowledge-base search as the service runs it (the HTTP body and the MCP tool's arguments map onto it)."""

    question: str
    """The question."""
    top_k: int = 8
    """Chunks retrieved."""
    prune: bool | None = None
    """``True``: prune (the routed class's strategy, else the service's ``prune_strategy``); ``False``: never;
    ``None``: the policy's strategy, as on every other surface."""
    query_class: str | None = None
    """Force a query class."""
    model: str = "gpt-4o"
    """Target model (tokenizer)."""
    input_limit: int = 16_000
    """The target model's input limit."""
    tool_outputs: Sequence[ToolOutput] = ()
    """Tool results packed beside the evidence (capped by ``[service.tools]``; see :mod:`admit.tools`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneQuery:
    """Bring-your-own chunks to prune (``POST /v1/prune`` and the MCP ``prune_context`` tool map onto it)."""

    question: str
    """The question."""
    candidates: Sequence[Chunk]
    """The chunks, in the caller's order."""
    strategy: str | None = None
    """The strategy (default: the service's ``prune_strategy``)."""
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Flat prune overrides: ``threshold``, ``keep_top_k``, strategy parameters."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneAnswer:
    """What a prune request returns: the run (one verdict per candidate, in input order) and its trace."""

    run: PruneRun
    """The pipeline's prune run."""
    trace: TraceRecord
    """The request's trace record."""


def run_search(
    state: ServiceState, kb: KnowledgeBase, query: SearchQuery, principal: Principal
) -> tuple[PackResult, str | None]:
    """Retrieve as ``principal`` and admit (``query.prune``: true, false, or the policy's): one search path.

    The settings are resolved once (:meth:`KnowledgeBase.resolve` on the service's pipeline; ``prune=true`` on a
    class whose strategy is ``none`` runs the service's ``prune_strategy``), the knowledge base retrieves for
    that resolution (:meth:`KnowledgeBase.search_request`, what :meth:`KnowledgeBase.search` packs), and the
    pipeline packs it; a shadow policy packs the same candidates. Returns the result and the shadow outcome
    (``None`` without a shadow policy).
    """
    question = query.question
    pipe = state.pipeline
    request_id = new_request_id()  # one id for the rollout, the retrieval and the trace
    resolved = kb.resolve(
        pipe,
        question,
        prune=False if query.prune is False else None,
        query_class=query.query_class,
        request_id=request_id,
    )
    if query.prune and resolved.prune.strategy == "none" and not resolved.kill_switch:
        resolved = resolved.with_strategy(state.settings.prune_strategy)
    forced = "none" if query.prune is False else resolved.prune.strategy if query.prune else None
    req = kb.search_request(
        question,
        principal,
        resolved=resolved,
        prune=forced,
        query_class=query.query_class,
        model=resolve_model(query.model, state.settings),
        input_limit=query.input_limit,
        k=query.top_k,
        request_id=request_id,
        tool_outputs=cap_tools(query.tool_outputs, state),
    )
    return _pack_with_shadow(state, "/v1/search", req, resolved=resolved)


def run_pack(state: ServiceState, req: PackRequest) -> tuple[PackResult, str | None]:
    """Pack ``req`` with the service's pipeline (and its shadow); return the result and the shadow outcome."""
    return _pack_with_shadow(state, "/v1/pack", req)


def run_prune(state: ServiceState, query: PruneQuery) -> PruneAnswer:
    """Rerank (when scores are missing) and prune bring-your-own chunks.

    The settings are resolved like a pack's (:meth:`Pipeline.resolve`: the staged rollout, the routed class,
    the strategy, the caller's overrides, the kill switch); the strategy defaults to the service's
    ``prune_strategy``. A pruner failure never becomes a 500: ``on_error = "raise"`` is served as ``keep_top_k``
    (or the service's ``prune_on_error``).
    """
    t0 = time.perf_counter()
    pipe = state.pipeline
    question, candidates = query.question, query.candidates
    digest, request_id = prune_request_id(question, candidates), new_request_id()
    resolved = pipe.resolve(
        question,
        strategy=query.strategy or state.settings.prune_strategy,
        overrides=query.overrides,
        request_id=request_id,
    )
    settings = resolved.prune
    if state.settings.prune_on_error:
        settings = settings.with_overrides({"on_error": state.settings.prune_on_error})
    elif settings.on_error == "raise":
        settings = settings.with_overrides({"on_error": "keep_top_k"})
    kill = resolved.kill_switch
    run = pipe.prune(question, candidates, settings, skip_reason="kill_switch" if kill else "strategy none")
    outcome = run.outcome
    if outcome is not None:
        _record_prune_metrics(state, run)
    prune_ms = (time.perf_counter() - t0) * 1000
    trace = build_prune_record(
        request_id=request_id,
        request_hash=digest,
        route=resolved.record(),
        policy_version=resolved.policy_version,
        kill_switch=kill,
        candidate_count=len(candidates),
        accepted_ids=run.kept_ids,
        pruner=outcome.as_dict() if outcome is not None else None,
        latency_ms={"prune": prune_ms},
        total_ms=prune_ms,
    )
    return PruneAnswer(run=run, trace=trace)


def prune_request_id(question: str, candidates: Sequence[Chunk]) -> str:
    """The hash of a prune request, of the question and the candidates: the trace's ``request_hash`` (the
    record's ``request_id`` is a fresh UUIDv7, which decides the rollout share)."""
    return request_hash(PackRequest(question=question, principal=None, candidates=candidates))


def _record_prune_metrics(state: ServiceState, run: PruneRun) -> None:
    m = state.metrics
    outcome = run.outcome
    if outcome is not None and outcome.fallback:
        m.pruner_fallbacks.labels(strategy=outcome.strategy, action=outcome.fallback).inc()
    dropped = [v.chunk for v in run.verdicts if not v.kept]
    for _ in dropped:
        m.candidates_dropped.labels(route="/v1/prune", reason="pruned").inc()
    if dropped:
        try:
            tok = resolve_tokenizer("gpt-4o")
            m.tokens_dropped.labels(route="/v1/prune").inc(sum(tok.count(c.text) for c in dropped))
        except Exception:
            logger.debug("could not count dropped tokens", exc_info=True)


def trace_summary(trace: TraceRecord | Mapping[str, Any]) -> dict[str, Any]:
    """The short form of a trace record returned to callers (no per-candidate decisions, no text)."""
    rec = cast(TraceRecord, trace)
    route = rec.get("route")
    pruner = rec.get("pruner")
    return {
        "request_id": rec.get("request_id"),
        "query_class": rec.get("query_class"),
        "cue": route["cue"] if route else None,
        "kill_switch": bool(route.get("kill_switch", False)) if route else False,
        "policy_version": rec.get("policy_version"),
        "evidence_budget": rec.get("evidence_budget"),
        "evidence_tokens": rec.get("evidence_tokens"),
        "candidate_count": rec.get("candidate_count"),
        "accepted_chunk_ids": list(rec.get("accepted_chunk_ids", [])),
        "dropped": dict(rec.get("dropped", {})),
        "fallbacks": [f["kind"] for f in rec.get("fallbacks", [])],
        "answerable": rec["answerability"]["answerable"] if "answerability" in rec else None,
        "pruner": dict(pruner) if pruner else None,
        "tools": [dict(t) for t in rec.get("tools", [])],  # what happened to each tool output (counts only)
        "flags": {k: list(v) for k, v in rec.get("flags", {}).items()},  # injection flags: ids and kinds, no text
        "latency_ms": dict(rec.get("latency_ms", {})),  # the one shape: milliseconds by stage, and total
    }


# ---------------------------------------------------------------- metrics and shadow runs


def _record_pack_metrics(state: ServiceState, route: str, req: PackRequest, res: PackResult) -> None:
    m = state.metrics
    dropped = [d for d in res.decisions if d.state == "dropped"]
    for d in dropped:
        m.candidates_dropped.labels(route=route, reason=d.reason).inc()
    if dropped:
        try:
            tok = resolve_tokenizer(req.model)
            by_id = {c.id: c for c in req.candidates}
            m.tokens_dropped.labels(route=route).inc(sum(tok.count(by_id[d.chunk_id].text) for d in dropped))
        except Exception:  # metrics must never fail a request
            logger.debug("could not count dropped tokens", exc_info=True)
    m.tokens_admitted.labels(route=route).inc(int(res.trace.get("evidence_tokens", 0) or 0))
    _record_fallback(state, res)


def _record_fallback(state: ServiceState, res: PackResult) -> None:
    pruner = res.trace.get("pruner") or {}
    if pruner.get("fallback"):
        state.metrics.pruner_fallbacks.labels(
            strategy=str(pruner.get("strategy")), action=str(pruner["fallback"])
        ).inc()


def _pack_with_shadow(
    state: ServiceState, route: str, req: PackRequest, *, resolved: Resolution | None = None
) -> tuple[PackResult, str | None]:
    """Pack ``req`` (with its resolution, when the caller made it); the shadow pipeline packs the same request
    under its own policies (no second retrieval)."""
    res = state.pipeline.pack(req, resolved=resolved)
    _record_pack_metrics(state, route, req, res)
    shadow = state.shadow
    outcome = _run_shadow(state, lambda: shadow.pack(req), res) if shadow is not None else None
    return res, outcome


def _run_shadow(state: ServiceState, compute: Callable[[], PackResult], current: PackResult) -> str:
    """Run ``compute`` (the shadow pack), log it beside ``current``; return ``same``, ``differs`` or ``failed``."""
    try:
        res = compute()
    except Exception as exc:
        state.metrics.shadow_runs.labels(outcome="failed").inc()
        logger.warning("shadow pack failed for request %s: %s", current.trace.get("request_id"), type(exc).__name__)
        return "failed"
    same = res.admitted_ids == current.admitted_ids
    outcome = "same" if same else "differs"
    state.metrics.shadow_runs.labels(outcome=outcome).inc()
    record = {
        "shadow": True,
        "request_id": current.trace.get("request_id"),
        "policy_version": res.trace.get("policy_version"),
        "current_policy_version": current.trace.get("policy_version"),
        "current_accepted_chunk_ids": current.admitted_ids,
        "shadow_accepted_chunk_ids": res.admitted_ids,
        "same_admitted": same,
        "trace": dict(res.trace),
    }
    logger.info(
        "shadow request=%s admitted=%s current=%s outcome=%s",
        record["request_id"],
        res.admitted_ids,
        current.admitted_ids,
        outcome,
    )
    if state.sink is not None:
        try:
            state.sink.write(record)
        except Exception:
            logger.exception("trace sink failed for the shadow record")
    return outcome
