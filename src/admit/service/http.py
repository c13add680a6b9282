"""The HTTP API (FastAPI): ``/v1/search``, ``/v1/prune``, ``/v1/pack``, ``/healthz``, ``/readyz``, ``/metrics``.

The routes are thin: the :class:`~admit.service.gate.Gate` in front of them checks the API key (``X-API-Key:
KEY`` or ``Authorization: Bearer KEY``; the key maps to a principal in the config, never the body) and the
body size; each ``/v1`` route hands its raw body to one :class:`~admit.service.core.Service` call, which parses,
validates, runs and serializes it in the tenant's worker under the service's limits and deadline. At start-up the
app loads its models in the background: ``/healthz`` answers at once (liveness), ``/readyz`` answers 200 once
every model is loaded (readiness); a ``/v1`` call that arrives earlier waits for them within its deadline.

Errors are JSON (``{"error", "detail", "field"}``) and never carry a traceback:

=====================================  ======
missing or unknown key                 401
``AuthorizationError``                 403
body, candidate count or text too big  413
malformed request, bad setting         422
too many requests waiting              429
backend failure                        503
request over ``request_timeout_s``     504
=====================================  ======
"""

from __future__ import annotations

import contextlib
import difflib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from admit.errors import (
    AdmitError,
    AuthorizationError,
    LimitExceeded,
    Overloaded,
)
from admit.inspector.page import CSP as INSPECTOR_CSP
from admit.inspector.page import render_page
from admit.pipeline import PackRequest
from admit.prune import Pruner
from admit.schema import describe_validation_errors
from admit.service.config import ServiceSettings
from admit.service.core import Caller, PruneAnswer, PruneQuery, SearchQuery, Service, trace_summary
from admit.service.errors import answer_for
from admit.service.gate import Gate, Liveness, SecurityHeaders, error_response
from admit.service.jsonio import dumps, parse_body
from admit.service.limits import check_pack_limits, resolve_model
from admit.service.loopback import LoopbackServer
from admit.service.metrics import CONTENT_TYPE
from admit.service.schemas import (
    ErrorBody,
    PackBody,
    PruneBody,
    PruneResponse,
    SearchBody,
    SearchResponse,
    pack_request_from_body,
)
from admit.service.state import ServiceState, build_state
from admit.trace import TraceSink
from admit.types import PackResult, Principal

if TYPE_CHECKING:
    from admit.kb import KnowledgeBase

__all__ = [
    "LimitExceeded",
    "LoopbackServer",
    "ServiceState",
    "build_state",
    "check_pack_limits",
    "create_app",
    "resolve_model",
    "trace_summary",
]

logger = logging.getLogger(__name__)

B = TypeVar("B", bound=BaseModel)
Route = TypeVar("Route", bound=Callable[..., Any])

ROUTES = ("/v1/pack", "/v1/search", "/v1/prune", "/inspect", "/healthz", "/readyz", "/metrics", "/openapi.json")
"""The app's paths: each is its own metrics label; any other path is counted as ``/v1/*`` or ``other``."""

_BODIES: dict[str, type[BaseModel]] = {"/v1/search": SearchBody, "/v1/prune": PruneBody, "/v1/pack": PackBody}

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or unknown API key."},
    403: {"model": ErrorBody, "description": "The key's principal may not do this."},
    413: {"model": ErrorBody, "description": "Over a configured limit (body size, candidates, text length, top_k)."},
    422: {"model": ErrorBody, "description": "Malformed request or bad setting; `field` names it."},
    503: {"model": ErrorBody, "description": "A backend failed."},
    429: {"model": ErrorBody, "description": "Too many of this tenant's or key's requests waiting; see Retry-After."},
    504: {"model": ErrorBody, "description": "The request took longer than request_timeout_s."},
}

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key mapped to a principal.")


async def _principal(request: Request, _key: str | None = Depends(_api_key_header)) -> Principal:
    # a coroutine: FastAPI runs a plain function dependency in its thread pool, a hop to a thread and back to
    # the loop for every /v1 request (issue 47: the largest server-side stage of a quiet search under a flood)
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):  # the gate always sets it; fail closed anyway
        raise AuthorizationError("no principal for this request")
    return principal


PrincipalDep = Annotated[Principal, Depends(_principal)]


