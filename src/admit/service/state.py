"""What one running service holds (settings, keys, pipelines, knowledge base, metrics) and its readiness.

Transport-free: the HTTP app and the MCP server build the same :class:`ServiceState` with :func:`build_state`.
Models load lazily by default; :meth:`ServiceState.warm_up` loads every model a request will need (the
knowledge base's embedder, the pruners the settings and policies name, the tokenizers of the configured
models), so the first request after the service reports ready is as fast as the tenth.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from admit.backends.tokenizers import resolve_tokenizer
from admit.inspector.log import InspectLog
from admit.pipeline import Pipeline
from admit.policy import PolicySet, load_policy_set
from admit.prune import Pruner, PrunerResources
from admit.requestlog import RequestLog
from admit.service.admission import Admission
from admit.service.config import KeyRing, Limits, ServiceSettings
from admit.service.jsonio import JsonCaps
from admit.service.metrics import ServiceMetrics
from admit.service.procs import ProcessPool
from admit.service.work import WorkPool
from admit.tools import Redactor
from admit.trace import JsonlSink, TraceSink
from admit.types import Principal

if TYPE_CHECKING:
    from admit.backends.embedders.defaults import EncoderConfig
    from admit.kb import KnowledgeBase

__all__ = [
    "Readiness",
    "RequestLog",
    "ServiceState",
    "build_state",
    "check_strategies",
    "open_kb",
    "tool_redactor",
]

logger = logging.getLogger(__name__)

WARM_UP_TENANT = "admit-warm-up"
"""The tenant of the warm-up retrieval: no knowledge base holds it, so nothing is read."""


@dataclass(slots=True)
class Readiness:
    """Where the warm-up stands: ``idle`` (never started), ``loading``, ``ready`` or ``failed``."""

    status: Literal["idle", "loading", "ready", "failed"] = "idle"
    loaded: list[str] = field(default_factory=list)
    """What was loaded, in order (``tokenizer:gpt-4o``, ``knowledge_base``, ``pruner:setwise``, ...)."""
    step_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds each loaded step took."""
    error: str | None = None
    """The failure, for the log and the operator (may name server paths: never in the public body)."""
    failed_step: str | None = None
    """The step that failed."""
    fix: str | None = None
    """The failure's one-line fix when its error declares one that names no server path (a missing model)."""
    attempts: int = 0
    """Warm-up attempts so far (a failed one is retried with backoff, see :meth:`ServiceState.start_warm_up`)."""
    retry_in_s: float | None = None
    """Seconds until the next attempt, after a failure."""
    seconds: float | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def as_dict(self) -> dict[str, Any]:
        """The ``/readyz`` body: steps by name (a path in a model spec is not shown), no error text, so an
        unauthenticated caller learns nothing about the server's files."""
        out: dict[str, Any] = {"status": self.status, "loaded": [public_step(n) for n in self.loaded]}
        if self.step_seconds:
            out["step_s"] = {public_step(k): round(v, 3) for k, v in self.step_seconds.items()}
        if self.seconds is not None:
            out["warm_up_s"] = round(self.seconds, 3)
        if self.status == "failed":
            out["failed_step"] = public_step(self.failed_step or "")
            out["error"] = (self.error or "").split(":", 1)[0]  # the exception type only; the text is in the log
            if self.fix:
                out["fix"] = self.fix
            out["attempts"] = self.attempts
            if self.retry_in_s is not None:
                out["retry_in_s"] = round(self.retry_in_s, 1)
        return out


def public_step(name: str) -> str:
    """A warm-up step's name for unauthenticated callers: ``tokenizer:gpt-4o`` as is, ``tokenizer:<path>`` as
    ``tokenizer``."""
    kind, _, value = name.partition(":")
    if any(ch in value for ch in "/\\~") or value.lower().startswith(("hf:", ".")) or value.lower().endswith(".json"):
        return kind
    return name


