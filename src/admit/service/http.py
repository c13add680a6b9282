"""The HTTP API (FastAPI): ``/v1/search``, ``/v1/prune``, ``/v1/pack``, ``/healthz``, ``/metrics``.

Every ``/v1/*`` call needs an API key (``X-API-Key: KEY`` or ``Authorization: Bearer KEY``); the key maps
to a principal in the config, and the principal never comes from the body. Errors are JSON
(``{"error", "detail", "field"}``) and never carry a traceback:

=====================================  ======
missing or unknown key                 401
``AuthorizationError``                 403
body, candidate count or text too big  413
malformed request, bad setting         422
backend failure                        503
request over ``request_timeout_s``     504
=====================================  ======
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from admit.backends.rerankers import resolve_reranker
from admit.backends.tokenizers import resolve_tokenizer
from admit.errors import (
    AdmitError,
    AuthorizationError,
    BackendError,
    BackendTimeout,
    BudgetError,
    ConfigError,
    MissingExtraError,
    RequestError,
)
from admit.pipeline import PackRequest, Pipeline
from admit.prune import Pruner, run_pruner
from admit.rerank import rerank
from admit.route import PolicySet, load_policy_set
from admit.service.config import KeyRing, Limits, ServiceSettings
from admit.service.metrics import CONTENT_TYPE, ServiceMetrics
from admit.service.schemas import (
    ErrorBody,
    PackBody,
    PruneBody,
    PruneDecisionOut,
    PruneResponse,
    SearchBody,
    SearchResponse,
    pack_request_from_body,
)
from admit.trace import JsonlSink, TraceSink
from admit.types import Chunk, PackResult, Principal

__all__ = ["KnowledgeBaseLike", "LimitExceeded", "LoopbackServer", "ServiceState", "create_app", "trace_summary"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class KnowledgeBaseLike(Protocol):
    """What the service needs from a knowledge base (:class:`admit.kb.KnowledgeBase`)."""

    def retrieve(
        self, question: str, principal: Principal, *, k: int, filters: Mapping[str, Any] | None = None
    ) -> list[Chunk]:
        """Return up to ``k`` chunks the principal may read, best first."""
        ...


class LimitExceeded(AdmitError):
    """A request is over a configured limit (413)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        """Create the error; ``field`` names the offending field."""
        super().__init__(message)
        self.field = field


@dataclass(slots=True, kw_only=True)
class ServiceState:
    """Everything one app holds: settings, key ring, pipelines, knowledge base, metrics."""

    settings: ServiceSettings
    keyring: KeyRing
    pipeline: Pipeline
    shadow: Pipeline | None
    kb: KnowledgeBaseLike | None
    metrics: ServiceMetrics
    sink: TraceSink | None

    @property
    def limits(self) -> Limits:
        """The request limits."""
        return self.settings.limits


def _policy_set(path: Any, kill_switch: bool, on_error: str | None) -> PolicySet:
    ps = load_policy_set(path)
    if on_error:
        ps = replace(ps, classes={name: pol.with_prune(on_error=on_error) for name, pol in ps.classes.items()})
    return replace(ps, kill_switch=True) if kill_switch and not ps.kill_switch else ps