def create_app(
    settings: ServiceSettings | None = None,
    *,
    kb: KnowledgeBase | None = None,
    pruner: Pruner | None = None,
    pruner_options: Mapping[str, Any] | None = None,
    sink: TraceSink | None = None,
    environ: Mapping[str, str] | None = None,
    processes: bool = False,
) -> FastAPI:
    """Build the FastAPI app; its lifespan starts loading the models (``/readyz`` says when they are).

    Args:
        settings: The ``[service]`` settings (default: no keys, default policy).
        kb: The knowledge base for ``/v1/search`` (``None``: /v1/search answers 503).
        pruner: A pruner used whatever the strategy (tests, custom graders).
        pruner_options: Keyword arguments for pruners built by name.
        sink: Trace sink (default: ``settings.trace_file``).
        environ: Environment for ``key_env`` lookups (default: ``os.environ``).
        processes: Run request work in worker processes when ``[service.limits] worker_processes`` is unset
            (``admit serve`` passes ``True``; see :mod:`admit.service.procs`).
    """
    state = build_state(
        settings or ServiceSettings(), kb=kb, pruner=pruner, pruner_options=pruner_options, sink=sink, environ=environ
    )
    state.use_processes(processes)
    if not len(state.keyring):
        logger.warning("no API keys configured: every /v1 call will get 401")

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state.start_warm_up()
        try:
            yield
        finally:
            if state.procs is not None:
                state.procs.close()

    app = FastAPI(
        title="admit",
        version=_version(),
        description="Decide which retrieved evidence a RAG answer gets to see.",
        lifespan=lifespan,
        # Swagger UI and ReDoc load their scripts from a CDN, and nothing may be fetched at run time:
        # the schema is served at /openapi.json for any OpenAPI viewer the operator runs locally
        docs_url=None,
        redoc_url=None,
    )
    app.state.admit = state
    app.add_middleware(JsonBodies)  # added first, so it runs inside the gate (authenticated /v1 calls only)
    app.add_middleware(
        Gate,
        keyring=lambda: state.keyring,
        max_body_bytes=state.limits.max_body_bytes,
        protected=lambda path: path.startswith("/v1/") or path == "/inspect",
        metrics=state.metrics,
        known_routes=ROUTES,
        admission=state.admission,
        server_timing=state.settings.server_timing,
        connections_per_key=state.limits.max_connections_per_key,
        connections_per_tenant=state.limits.max_connections_per_tenant,
    )
    app.add_middleware(SecurityHeaders)  # outermost but one, so every answer (the gate's too) carries them

    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "ready": state.readiness.status == "ready",
            "policy_version": state.pipeline.policies.version,
            "kill_switch": state.pipeline.policies.kill_switch,
            "shadow": state.shadow is not None,
            "kb": state.kb is not None,
        }

    # outermost: a liveness probe is answered before the gate, the router and every other middleware
    def ready() -> dict[str, Any] | None:
        r = state.readiness
        return r.as_dict() if r.status == "ready" else None

    probe = Liveness(
        _no_app, body=health, metrics=state.metrics, server_timing=state.settings.server_timing, ready=ready
    )
    app.add_middleware(Liveness, body=health, metrics=state.metrics, server_timing=state.settings.server_timing)
    app.state.liveness = probe  # the HTTP server answers a probe where it reads it (admit.service.server)
    _add_error_handlers(app)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, Any]:
        """Liveness: the process answers. ``ready`` tells whether the models are loaded (see ``/readyz``).
        Answered at the ASGI layer, before any middleware (:class:`~admit.service.gate.Liveness`)."""
        return health()

    @app.get("/readyz", tags=["ops"], responses={503: {"description": "Still loading its models, or failed to."}})
    async def readyz() -> JSONResponse:
        """Readiness: 200 once every model a request needs is loaded; 503 while loading (or when loading failed)."""
        r = state.readiness
        if r.status == "idle":  # an app run without its lifespan: load now
            state.start_warm_up()
        return JSONResponse(r.as_dict(), status_code=200 if r.status == "ready" else 503)

    @app.get("/metrics", tags=["ops"], response_class=Response)
    async def metrics() -> Response:
        """Prometheus text exposition."""
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    caps = state.json_caps
    service = Service(state)

    def read(raw: bytes, model: type[B]) -> B:
        """The body as ``model`` (in the worker: the loop never parses a body)."""
        try:
            return parse_body(raw, model, caps)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None

    async def in_pool(
        request: Request, principal: Principal, call: Callable[[Caller, bytes], Awaitable[bytes]]
    ) -> Response:
        """Hand the caller (the principal, the key's queue label) and the raw body to a :class:`Service` call,
        which parses, validates, runs and serializes in the tenant's worker: the loop only moves the bytes."""
        label = getattr(request.state, "key_label", None)
        caller = Caller(principal, f"key:{label}" if isinstance(label, str) else None)
        out = await call(caller, await request.body())
        return Response(out, media_type="application/json")

    def post_v1(path: str, body: str, response: type[BaseModel] | None = None) -> Callable[[Route], Route]:
        """A ``/v1`` route that reads its body itself (in the worker), documented with ``body`` and ``response``."""
        extra = _body_schema(body)
        return app.post(path, tags=["admit"], response_model=response, responses=_ERRORS, openapi_extra=extra)

    @post_v1("/v1/pack", "PackBody")
    async def pack_endpoint(request: Request, principal: PrincipalDep) -> Response:
        """Run the whole pipeline on the caller's candidates (the `admit pack` request minus `principal`)."""

        def pack(caller: Caller, raw: bytes) -> Awaitable[bytes]:
            return service.pack(caller, lambda: pack_request_from_body(read(raw, PackBody), principal), _pack_answer)

        return await in_pool(request, principal, pack)

    @post_v1("/v1/search", "SearchBody", SearchResponse)
    async def search_endpoint(request: Request, principal: PrincipalDep) -> Response:
        """Retrieve from the knowledge base as the key's principal, then admit. Pruning is opt-in (`prune`)."""
        return await in_pool(
            request,
            principal,
            lambda c, raw: service.search(c, lambda: read(raw, SearchBody).query(), _search_answer),
        )

    @post_v1("/v1/prune", "PruneBody", PruneResponse)
    async def prune_endpoint(request: Request, principal: PrincipalDep) -> Response:
        """Prune bring-your-own chunks: one decision per candidate, in input order."""
        return await in_pool(
            request, principal, lambda c, raw: service.prune(c, lambda: read(raw, PruneBody).query(), _prune_answer)
        )

    @app.get("/inspect", tags=["admit"], response_class=HTMLResponse, responses=_ERRORS)
    async def inspect_page(principal: PrincipalDep, id: str | None = None) -> HTMLResponse:
        """The request inspector page of the key's latest requests it may see (``id``: only that request): its
        tenant's, made by no key with a group it lacks, admitting nothing it may not read. A passage retrieved
        from the knowledge base is shown only while the store still lets the key read it (its labels now, not
        when it was retrieved). Rendered off the event loop."""

        def page() -> str:
            log = state.inspect
            kb = state.kb
            records = log.visible(principal, current=kb.readable_now if kb is not None else None) if log else []
            if id is not None:
                records = [r for r in records if r.get("request_id") == id]
            return render_page(records, title=f"admit: requests of {principal.tenant}")

        html = await anyio.to_thread.run_sync(page)
        headers = {
            "Content-Security-Policy": f"{INSPECTOR_CSP}; frame-ancestors 'none'",
            "Cache-Control": "no-store",  # a tenant's questions and passages: never kept by a cache
            "Referrer-Policy": "no-referrer",
        }
        return HTMLResponse(html, headers=headers)

    _document_bodies(app)
    return app