@dataclass(slots=True, kw_only=True)
class ServiceState:
    """Everything one service holds: settings, key ring, pipelines, knowledge base, metrics, readiness."""

    settings: ServiceSettings
    keyring: KeyRing
    pipeline: Pipeline
    shadow: Pipeline | None
    kb: KnowledgeBase | None
    metrics: ServiceMetrics
    sink: TraceSink | None
    readiness: Readiness = field(default_factory=Readiness)
    work: WorkPool | None = None
    """The worker pool request work runs in (sized from the limits when ``None``)."""
    inspect: InspectLog | None = None
    """The latest requests, by tenant, for ``/inspect``."""
    procs: ProcessPool | None = None
    """The worker processes request work runs in (:meth:`use_processes`); ``None``: the threads of :attr:`work`."""
    admission: Admission | None = None
    """Requests in flight by key, tenant and in all, counted by the gate of every transport (HTTP, MCP over
    HTTP) before a body is read (sized from the limits when ``None``)."""
    _warm_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        """Size the worker pool and the gate's admission from the limits."""
        if self.admission is None:
            self.admission = Admission(self.limits)
        if self.work is None:
            lim = self.limits
            self.work = WorkPool(
                lim.worker_threads,
                lim.worker_threads_per_tenant,
                max_queued_per_tenant=lim.max_queued_per_tenant,
                max_queued=lim.max_queued,
            )

    def use_processes(self, default: bool) -> ProcessPool | None:
        """Run request work in worker processes when ``[service.limits] worker_processes`` says so (``None``:
        ``default``); the processes are forked by the first request after the models are loaded."""
        n = self.limits.worker_processes
        if n == 0 or (n is None and not default):
            return None
        if self.procs is None:
            lim = self.limits
            self.procs = ProcessPool(
                self,
                n or 0,
                max_queued_per_tenant=lim.max_queued_per_tenant,
                max_queued_per_key=lim.max_queued_per_key,
                max_queued=lim.max_queued,
                max_memory_mb=lim.max_worker_memory_mb,
                over_share_niceness=lim.over_share_niceness,
            )
            self.metrics.watch_pool(self.procs)
        return self.procs

    @property
    def limits(self) -> Limits:
        """The request limits."""
        return self.settings.limits

    @property
    def json_caps(self) -> JsonCaps:
        """The bounds on a request body's shape (from the limits)."""
        lim = self.settings.limits
        return JsonCaps(
            max_depth=lim.max_json_depth,
            max_object_keys=lim.max_object_keys,
            max_array_items=lim.max_array_items,
            max_values=lim.max_json_values,
        )

    def warm_up(self) -> Readiness:
        """Load every model a request will need, once (thread-safe); a failure is recorded, not raised."""
        with self._warm_lock:
            r = self.readiness
            if r.done.is_set():
                return r
            r.status = "loading"
            r.attempts += 1
            r.retry_in_s = None
            t0 = time.perf_counter()
            name = ""
            try:
                for name, step in self._warm_steps():
                    if name in r.loaded:
                        continue  # done by an earlier attempt
                    t = time.perf_counter()
                    step()
                    r.step_seconds[name] = time.perf_counter() - t
                    r.loaded.append(name)
                r.status = "ready"
                if self.procs is not None:
                    _freeze_heap()
            except Exception as exc:  # the lazy path will raise the same error per request, mapped there
                logger.error("warm-up failed after %s: %s", r.loaded, exc)
                r.status = "failed"
                r.failed_step = name
                r.error = f"{type(exc).__name__}: {str(exc)[:300]}"
                fix = getattr(exc, "fix", None)
                r.fix = fix if isinstance(fix, str) else None
            r.seconds = time.perf_counter() - t0
            if r.status == "ready":
                logger.info("ready in %.1fs: loaded %s", r.seconds, ", ".join(r.loaded))
            r.done.set()
            return r

    def start_warm_up(
        self,
        *,
        retries: int = 8,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        wait: Callable[[float], object] | None = None,
    ) -> threading.Thread:
        """Run :meth:`warm_up` in a daemon thread (``/readyz`` answers ``loading`` meanwhile); a failed attempt is
        retried up to ``retries`` times, after 1, 2, 4 ... seconds (at most ``max_backoff_s``), so an instance
        whose model store was briefly unreachable joins its load balancer once it is back (``wait``: how to wait,
        for tests)."""
        pause = wait if wait is not None else threading.Event().wait
        if self.readiness.status == "idle":
            self.readiness.status = "loading"

        def run() -> None:
            for attempt in range(retries + 1):
                r = self.warm_up()
                if r.status != "failed" or attempt == retries:
                    return
                delay = min(backoff_s * 2**attempt, max_backoff_s)
                r.retry_in_s = delay
                logger.warning("warm-up attempt %d failed; retrying in %.0fs", r.attempts, delay)
                pause(delay)
                with self._warm_lock:
                    r.done.clear()

        t = threading.Thread(target=run, name="admit-warm-up", daemon=True)
        t.start()
        return t

    def _warm_steps(self) -> list[tuple[str, Callable[[], None]]]:
        steps: list[tuple[str, Callable[[], None]]] = []
        models = dict.fromkeys(["gpt-4o", self.settings.mcp.model, *self.settings.models.values()])
        for model in models:
            steps.append((f"tokenizer:{model}", functools.partial(_warm_tokenizer, model)))
        kb = self.kb
        if kb is not None:
            # one retrieval as a tenant no knowledge base holds: loads the embedder, opens the store, reads nothing
            steps.append(("knowledge_base", functools.partial(_warm_kb, kb)))
        pipes = [self.pipeline] + ([self.shadow] if self.shadow is not None else [])
        warm_reranker = getattr(self.pipeline.reranker, "warm_up", None)
        if callable(warm_reranker):
            steps.append((f"reranker:{self.settings.reranker}", warm_reranker))
        for strategy in _strategies(self.settings, pipes):
            steps.append((f"pruner:{strategy}", functools.partial(_warm_pruners, pipes, strategy)))
        return steps