def build_state(
    settings: ServiceSettings,
    *,
    kb: KnowledgeBaseLike | None = None,
    pruner: Pruner | None = None,
    pruner_options: Mapping[str, Any] | None = None,
    sink: TraceSink | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServiceState:
    """Resolve keys, load policies and build the pipelines (a bad setting raises :class:`ConfigError`)."""
    keyring = KeyRing(settings.keys, environ=environ)
    if sink is None and settings.trace_file:
        trace_path = settings.path(settings.trace_file)
        assert trace_path is not None
        sink = JsonlSink(trace_path)
    policies = _policy_set(settings.path(settings.policy), settings.kill_switch, settings.prune_on_error)
    kb_embedder = getattr(kb, "cached_embedder", None)  # not `or`: an empty cache has len 0
    if kb_embedder is None:
        kb_embedder = getattr(kb, "embedder", None)
    if pruner_options is None and kb_embedder is not None:
        pruner_options = {"embedder": kb_embedder}  # share the KB's loaded model with setwise
    reranker = resolve_reranker(settings.reranker)
    pipeline = Pipeline(policies=policies, reranker=reranker, pruner=pruner, pruner_options=pruner_options, sink=sink)
    shadow = None
    if settings.shadow_policy:
        shadow = Pipeline(
            policies=_policy_set(settings.path(settings.shadow_policy), settings.kill_switch, settings.prune_on_error),
            reranker=reranker,
            pruner=pruner,
            pruner_options=pruner_options,
            sink=None,
        )
    if not len(keyring):
        logger.warning("no API keys configured: every /v1 call will get 401")
    return ServiceState(
        settings=settings, keyring=keyring, pipeline=pipeline, shadow=shadow, kb=kb, metrics=ServiceMetrics(), sink=sink
    )


def _error(
    status: int, error: str, detail: str, field: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = ErrorBody(error=error, detail=detail, field=field).model_dump()
    return JSONResponse(body, status_code=status, headers=headers)


async def _send_json(send: Send, status: int, body: JSONResponse) -> None:
    await send({"type": "http.response.start", "status": status, "headers": body.raw_headers})
    await send({"type": "http.response.body", "body": body.body})


class _Gate:
    """Pure ASGI middleware: metrics for every request; API-key auth and the body limit for ``/v1/*``."""

    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status_box = [500]

        async def send_wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = int(message["status"])
            await send(message)

        try:
            await self._handle(scope, receive, send_wrapped)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or _route_label(str(scope.get("path", "")))
            m = self.state.metrics
            m.requests.labels(route=path, method=scope.get("method", ""), status=str(status_box[0])).inc()
            m.latency.labels(route=path).observe(time.perf_counter() - t0)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if not path.startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        key = headers.get("x-api-key")
        if key is None:
            auth = headers.get("authorization", "")
            if auth[:7].lower() == "bearer ":
                key = auth[7:].strip()
        found = self.state.keyring.lookup(key)
        if found is None:
            why = "missing API key" if not key else "unknown API key"
            resp = _error(
                401,
                "unauthorized",
                f"{why}: send X-API-Key: KEY (or Authorization: Bearer KEY)",
                headers={"WWW-Authenticate": 'ApiKey header="X-API-Key"'},
            )
            await _send_json(send, 401, resp)
            return
        label, principal = found
        scope.setdefault("state", {})
        scope["state"]["principal"] = principal
        scope["state"]["key_label"] = label
        limit = self.state.limits.max_body_bytes
        declared = headers.get("content-length")
        too_big = _error(
            413, "payload_too_large", f"request body over max_body_bytes={limit}; send fewer or shorter candidates"
        )
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _send_json(send, 413, too_big)
            return
        # buffer the body (bounded), so a body without Content-Length is held to the limit too
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await _send_json(send, 413, too_big)
                return
            chunks.append(body)
            more = bool(message.get("more_body", False))
        data = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key mapped to a principal.")


def _principal(request: Request, _key: str | None = Depends(_api_key_header)) -> Principal:
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):  # the gate always sets it; fail closed anyway
        raise AuthorizationError("no principal for this request")
    return principal


PrincipalDep = Annotated[Principal, Depends(_principal)]

_ROUTES = ("/v1/pack", "/v1/search", "/v1/prune", "/healthz", "/metrics", "/openapi.json", "/docs")


def _route_label(path: str) -> str:
    """A bounded metrics label for a request the router did not see (refused at the gate, or unknown)."""
    if path in _ROUTES:
        return path
    return "/v1/*" if path.startswith("/v1/") else "other"


def _check_text(value: str, field: str, limits: Limits) -> None:
    if len(value) > limits.max_text_chars:
        raise LimitExceeded(
            f"{field}: {len(value)} characters is over max_text_chars={limits.max_text_chars}; shorten or split it",
            field=field,
        )


def _check_candidates(n: int, limits: Limits) -> None:
    if n > limits.max_candidates:
        raise LimitExceeded(
            f"candidates: {n} candidates is over max_candidates={limits.max_candidates}; send fewer",
            field="candidates",
        )


def resolve_model(name: str, settings: ServiceSettings) -> str:
    """Map a caller's model name to a tokenizer spec; refuse paths and ``hf:`` specs (no server file access)."""
    if name in settings.models:
        return settings.models[name]
    low = name.strip().lower()
    if any(ch in name for ch in "/\\\0") or low.startswith(("hf:", "fake:", ".", "~")) or low.endswith(".json"):
        raise RequestError(
            f"model: {name[:80]!r} looks like a file path; over HTTP give a model name (gpt-4o, ...) or an "
            "encoding, or ask the operator to map a name in [service.models]",
            field="model",
        )
    if len(name) > 100:
        raise RequestError("model: longer than 100 characters; give a model name such as gpt-4o", field="model")
    try:
        exists = Path(name).exists()
    except OSError:
        exists = True
    if exists:
        raise RequestError(f"model: {name!r} names a server path; give a model name such as gpt-4o", field="model")
    return name


def check_pack_limits(req: PackRequest, limits: Limits) -> None:
    """Raise :class:`LimitExceeded` when a pack request is over a limit."""
    _check_candidates(len(req.candidates), limits)
    _check_text(req.question, "question", limits)
    _check_text(req.instructions, "instructions", limits)
    for i, m in enumerate(req.conversation):
        _check_text(m.content, f"conversation[{i}].content", limits)
    for i, c in enumerate(req.candidates):
        _check_text(c.text, f"candidates[{i}].text", limits)


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
    pruner = res.trace.get("pruner") or {}
    if pruner.get("fallback"):
        m.pruner_fallbacks.labels(strategy=str(pruner.get("strategy")), action=str(pruner["fallback"])).inc()


def _run_shadow(state: ServiceState, req: PackRequest, current: PackResult) -> str:
    """Compute the shadow policy's pack, log it, and return ``same``, ``differs`` or ``failed``."""
    shadow = state.shadow
    assert shadow is not None
    return _run_shadow_with(state, lambda: shadow.pack(req), current)


def _run_shadow_with(state: ServiceState, compute: Callable[[], PackResult], current: PackResult) -> str:
    """Run ``compute`` (the shadow pack), log it beside ``current``; never raises."""
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


def _pack_with_shadow(state: ServiceState, route: str, req: PackRequest) -> tuple[PackResult, str | None]:
    res = state.pipeline.pack(req)
    _record_pack_metrics(state, route, req, res)
    shadow = _run_shadow(state, req, res) if state.shadow is not None else None
    return res, shadow


async def _in_thread(state: ServiceState, fn: Callable[[], T]) -> T:
    """Run blocking work in a worker thread under the per-request timeout."""
    timeout = state.limits.request_timeout_s
    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    except TimeoutError as exc:
        raise BackendTimeout(f"the request took longer than request_timeout_s={timeout:g}") from exc


_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or unknown API key."},
    403: {"model": ErrorBody, "description": "The key's principal may not do this."},
    413: {"model": ErrorBody, "description": "Over a configured limit (body size, candidates, text length)."},
    422: {"model": ErrorBody, "description": "Malformed request or bad setting; `field` names it."},
    503: {"model": ErrorBody, "description": "A backend failed."},
    504: {"model": ErrorBody, "description": "The request took longer than request_timeout_s."},
}


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    errors = list(exc.errors())
    if not errors:
        return "invalid request", None
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    field = ".".join(loc) or None
    if first.get("type") == "extra_forbidden" and loc and loc[-1] == "principal" and len(loc) == 1:
        return "principal: not allowed in the body; the principal comes from the API key", "principal"
    msg = f"{field or '<body>'}: {first.get('msg', 'invalid')}"
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem(s))"
    return msg, field