async def _no_app(scope: Scope, receive: Receive, send: Send) -> None:  # pragma: no cover - never called
    raise AdmitError("the probe answerer wraps no app")


def _search_answer(query: SearchQuery, res: PackResult) -> bytes:
    """The ``/v1/search`` answer: the keys of every pack answer (decisions included), the trace as its summary."""
    out = {"question": query.question, "query": query.question, **res.as_dict(), "trace": trace_summary(res.trace)}
    return dumps(SearchResponse.model_validate(out).model_dump(mode="json")).encode()


def _prune_answer(query: PruneQuery, answer: PruneAnswer) -> bytes:
    """The ``/v1/prune`` answer: one decision per candidate, in input order."""
    body = PruneResponse.from_run(answer.run, answer.trace, question=query.question)
    return dumps(body.model_dump(mode="json")).encode()


def _pack_answer(_req: PackRequest, res: PackResult) -> bytes:
    """The ``/v1/pack`` answer: the pack result (the ``admit pack`` JSON)."""
    return dumps(res.as_dict()).encode()


def _body_schema(name: str) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads its body itself (in a worker, see ``in_pool``)."""
    ref = {"$ref": f"#/components/schemas/{name}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def _document_bodies(app: FastAPI) -> None:
    """Add the body models to ``/openapi.json``'s components (the routes parse their bodies in a worker)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = build()
        _, defs = models_json_schema(
            [(m, "validation") for m in _BODIES.values()], ref_template="#/components/schemas/{model}"
        )
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in defs.get("$defs", {}).items():
            schemas.setdefault(name, schema)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