def _freeze_heap() -> None:
    """Move everything loaded so far (models, tokenizers, the app) out of the garbage collector's reach
    (``gc.freeze``), in a server whose work runs in worker processes (``admit serve``, ``admit mcp``).

    A full collection walked that whole heap: 0.1-0.7 s with the event loop stopped, several times a minute
    under a flood of requests (issue 47: measured in the server under ``flood:17``, it was ``/healthz``'s p99
    and the quiet tenant's tail). Frozen, a full collection walks only what requests made since. The workers,
    forked after, inherit the frozen heap: their collections skip it too, and never write to (so never copy)
    the pages they share with the server. Nothing frozen is freed by the collector later; the models live as
    long as the server does.

    Then a full collection comes after ``FULL_COLLECTION_AFTER`` collections of the middle generation instead of
    Python's 10: under a flood what a full collection walks is the requests in flight (78-88 ms of CPU each, 2 in
    a ``flood:17`` phase, measured with ``bench_fairness.py --gc``), and it stops the loop each time. Cyclic
    garbage that outlived two younger collections waits longer to be freed (what is not in a cycle is freed at
    once, as before)."""
    import gc

    gc.collect()
    gc.freeze()
    first, middle, _ = gc.get_threshold()
    gc.set_threshold(first, middle, FULL_COLLECTION_AFTER)


FULL_COLLECTION_AFTER = 100
"""Collections of the middle generation between two full ones in a server whose work runs in worker processes
(Python's default: 10)."""


def _warm_tokenizer(model: str) -> None:
    resolve_tokenizer(model).count("warm up")


def _warm_kb(kb: KnowledgeBase) -> None:
    kb.retrieve("warm up", Principal(tenant=WARM_UP_TENANT), k=1)


def _strategies(settings: ServiceSettings, pipes: list[Pipeline]) -> list[str]:
    """The pruning strategies requests can reach: the service default and every class's configured one."""
    names = [settings.prune_strategy]
    for pipe in pipes:
        names.extend(pol.prune.strategy for pol in pipe.policies.classes.values())
    return [n for n in dict.fromkeys(names) if n != "none"]


def _warm_pruners(pipes: list[Pipeline], strategy: str) -> None:
    for pipe in pipes:
        warm = getattr(pipe.pruner_for(strategy), "warm_up", None)
        if callable(warm):
            warm()


def tool_redactor(settings: ServiceSettings) -> Redactor:
    """The redactor of tool outputs: the shipped patterns (unless turned off) and ``[service.tools] redact``."""
    extra = dict(settings.tools.redact)
    if settings.tools.default_patterns:
        return Redactor.default(extra)
    return Redactor.from_patterns(extra)


