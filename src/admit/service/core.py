"""The transport-free core of the service: one :class:`Service`, whose ``search``, ``prune`` and ``pack`` are the
one async boundary the HTTP routes (:mod:`admit.service.http`) and the MCP tools (:mod:`admit.service.mcp`)
call.

Each operation is a single ``async`` method taking the :class:`Caller` (the principal resolved by the transport:
an API key over HTTP, the configuration over MCP stdio; never read from a body), a ``read`` that builds the typed query
(:class:`SearchQuery`, :class:`PruneQuery`, a :class:`~admit.pipeline.PackRequest`) and a ``reply`` that shapes
the answer for the transport. All three run in a worker under the request's deadline
(:func:`admit.service.limits.run_bounded`): in ``admit serve`` one of the worker processes of
:mod:`admit.service.procs` (forked once the models are loaded, scheduled per tenant, killed and replaced at
the deadline), in an app built in-process a worker thread of :mod:`admit.service.work`. ``read`` and ``reply``
run in that worker too, so the HTTP face parses and validates a body and serializes its answer there: the
event loop only moves bytes. In the worker an operation checks the service's limits, then does the work, with
its metrics and the shadow policy's run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.errors import AuthorizationError, BackendError
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
from admit.types import Chunk, PackResult, Principal, answerable_of

if TYPE_CHECKING:
    from admit.policy import Resolution

__all__ = [
    "Caller",
    "PruneAnswer",
    "PruneQuery",
    "SearchQuery",
    "Service",
    "cap_tools",
    "prune_request_id",
    "trace_summary",
]

logger = logging.getLogger(__name__)

Q = TypeVar("Q")
A = TypeVar("A")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchQuery:
    """A knowledge-base search as the service runs it (the HTTP body and the MCP tool's arguments map onto it).

    ``prune``: ``True`` prunes (the routed class's strategy, else the service's ``prune_strategy``), ``False``
    never, ``None`` as the policy says (as on every other surface). ``tool_outputs`` are packed beside the
    evidence, capped by ``[service.tools]`` (:mod:`admit.tools`).
    """

    question: str
    top_k: int | None = None
    """Candidates to retrieve; ``None``: the routed policy's ``candidate_count`` (every face's default)."""
    prune: bool | None = None
    query_class: str | None = None
    model: str = "gpt-4o"
    input_limit: int = 16_000
    tool_outputs: Sequence[ToolOutput] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneQuery:
    """Bring-your-own chunks to prune (``POST /v1/prune`` and the MCP ``prune_context`` tool map onto it): the
    question, the chunks in the caller's order, the strategy (default: the service's ``prune_strategy``) and
    flat prune overrides (``threshold``, ``keep_top_k``, strategy parameters)."""

    question: str
    candidates: Sequence[Chunk]
    strategy: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneAnswer:
    """What a prune request returns: the pipeline's run (one verdict per candidate, in input order) and the
    request's trace record."""

    run: PruneRun
    trace: TraceRecord


Read = Callable[[], Q]
"""Builds an operation's typed query, in the worker (the HTTP face parses and validates its body here)."""
Reply = Callable[[Q, A], R]
"""Shapes an operation's answer for the transport, in the worker, from the query and the answer."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: the principal the transport resolved (an API key's, the MCP configuration's; never a body's)
    and the fair queue's per-key bound (the API key's label over HTTP)."""

    principal: Principal | None
    key: str | None = None

    @property
    def tenant(self) -> str | None:
        """The principal's tenant (its share of the workers)."""
        return self.principal.tenant if self.principal is not None else None

    def required(self) -> Principal:
        """The principal, which a search and a pack need (fail closed without one)."""
        if self.principal is None:
            raise AuthorizationError("no principal for this request")
        return self.principal