class JsonBodies:
    """Read every ``/v1`` POST body as JSON, whatever its ``Content-Type`` says.

    ``curl -d '{...}'`` sends ``application/x-www-form-urlencoded``; FastAPI would then hand the raw bytes to
    the body model ("Input should be a valid dictionary"). The ``/v1`` routes take nothing but JSON, so the
    header is set to ``application/json`` before routing; a body that is not JSON still gets a clear 422.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and str(scope.get("path", "")).startswith("/v1/"):
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-type"]
            scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        await self.app(scope, receive, send)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        msg, field = validation_message(exc.errors(), _BODIES.get(request.url.path))
        return error_response(422, "invalid_request", msg, field)

    @app.exception_handler(StarletteHTTPException)
    async def _on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # e.g. a body that is not parseable JSON (invalid UTF-8, nested too deep): the service's error shape
        headers = dict(exc.headers or {}) or None
        if exc.status_code in (404, 405):
            kind, detail = _route_error(app, request, exc.status_code, (headers or {}).get("Allow", ""))
            return error_response(exc.status_code, kind, detail, None, headers)
        kind = "invalid_request" if exc.status_code < 500 else "unavailable"
        return error_response(exc.status_code, kind, str(exc.detail), None, headers)

    @app.exception_handler(AdmitError)
    async def _on_admit_error(request: Request, exc: AdmitError) -> JSONResponse:
        # a full pool queue (429) is answered at once: the request's gate slot is released with it (the gate
        # refuses before reading, and delays its own refusals outside any slot)
        return map_error(exc)

    @app.exception_handler(ImportError)
    async def _on_import_error(request: Request, exc: ImportError) -> JSONResponse:
        logger.warning("missing component on %s: %s", request.url.path, exc)
        return error_response(503, "unavailable", "a component this request needs is not installed on the server")

    @app.exception_handler(Exception)
    async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error on %s", request.url.path)
        return error_response(500, "internal_error", "internal error; see the server log")


def _route_error(app: FastAPI, request: Request, status: int, allow: str) -> tuple[str, str]:
    """The 404 and 405 answers, naming the route asked for and what the service has instead."""
    method, path = request.method, request.url.path
    if status == 405:
        return "method_not_allowed", f"{method} {path}: the route takes {allow or 'another method'}, not {method}"
    routes = sorted(
        {f"{m} {r.path}" for r in app.routes if isinstance(r, APIRoute) for m in (r.methods or ()) if m != "HEAD"}
    )
    close = difflib.get_close_matches(path, [r.split(" ", 1)[1] for r in routes], n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return "not_found", f"{method} {path}: no such route{hint} (routes: {', '.join(routes)})"


def validation_message(errors: Any, model: type[BaseModel] | None = None) -> tuple[str, str | None]:
    """The 422 message: the real mistake first (an unknown field before the missing one it probably replaces)."""
    return describe_validation_errors(errors, model, skip=("body",), noun="body")


def map_error(exc: AdmitError) -> JSONResponse:
    """The HTTP answer to an admit error: its row of the service's one error table (:mod:`admit.service.errors`)."""
    a = answer_for(exc)
    headers = None
    if isinstance(exc, Overloaded):
        headers = {"Retry-After": str(max(1, round(exc.retry_after_s)))}
    return error_response(a.status, a.error, a.message, a.field, headers, kind=a.kind)


def _version() -> str:
    try:
        from admit import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "0"