def check_strategies(settings: ServiceSettings, policy_sets: list[PolicySet]) -> None:
    """Refuse a configuration that names a pruning strategy no pruner implements (at start, not per request).

    Raises:
        ConfigError: naming the setting or the policy class, the unknown name and the closest known one.
    """
    import difflib

    from admit.errors import ConfigError
    from admit.prune import strategy_names

    known = (*strategy_names(), "none")
    named = [("[service] prune_strategy", settings.prune_strategy)]
    for ps in policy_sets:
        where = ps.source or "the policy"
        named.extend(
            (f"{where}: class {name!r} prune.strategy", pol.prune.strategy) for name, pol in ps.classes.items()
        )
    for where, strategy in named:
        if strategy not in known:
            close = difflib.get_close_matches(strategy, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown pruning strategy {strategy!r}{hint} Known: {', '.join(known)}.")


def _policy_set(path: Any, kill_switch: bool, on_error: str | None) -> PolicySet:
    ps = load_policy_set(path)
    if on_error:
        ps = replace(ps, classes={name: pol.with_prune(on_error=on_error) for name, pol in ps.classes.items()})
    return replace(ps, kill_switch=True) if kill_switch and not ps.kill_switch else ps


def build_state(
    settings: ServiceSettings,
    *,
    kb: KnowledgeBase | None = None,
    pruner: Pruner | None = None,
    pruner_options: Mapping[str, Any] | None = None,
    sink: TraceSink | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServiceState:
    """Resolve keys, load policies and build the pipelines (a bad setting raises :class:`ConfigError`).

    Nothing is loaded here: call :meth:`ServiceState.warm_up` (the HTTP app does at start-up).
    """
    keyring = KeyRing(settings.keys, environ=environ)
    if sink is None and settings.trace_file:
        trace_path = settings.path(settings.trace_file)
        assert trace_path is not None
        sink = JsonlSink(trace_path)
    policies = _policy_set(settings.path(settings.policy), settings.kill_switch, settings.prune_on_error)
    kb_embedder = kb.cached_embedder if kb is not None else None  # share the KB's loaded model with setwise
    resources = (
        PrunerResources.from_options(pruner_options) if pruner_options else PrunerResources(embedder=kb_embedder)
    )
    switches = settings.pruner_switches()  # the [service] setwise_* switches ($ADMIT_SETWISE_*), unless given
    resources = replace(resources, **{k: v for k, v in switches.items() if getattr(resources, k) is None})
    redactor = tool_redactor(settings)
    inspect_log = InspectLog(
        RequestLog(sink, log_requests=settings.trace_requests, redactor=redactor) if sink is not None else None,
        keep=settings.inspect_requests,
    )
    # the current and the shadow pipeline share every part but their policies and the trace sink; the embedders
    # they make by name read the settings' MiniLM configuration (held by the pipelines, so each worker process
    # forked with this state builds its models with it: nothing process-wide is set)
    build = functools.partial(
        Pipeline,
        pruner=pruner,
        resources=resources,
        redactor=redactor,
        trace_content=settings.trace_content,
        minilm=settings.minilm,
    )
    pipeline = build(policies=policies, sink=inspect_log, reranker=settings.reranker)
    shadow_policies = None
    if settings.shadow_policy:
        shadow_policies = _policy_set(
            settings.path(settings.shadow_policy), settings.kill_switch, settings.prune_on_error
        )
    if pruner is None:  # a given pruner runs whatever the strategy says
        check_strategies(settings, [policies] + ([shadow_policies] if shadow_policies is not None else []))
    shadow = None
    if shadow_policies is not None:
        shadow = build(policies=shadow_policies, sink=None, reranker=pipeline.reranker)
    if kb is not None:
        warn_unknown_tenants(settings, kb)
    return ServiceState(
        settings=settings,
        keyring=keyring,
        pipeline=pipeline,
        shadow=shadow,
        kb=kb,
        metrics=ServiceMetrics(),
        sink=sink,
        inspect=inspect_log,
    )


def warn_unknown_tenants(settings: ServiceSettings, kb: KnowledgeBase) -> list[str]:
    """Warn, at start, about each API key mapped to a tenant the knowledge base holds no documents for (its
    searches would answer empty 200s); return the warnings."""
    from admit.errors import ConfigError

    out = []
    for name, key in sorted(settings.keys.items()):
        try:
            kb.check_tenant(key.tenant, label=kb.location)
        except ConfigError as exc:
            out.append(f"API key {name!r} maps to tenant {key.tenant!r}: {exc} Its searches will find nothing.")
            logger.warning("%s", out[-1])
    return out


def open_kb(location: str | None, minilm: EncoderConfig | None = None) -> KnowledgeBase | None:
    """Open the knowledge base at a path or store URL (``None``: no knowledge base); ``minilm``: the MiniLM
    configuration of its embedder made by name (a service's :attr:`ServiceSettings.minilm`).

    A path must exist (the service never creates an empty knowledge base); a URL (``postgresql://``,
    ``qdrant://``, ...) opens that store, as ``admit ingest`` and ``admit search`` do.

    Raises:
        ConfigError: The path does not exist, the store URL or the embedder is unusable.
        MissingExtraError: The knowledge base's dependencies are not installed.
    """
    if location is None:
        return None
    from pathlib import Path

    from admit.errors import ConfigError, MissingExtraError

    if "://" not in location and location != ":memory:" and not Path(location).expanduser().exists():
        raise ConfigError(
            f"--kb {location!r}: no knowledge base there; build one with `admit ingest DOCS --kb {location}`, "
            "or give a store URL (postgresql://..., qdrant://...)."
        )
    try:
        from admit.kb import KnowledgeBase
    except ImportError as exc:
        raise MissingExtraError("admit knowledge base dependencies", "kb") from exc
    try:
        return KnowledgeBase(location, minilm=minilm)
    except MissingExtraError:
        raise
    except (ImportError, ValueError) as exc:
        raise ConfigError(f"--kb {location!r}: {exc}") from exc