class Service:
    """The service's three operations over one :class:`~admit.service.state.ServiceState` (module docstring).

    ``read`` and ``reply`` run in the worker beside the work (they are pickled into a worker process with the
    job, the state by reference).
    """

    def __init__(self, state: ServiceState) -> None:
        self.state = state

    async def search(self, caller: Caller, read: Read[SearchQuery], reply: Reply[SearchQuery, PackResult, R]) -> R:
        """Search the knowledge base as the caller's principal and admit the result (:func:`_search`)."""
        state, principal = self.state, caller.required()
        return await _bounded(state, caller, read, lambda q: _search(state, q, principal), reply)

    async def prune(self, caller: Caller, read: Read[PruneQuery], reply: Reply[PruneQuery, PruneAnswer, R]) -> R:
        """Prune bring-your-own chunks (:func:`_prune`), in the caller's share of the workers (a caller over MCP
        stdio may have no principal: the prune reads no knowledge base)."""
        state = self.state
        return await _bounded(state, caller, read, lambda q: _prune(state, q), reply)

    async def pack(self, caller: Caller, read: Read[PackRequest], reply: Reply[PackRequest, PackResult, R]) -> R:
        """Run the whole pipeline on the caller's candidates (:func:`_pack`) as the caller's principal (whatever
        principal the request ``read`` builds carries); its model is a caller's model name."""
        state, principal = self.state, caller.required()
        return await _bounded(state, caller, read, lambda r: _pack(state, replace(r, principal=principal)), reply)


async def _bounded(
    state: ServiceState, caller: Caller, read: Read[Q], work: Callable[[Q], A], reply: Reply[Q, A, R]
) -> R:
    def job() -> R:
        query = read()
        return reply(query, work(query))

    return await run_bounded(state, job, tenant=caller.tenant, key=caller.key)


# ---------------------------------------------------------------- the work (in the worker)


def _search(state: ServiceState, query: SearchQuery, principal: Principal) -> PackResult:
    """Check the limits, retrieve as ``principal`` and admit: the one search path (in the calling thread).

    The settings are resolved once, on the service's pipeline (:meth:`Pipeline.resolve`; ``prune=true`` on a
    class whose strategy is ``none`` runs the service's ``prune_strategy``); the knowledge base retrieves for
    that resolution (:meth:`KnowledgeBase.search_request`, what :meth:`KnowledgeBase.search` packs) and the
    pipeline packs it with the same resolution. A shadow policy packs the same candidates (no second retrieval).
    """
    check_search_limits(query.question, query.top_k, state.limits)
    kb = state.kb
    if kb is None:
        raise BackendError("no knowledge base is configured on this server (start it with --kb)")
    request_id = new_request_id()  # one id for the rollout, the retrieval and the trace
    resolved = state.pipeline.resolve(
        query.question,
        query_class=query.query_class,
        strategy="none" if query.prune is False else None,
        request_id=request_id,
    )
    if query.prune and resolved.prune.strategy == "none" and not resolved.kill_switch:
        resolved = resolved.with_strategy(state.settings.prune_strategy)
    req = kb.search_request(
        query.question,
        principal,
        resolved=resolved,
        prune="none" if query.prune is False else resolved.prune.strategy if query.prune else None,
        query_class=query.query_class,
        model=resolve_model(query.model, state.settings),
        input_limit=query.input_limit,
        k=query.top_k,
        request_id=request_id,
        tool_outputs=cap_tools(query.tool_outputs, state),
    )
    return _pack_with_shadow(state, "/v1/search", req, resolved=resolved)


def _pack(state: ServiceState, req: PackRequest) -> PackResult:
    """Check the limits, map the model name, cap the tool outputs, then pack (in the calling thread)."""
    check_pack_limits(req, state.limits)
    req = replace(
        req,
        model=resolve_model(req.model if isinstance(req.model, str) else "", state.settings),
        tool_outputs=cap_tools(req.tool_outputs, state),
    )
    return _pack_with_shadow(state, "/v1/pack", req)


def _prune(state: ServiceState, query: PruneQuery) -> PruneAnswer:
    """Check the limits, rerank (when scores are missing) and prune bring-your-own chunks (in the calling thread).

    The settings are resolved like a pack's (:meth:`Pipeline.resolve`: the staged rollout, the routed class,
    the strategy, the caller's overrides, the kill switch); the strategy defaults to the service's
    ``prune_strategy``. A pruner failure never becomes a 500: ``on_error = "raise"`` is served as ``keep_top_k``
    (or the service's ``prune_on_error``).
    """
    check_prune_limits(query.question, [c.text for c in query.candidates], state.limits)
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