def create_app(
    settings: ServiceSettings | None = None,
    *,
    kb: KnowledgeBaseLike | None = None,
    pruner: Pruner | None = None,
    pruner_options: Mapping[str, Any] | None = None,
    sink: TraceSink | None = None,
    environ: Mapping[str, str] | None = None,
) -> FastAPI:
    """Build the FastAPI app.

    Args:
        settings: The ``[service]`` settings (default: no keys, default policy).
        kb: The knowledge base for ``/v1/search`` (``None``: /v1/search answers 503).
        pruner: A pruner used whatever the strategy (tests, custom graders).
        pruner_options: Keyword arguments for pruners built by name.
        sink: Trace sink (default: ``settings.trace_file``).
        environ: Environment for ``key_env`` lookups (default: ``os.environ``).
    """
    state = build_state(
        settings or ServiceSettings(), kb=kb, pruner=pruner, pruner_options=pruner_options, sink=sink, environ=environ
    )
    app = FastAPI(
        title="admit",
        version=_version(),
        description="Decide which retrieved evidence a RAG answer gets to see.",
    )
    app.state.admit = state
    app.add_middleware(_Gate, state=state)

    @app.exception_handler(RequestValidationError)
    async def _on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        msg, field = _validation_message(exc)
        return _error(422, "invalid_request", msg, field)

    @app.exception_handler(StarletteHTTPException)
    async def _on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # e.g. a body that is not parseable JSON (invalid UTF-8, nested too deep): the service's error shape
        kind = "invalid_request" if exc.status_code < 500 else "unavailable"
        return _error(exc.status_code, kind, str(exc.detail), None, dict(exc.headers or {}) or None)

    @app.exception_handler(AdmitError)
    async def _on_admit_error(request: Request, exc: AdmitError) -> JSONResponse:
        return _map_error(exc)

    @app.exception_handler(ImportError)
    async def _on_import_error(request: Request, exc: ImportError) -> JSONResponse:
        logger.warning("missing component on %s: %s", request.url.path, exc)
        return _error(503, "unavailable", "a component this request needs is not installed on the server")

    @app.exception_handler(Exception)
    async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error on %s", request.url.path)
        return _error(500, "internal_error", "internal error; see the server log")

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, Any]:
        """Liveness: the app is up and its pipeline loaded."""
        return {
            "status": "ok",
            "policy_version": state.pipeline.policies.version,
            "kill_switch": state.pipeline.policies.kill_switch,
            "shadow": state.shadow is not None,
            "kb": state.kb is not None,
        }

    @app.get("/metrics", tags=["ops"], response_class=Response)
    async def metrics() -> Response:
        """Prometheus text exposition."""
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    @app.post("/v1/pack", tags=["admit"], responses=_ERRORS)
    async def pack_endpoint(body: PackBody, principal: PrincipalDep) -> dict[str, Any]:  # type: ignore[valid-type]
        """Run the whole pipeline on the caller's candidates (the `admit pack` request minus `principal`)."""
        req = pack_request_from_body(body, principal)
        check_pack_limits(req, state.limits)
        req = replace(req, model=resolve_model(req.model if isinstance(req.model, str) else "", state.settings))
        res, _ = await _in_thread(state, lambda: _pack_with_shadow(state, "/v1/pack", req))
        out = res.as_dict()
        out["decisions"] = [d.as_dict() for d in res.decisions]
        return out

    @app.post("/v1/search", tags=["admit"], response_model=SearchResponse, responses=_ERRORS)
    async def search_endpoint(body: SearchBody, principal: PrincipalDep) -> dict[str, Any]:
        """Retrieve from the knowledge base as the key's principal, then admit. Pruning is opt-in (`prune`)."""
        _check_text(body.query, "query", state.limits)
        if body.top_k > state.limits.max_top_k:
            raise LimitExceeded(f"top_k: {body.top_k} is over max_top_k={state.limits.max_top_k}", field="top_k")
        if state.kb is None:
            raise BackendError("no knowledge base is configured on this server (start it with --kb)")
        kb = state.kb
        res, _ = await _in_thread(state, lambda: search(state, kb, body, principal))
        return {
            "query": body.query,
            "admitted": [p.as_dict() for p in res.admitted],
            "citations": res.admitted_ids,
            "prompt": res.prompt,
            "fallbacks": [f.as_dict() for f in res.fallbacks],
            "trace": trace_summary(res.trace),
        }

    @app.post("/v1/prune", tags=["admit"], response_model=PruneResponse, responses=_ERRORS)
    async def prune_endpoint(body: PruneBody, principal: PrincipalDep) -> PruneResponse:
        """Prune bring-your-own chunks: one decision per candidate, in input order."""
        _check_candidates(len(body.candidates), state.limits)
        _check_text(body.question, "question", state.limits)
        for i, c in enumerate(body.candidates):
            _check_text(c.text, f"candidates[{i}].text", state.limits)
        return await _in_thread(state, lambda: prune_chunks(state, body))

    return app


