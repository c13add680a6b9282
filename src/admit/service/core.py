"""The transport-free core of the service: search, prune and pack, shared by the HTTP routes and the MCP tools.

Each operation comes twice: a blocking ``run_*`` function (the work itself, with metrics and shadow runs)
and an ``async`` function that checks the limits, waits for the models if they are still loading, and runs
the blocking work in a worker thread under the request deadline. The principal is always an argument,
resolved by the transport (an API key over HTTP, the configuration over MCP stdio), never read from a body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from admit.backends.tokenizers import resolve_tokenizer
from admit.errors import BackendError
from admit.pipeline import PackRequest, Pipeline
from admit.service.limits import (
    check_pack_limits,
    check_prune_limits,
    check_search_limits,
    resolve_model,
    run_bounded,
)
from admit.service.schemas import PruneBody, PruneDecisionOut, PruneResponse, SearchBody
from admit.service.state import KnowledgeBaseLike, ServiceState
from admit.types import Chunk, PackResult, Principal

__all__ = [
    "pack",
    "prune",
    "run_pack",
    "run_prune",
    "run_search",
    "search",
    "trace_summary",
]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- the async entry points (limits + deadline)


async def search(state: ServiceState, body: SearchBody, principal: Principal) -> PackResult:
    """Search the knowledge base as ``principal`` and admit the result, within the limits and the deadline."""
    check_search_limits(body.question, body.top_k, state.limits)
    kb = state.kb
    if kb is None:
        raise BackendError("no knowledge base is configured on this server (start it with --kb)")
    res, _ = await run_bounded(state, lambda: run_search(state, kb, body, principal), tenant=principal.tenant)
    return res


async def prune(state: ServiceState, body: PruneBody, principal: Principal | None = None) -> PruneResponse:
    """Prune bring-your-own chunks, within the limits and the deadline (in ``principal``'s share of workers)."""
    check_prune_limits(body.question, [c.text for c in body.candidates], state.limits)
    tenant = principal.tenant if principal is not None else None
    return await run_bounded(state, lambda: run_prune(state, body), tenant=tenant)


async def pack(state: ServiceState, req: PackRequest) -> PackResult:
    """Run the whole pipeline on the caller's candidates, within the limits and the deadline.

    ``req.principal`` must be the transport's principal; ``req.model`` a caller's model name.
    """
    check_pack_limits(req, state.limits)
    req = replace(req, model=resolve_model(req.model if isinstance(req.model, str) else "", state.settings))
    tenant = req.principal.tenant if req.principal is not None else None
    res, _ = await run_bounded(state, lambda: _pack_with_shadow(state, "/v1/pack", req), tenant=tenant)
    return res


# ---------------------------------------------------------------- the work


def run_search(
    state: ServiceState, kb: KnowledgeBaseLike, body: SearchBody, principal: Principal
) -> tuple[PackResult, str | None]:
    """Retrieve ``top_k`` chunks as ``principal`` and admit them (pruned only when ``body.prune``).

    A knowledge base with a ``search`` method (:class:`admit.kb.KnowledgeBase`) runs retrieval and the
    service's pipeline itself; anything else is used through ``retrieve`` and packed here. Returns the result
    and the shadow outcome (``None`` without a shadow policy).
    """
    question = body.question
    strategy: str = "none"
    if body.prune:
        route = state.pipeline.policies.classify(question, override=body.policy)
        configured = state.pipeline.policies.policy(route.query_class).prune.strategy
        strategy = configured if configured != "none" else state.settings.prune_strategy
    model = resolve_model(body.model, state.settings)
    kb_search = getattr(kb, "search", None)
    if callable(kb_search):

        def run(pipe: Pipeline) -> PackResult:
            return kb_search(  # type: ignore[no-any-return]
                question,
                principal,
                prune=strategy,
                model=model,
                input_limit=body.input_limit,
                pipeline=pipe,
                k=body.top_k,
                query_class=body.policy,
            )

        res = run(state.pipeline)
        _record_search_metrics(state, res)
        shadow_pipe = state.shadow
        shadow = _run_shadow(state, lambda: run(shadow_pipe), res) if shadow_pipe is not None else None
        return res, shadow
    candidates = kb.retrieve(question, principal, k=body.top_k, filters=None)
    req = PackRequest(
        question=question,
        principal=principal,
        candidates=candidates,
        model=model,
        input_limit=body.input_limit,
        query_class=body.policy,
        prune=strategy,
    )
    return _pack_with_shadow(state, "/v1/search", req)


def run_pack(state: ServiceState, req: PackRequest) -> tuple[PackResult, str | None]:
    """Pack ``req`` with the service's pipeline (and its shadow); return the result and the shadow outcome."""
    return _pack_with_shadow(state, "/v1/pack", req)


def run_prune(state: ServiceState, body: PruneBody) -> PruneResponse:
    """Rerank (when scores are missing) and prune bring-your-own chunks."""
    t0 = time.perf_counter()
    chunks = [
        Chunk(id=c.id, source_id=c.source_id or c.id, text=c.text, title=c.title, score=c.score, metadata=c.metadata)
        for c in body.candidates
    ]
    pipe = state.pipeline
    policies = pipe.policies
    route = policies.classify(body.question)
    settings = policies.policy(route.query_class).prune
    changes: dict[str, Any] = {"strategy": body.strategy or state.settings.prune_strategy}
    if body.threshold is not None:
        changes["threshold"] = body.threshold
    if body.keep_top_k is not None:
        changes["keep_top_k"] = body.keep_top_k
    if state.settings.prune_on_error:
        changes["on_error"] = state.settings.prune_on_error
    elif settings.on_error == "raise":
        changes["on_error"] = "keep_top_k"  # a service never lets a pruner failure become a 500
    if body.params:
        changes["params"] = {**settings.params, **body.params}
    settings = replace(settings, **changes)
    kill = policies.kill_switch
    if kill:
        settings = replace(settings, strategy="none")
    run = pipe.prune(body.question, chunks, settings, skip_reason="kill_switch" if kill else "strategy none")
    decisions = [
        PruneDecisionOut(id=v.chunk.id, kept=v.kept, grade=v.grade, reason=v.reason, score=v.score, rank=v.rank)
        for v in run.verdicts
    ]
    trace: dict[str, Any] = {"kill_switch": kill, "query_class": route.query_class}
    outcome = run.outcome
    if outcome is None:
        trace["latency_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        return PruneResponse(
            strategy="none",
            kept_ids=[c.id for c in chunks],
            decisions=decisions,
            fallback=None,
            error=None,
            usage={},
            trace=trace,
        )
    m = state.metrics
    if outcome.fallback:
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
    trace["pruner"] = outcome.as_dict()
    trace["latency_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    return PruneResponse(
        strategy=outcome.strategy,
        kept_ids=run.kept_ids,
        decisions=decisions,
        fallback=outcome.fallback,
        error=outcome.error,
        usage=outcome.usage.as_dict(),
        trace=trace,
    )


def trace_summary(trace: Mapping[str, Any]) -> dict[str, Any]:
    """The short form of a trace record returned to callers (no per-candidate decisions, no text)."""
    route = trace.get("route") or {}
    pruner = trace.get("pruner")
    return {
        "request_id": trace.get("request_id"),
        "query_class": trace.get("query_class"),
        "cue": route.get("cue"),
        "kill_switch": bool(route.get("kill_switch", False)),
        "policy_version": trace.get("policy_version"),
        "evidence_budget": trace.get("evidence_budget"),
        "evidence_tokens": trace.get("evidence_tokens"),
        "candidate_count": trace.get("candidate_count"),
        "accepted_chunk_ids": list(trace.get("accepted_chunk_ids", [])),
        "dropped": dict(trace.get("dropped", {})),
        "fallbacks": [f.get("kind") for f in trace.get("fallbacks", [])],
        "pruner": dict(pruner) if pruner else None,
        "latency_ms": (trace.get("latency_ms") or {}).get("total"),
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


def _record_search_metrics(state: ServiceState, res: PackResult) -> None:
    m = state.metrics
    for d in res.decisions:
        if d.state == "dropped":
            m.candidates_dropped.labels(route="/v1/search", reason=d.reason).inc()
    m.tokens_admitted.labels(route="/v1/search").inc(int(res.trace.get("evidence_tokens", 0) or 0))
    _record_fallback(state, res)


def _record_fallback(state: ServiceState, res: PackResult) -> None:
    pruner = res.trace.get("pruner") or {}
    if pruner.get("fallback"):
        state.metrics.pruner_fallbacks.labels(
            strategy=str(pruner.get("strategy")), action=str(pruner["fallback"])
        ).inc()


def _pack_with_shadow(state: ServiceState, route: str, req: PackRequest) -> tuple[PackResult, str | None]:
    res = state.pipeline.pack(req)
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