def cap_tools(outputs: Sequence[ToolOutput], state: ServiceState) -> list[ToolOutput]:
    """The caller's tool outputs under the server's ``[service.tools]`` ceilings (the lower cap wins)."""
    cfg = state.settings.tools
    return [
        replace(o, max_rows=min(o.max_rows, cfg.max_rows), max_bytes=min(o.max_bytes, cfg.max_bytes)) for o in outputs
    ]


def prune_request_id(question: str, candidates: Sequence[Chunk]) -> str:
    """The hash of a prune request, of the question and the candidates: the trace's ``request_hash`` (the
    record's ``request_id`` is a fresh UUIDv7, which decides the rollout share)."""
    return request_hash(PackRequest(question=question, principal=None, candidates=candidates))


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
        # None for "unsure" as for "not assessed": answer_state tells them apart (None: not assessed)
        "answerable": answerable_of(rec["answer"]["state"]) if "answer" in rec else None,
        "answer_state": rec["answer"]["state"] if "answer" in rec else None,
        "pruner": dict(pruner) if pruner else None,
        "tools": [dict(t) for t in rec.get("tools", [])],  # what happened to each tool output (counts only)
        "flags": {k: list(v) for k, v in rec.get("flags", {}).items()},  # injection flags: ids and kinds, no text
        "latency_ms": dict(rec.get("latency_ms", {})),  # the one shape: milliseconds by stage, and total
    }


# ---------------------------------------------------------------- metrics and shadow runs


def _count_dropped(state: ServiceState, route: str, model: str | Tokenizer, texts: Sequence[str]) -> None:
    """Count the tokens of the dropped candidates' ``texts`` (metrics never fail a request)."""
    if not texts:
        return
    try:
        tok = resolve_tokenizer(model)
        state.metrics.tokens_dropped.labels(route=route).inc(sum(tok.count(t) for t in texts))
    except Exception:
        logger.debug("could not count dropped tokens", exc_info=True)


def _record_prune_metrics(state: ServiceState, run: PruneRun) -> None:
    outcome = run.outcome
    if outcome is not None and outcome.fallback:
        state.metrics.pruner_fallbacks.labels(strategy=outcome.strategy, action=outcome.fallback).inc()
    dropped = [v.chunk for v in run.verdicts if not v.kept]
    for _ in dropped:
        state.metrics.candidates_dropped.labels(route="/v1/prune", reason="pruned").inc()
    _count_dropped(state, "/v1/prune", "gpt-4o", [c.text for c in dropped])


def _record_pack_metrics(state: ServiceState, route: str, req: PackRequest, res: PackResult) -> None:
    m = state.metrics
    dropped = [d for d in res.decisions if d.state == "dropped"]
    for d in dropped:
        m.candidates_dropped.labels(route=route, reason=d.reason).inc()
    by_id = {c.id: c for c in req.candidates}
    _count_dropped(state, route, req.model, [by_id[d.chunk_id].text for d in dropped if d.chunk_id in by_id])
    m.tokens_admitted.labels(route=route).inc(int(res.trace.get("evidence_tokens", 0) or 0))
    pruner = res.trace.get("pruner") or {}
    if pruner.get("fallback"):
        m.pruner_fallbacks.labels(strategy=str(pruner.get("strategy")), action=str(pruner["fallback"])).inc()


def _pack_with_shadow(
    state: ServiceState, route: str, req: PackRequest, *, resolved: Resolution | None = None
) -> PackResult:
    """Pack ``req`` (with its resolution, when the caller made it); the shadow pipeline packs the same request
    under its own policies (no second retrieval), logged and counted beside it."""
    res = state.pipeline.pack(req, resolved=resolved)
    _record_pack_metrics(state, route, req, res)
    shadow = state.shadow
    if shadow is not None:
        _run_shadow(state, lambda: shadow.pack(req), res)
    return res


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