def _version() -> str:
    try:
        from admit import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "0"


def _map_error(exc: AdmitError) -> JSONResponse:
    field = getattr(exc, "field", None)
    if isinstance(exc, LimitExceeded):
        return _error(413, "payload_too_large", str(exc), field)
    if isinstance(exc, MissingExtraError):
        return _error(503, "unavailable", str(exc))
    if isinstance(exc, ConfigError | BudgetError):
        return _error(422, "invalid_request", str(exc), field)
    if isinstance(exc, AuthorizationError):
        return _error(403, "forbidden", str(exc))
    if isinstance(exc, BackendTimeout):
        return _error(504, "timeout", str(exc))
    if isinstance(exc, BackendError):
        logger.warning("backend error: %s", exc)
        return _error(503, "backend_unavailable", _safe(exc))
    logger.warning("admit error: %s", exc)
    return _error(503, "backend_unavailable", "a pipeline stage failed; see the server log")


def _safe(exc: BackendError) -> str:
    """A backend message without URLs or paths that might leak internals: first line, bounded."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]


def search(
    state: ServiceState, kb: KnowledgeBaseLike, body: SearchBody, principal: Principal
) -> tuple[PackResult, str | None]:
    """Retrieve ``top_k`` chunks as ``principal`` and admit them (pruned only when ``body.prune``).

    A knowledge base with a ``search`` method (:class:`admit.kb.KnowledgeBase`) runs retrieval and the
    service's pipeline itself; anything else is used through ``retrieve`` and packed here.
    """
    strategy: str = "none"
    if body.prune:
        route = state.pipeline.policies.classify(body.query, override=body.policy)
        configured = state.pipeline.policies.policy(route.query_class).prune.strategy
        strategy = configured if configured != "none" else state.settings.prune_strategy
    model = resolve_model(body.model, state.settings)
    kb_search = getattr(kb, "search", None)
    if callable(kb_search):

        def run(pipe: Pipeline) -> PackResult:
            return kb_search(  # type: ignore[no-any-return]
                body.query,
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
        shadow = _run_shadow_with(state, lambda: run(shadow_pipe), res) if shadow_pipe is not None else None
        return res, shadow
    candidates = kb.retrieve(body.query, principal, k=body.top_k, filters=None)
    req = PackRequest(
        question=body.query,
        principal=principal,
        candidates=candidates,
        model=model,
        input_limit=body.input_limit,
        query_class=body.policy,
        prune=strategy,
    )
    return _pack_with_shadow(state, "/v1/search", req)


def _record_search_metrics(state: ServiceState, res: PackResult) -> None:
    m = state.metrics
    for d in res.decisions:
        if d.state == "dropped":
            m.candidates_dropped.labels(route="/v1/search", reason=d.reason).inc()
    m.tokens_admitted.labels(route="/v1/search").inc(int(res.trace.get("evidence_tokens", 0) or 0))
    pruner = res.trace.get("pruner") or {}
    if pruner.get("fallback"):
        m.pruner_fallbacks.labels(strategy=str(pruner.get("strategy")), action=str(pruner["fallback"])).inc()


def prune_chunks(state: ServiceState, body: PruneBody) -> PruneResponse:
    """Rerank (when scores are missing) and prune bring-your-own chunks."""
    t0 = time.perf_counter()
    seen: set[str] = set()
    for i, c in enumerate(body.candidates):
        if c.id in seen:
            raise RequestError(f"candidates[{i}].id: duplicate candidate id {c.id!r}", field=f"candidates[{i}].id")
        seen.add(c.id)
    chunks = [
        Chunk(id=c.id, source_id=c.source_id or c.id, text=c.text, title=c.title, score=c.score, metadata=c.metadata)
        for c in body.candidates
    ]
    pipe = state.pipeline
    policies = pipe.policies
    route = policies.classify(body.question)
    settings = policies.policy(route.query_class).prune
    strategy = body.strategy or state.settings.prune_strategy
    changes: dict[str, Any] = {"strategy": strategy}
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
    ranked, _ = rerank(body.question, chunks, pipe.reranker, keep=len(chunks))
    kill = policies.kill_switch
    if kill or strategy == "none" or not ranked:
        why = "kill_switch" if kill else "strategy none"
        decisions = [
            PruneDecisionOut(id=s.chunk.id, kept=True, grade=3, reason=why, score=_finite(s.score), rank=s.rank)
            for s in ranked
        ]
        order = {c.id: i for i, c in enumerate(chunks)}
        decisions.sort(key=lambda d: order[d.id])
        return PruneResponse(
            strategy="none",
            kept_ids=[c.id for c in chunks],
            decisions=decisions,
            fallback=None,
            error=None,
            usage={},
            trace={
                "kill_switch": kill,
                "query_class": route.query_class,
                "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
            },
        )
    outcome = run_pruner(pipe.pruner_for(strategy), body.question, ranked, settings)
    by_rank = {s.chunk.id: s for s in ranked}
    graded = {g.chunk_id: g for g in outcome.graded}
    decisions = [
        PruneDecisionOut(
            id=c.id,
            kept=graded[c.id].kept,
            grade=graded[c.id].grade,
            reason=graded[c.id].reason,
            score=_finite(by_rank[c.id].score),
            rank=by_rank[c.id].rank,
        )
        for c in chunks
    ]
    m = state.metrics
    if outcome.fallback:
        m.pruner_fallbacks.labels(strategy=outcome.strategy, action=outcome.fallback).inc()
    dropped = [c for c in chunks if not graded[c.id].kept]
    for _ in dropped:
        m.candidates_dropped.labels(route="/v1/prune", reason="pruned").inc()
    if dropped:
        try:
            tok = resolve_tokenizer("gpt-4o")
            m.tokens_dropped.labels(route="/v1/prune").inc(sum(tok.count(c.text) for c in dropped))
        except Exception:
            logger.debug("could not count dropped tokens", exc_info=True)
    return PruneResponse(
        strategy=outcome.strategy,
        kept_ids=[c.id for c in chunks if graded[c.id].kept],
        decisions=decisions,
        fallback=outcome.fallback,
        error=outcome.error,
        usage=outcome.usage.as_dict(),
        trace={
            "kill_switch": False,
            "query_class": route.query_class,
            "pruner": outcome.as_dict(),
            "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
        },
    )


def _finite(x: float) -> float | None:
    import math

    return x if math.isfinite(x) else None


class LoopbackServer:
    """Run an ASGI app with uvicorn in a background thread on a free loopback port (tests, benchmarks).

    Example:
        >>> with LoopbackServer(create_app()) as srv:  # doctest: +SKIP
        ...     httpx.get(f"{srv.url}/healthz").json()["status"]
        'ok'
    """

    def __init__(self, app: Any, *, host: str = "127.0.0.1", startup_timeout_s: float = 20.0) -> None:
        """Prepare the server; it starts on ``__enter__``."""
        self.app = app
        self.host = host
        self.port = 0
        self.startup_timeout_s = startup_timeout_s
        self._server: Any = None
        self._thread: Any = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> LoopbackServer:
        """Bind a free port, start uvicorn, and wait (bounded) until ``/healthz`` answers."""
        import socket
        import threading

        import httpx
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.__exit__(None, None, None)
                raise RuntimeError(f"server on {self.url} did not become healthy in {self.startup_timeout_s}s")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        """Ask uvicorn to exit and join its thread (bounded)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
