"""Service settings: the ``[service]`` section of ``admit.toml``, validated with pydantic at the edge.

Example ``admit.toml``::

    [service]
    policy = "policies/prod.toml"          # optional; the shipped default otherwise
    shadow_policy = "policies/next.toml"   # optional: compute and log this policy's pack, return the current one
    kill_switch = false                    # true: no pruning anywhere, the reranked top within budget
    trace_file = "traces/admit.jsonl"      # optional: one JSON line per request
    trace_requests = false                 # true: each line also holds the request, so `admit replay` reads it
    server_timing = false                  # true: each /v1 answer says where its time went (Server-Timing)
    reranker = "retriever"
    prune_strategy = "top_n"               # strategy of /v1/prune and prune=true searches (default: the catalogue's)

    [service.models]                       # names callers may use for tokenizer files on the server
    llama3 = "/models/llama3/tokenizer.json"

    [service.limits]
    max_body_bytes = 2_000_000
    max_candidates = 200
    max_text_chars = 50_000
    request_timeout_s = 30

    [service.keys.acme_support]            # the table name is a label, never the key
    key_env = "ADMIT_KEY_ACME"             # the key is read from this environment variable ...
    tenant = "acme"
    groups = ["support"]

    [service.keys.globex]
    key_sha256 = "9f86d0...15d"            # ... or given as its SHA-256 hex digest
    tenant = "globex"

    [service.mcp]                          # the principal of the MCP server (no per-call keys over stdio)
    tenant = "acme"
    groups = ["support"]
    max_result_bytes = 32_000              # a search_knowledge_base result past it continues with page_token

    [service.tools]                        # tool outputs (tool_outputs of /v1/pack, /v1/search, MCP)
    max_rows = 200                         # ceilings over what callers declare per output
    max_bytes = 64_000
    redact = { ticket = "TCK-[0-9]{6}" }   # extra redaction patterns beside the shipped secret and e-mail ones

Keys are compared by SHA-256 digest in constant time; neither keys nor digests are ever logged.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from admit.errors import ConfigError, unknown_name
from admit.prune.catalogue import DEFAULT_STRATEGY
from admit.types import Principal

__all__ = [
    "ApiKey",
    "KeyRing",
    "Limits",
    "McpSettings",
    "ServiceSettings",
    "ToolSettings",
    "load_settings",
    "settings_from_dict",
]

logger = logging.getLogger(__name__)

_HEX = set("0123456789abcdef")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Limits(_Strict):
    """Request limits. A request over a limit gets 413 with a message naming the limit."""

    max_body_bytes: int = Field(default=2_000_000, gt=0)
    """Largest accepted request body, in bytes."""
    max_candidates: int = Field(default=200, gt=0)
    """Most candidates in one /v1/pack or /v1/prune request."""
    max_text_chars: int = Field(default=50_000, gt=0)
    """Longest accepted text (question, candidate text, instructions, a conversation message), in characters."""
    request_timeout_s: float = Field(default=30.0, gt=0)
    """Wall-clock limit of one request's work; over it the request gets 504."""
    max_top_k: int = Field(default=100, gt=0)
    """Largest ``top_k`` of /v1/search."""
    max_json_depth: int = Field(default=32, gt=0, le=900)
    """Deepest nesting of objects and arrays in a request body (over it: 422 naming the field)."""
    max_object_keys: int = Field(default=1_000, gt=0)
    """Most keys in one JSON object of a body (a candidate's ``metadata``, a tool row)."""
    max_array_items: int = Field(default=100_000, gt=0)
    """Most items in one JSON array of a body (candidates, tool rows, messages)."""
    max_json_values: int = Field(default=500_000, gt=0)
    """Most JSON values in one body."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """Longest time a client may take to send a request's headers; past it the connection is closed."""
    body_timeout_s: float = Field(default=30.0, gt=0)
    """Longest time a client may take to send a request's body once its headers are in."""
    max_connections: int = Field(default=2048, gt=0)
    """Most open connections of ``admit serve``, with an API key or without; at the cap the oldest one still sending
    its request (or answered early while its body drips) makes room, else the oldest idle keep-alive one."""
    max_connections_per_key: int = Field(default=64, gt=0)
    """Most open connections of one API key (each connection counts as its latest request's key's); a request on
    a connection beyond it is answered 429 with ``Retry-After`` before its body is read, and the connection
    closed. Another key's or tenant's connections are never refused for it."""
    max_connections_per_tenant: int = Field(default=128, gt=0)
    """Most open connections of one tenant, all its keys together; beyond it, the same 429."""
    keep_alive_s: float = Field(default=5.0, gt=0)
    """An idle keep-alive connection is closed after this many seconds."""
    probe_process: bool = True
    """``admit serve`` accepts its connections in a small helper process that answers ``/healthz`` (and ``/readyz``
    once ready) itself, off the event loop, and passes every other connection to the server
    (:mod:`admit.service.probe_proc`); ``false``: the event loop accepts them."""
    probe_stale_s: float = Field(default=5.0, gt=0)
    """The helper answers a probe only while the event loop's latest heartbeat (every 0.25 s) is younger than this;
    past it probes wait for the event loop like any request."""
    worker_threads: int = Field(default=0, ge=0)
    """Worker threads that run request work at once (``0``: four per CPU core, at least 4, at most 64)."""
    worker_threads_per_tenant: int = Field(default=0, ge=0)
    """Of those, the most one tenant's requests may hold at once (``0``: half the CPU cores, at least 1), so a
    tenant sending expensive requests waits for its own slots and never takes every worker from the others."""
    worker_processes: int | None = Field(default=None, ge=0)
    """Worker processes request work runs in (:mod:`admit.service.procs`): ``None`` (the default) one per CPU
    core in ``admit serve`` and ``admit mcp``, threads in an app built in-process by
    :func:`~admit.service.http.create_app`; ``0``: threads always; ``N``: ``N`` processes (plus a reserve for light
    tenants)."""
    max_worker_memory_mb: int = Field(default=2048, gt=0)
    """Most private memory (resident, not shared with the server it was forked from) of one worker process: a
    request that takes its worker past it is stopped with the process (413) and the worker replaced; a worker
    left over half of it by a request is replaced once it has answered (its memory returned)."""
    over_share_niceness: int = Field(default=0, ge=0, le=19)
    """How much nicer than the server (its OS priority) a worker process runs the job of a tenant over its share
    of the CPU: a tenant with a backlog whose recent CPU plus its jobs waiting is over an equal split of what the
    tenants active in the last seconds used (the pool's own accounting; a tenant with one request at a time never
    is). Such jobs run in worker processes of their own, so a flood yields the cores to the server's loop and to
    the tenants within their share. ``0`` (the default): off (every job in the pool's regular workers, 3 nicer
    than the server, or its reserve, at the server's priority); on the idle 2-core machine ``7`` showed no gain for
    the quiet tenant under ``bench_fairness.py``'s ``flood:17`` in two alternated runs and cost 700 MB more."""
    max_queued_per_tenant: int = Field(default=64, gt=0)
    """Most requests of one tenant waiting for a worker; past it 429 with ``Retry-After``."""
    max_queued_per_key: int = Field(default=64, gt=0)
    """Most requests of one API key waiting for a worker; past it 429 with ``Retry-After``."""
    max_queued: int = Field(default=1024, gt=0)
    """Most requests waiting for a worker in all; past it 429 with ``Retry-After``."""
    max_in_flight_per_key: int = Field(default=64, gt=0)
    """Most requests of one API key in flight (from their headers to their answer); past it the gate answers 429
    with ``Retry-After`` before reading the body (:class:`~admit.service.admission.Admission`)."""
    max_in_flight_per_tenant: int = Field(default=64, gt=0)
    """Most requests of one tenant in flight, all its keys together; past it 429 before the body is read."""
    max_in_flight: int = Field(default=512, gt=0)
    """Most requests in flight in the shared part of the queue; past it 429 before the body is read, except for a
    tenant still inside its own share (``reserved_per_tenant``): a quiet tenant is never refused because others
    filled the server."""
    reserved_per_tenant: int = Field(default=4, gt=0)
    """Requests each tenant may have in flight whatever the others hold (its own share of the queue)."""
    max_in_flight_bytes_per_tenant: int = Field(default=8_000_000, gt=0)
    """Most body bytes (declared, else ``max_body_bytes``) of one tenant's requests in flight; past it 429 before
    the body is read (a tenant's first request is always let in: it is under ``max_body_bytes``)."""
    max_in_flight_bytes: int = Field(default=64_000_000, gt=0)
    """Most body bytes in flight in the shared part of the queue; past it 429 before the body is read (a tenant
    inside its own share still enters, up to its own byte bound)."""


class ApiKey(_Strict):
    """One API key and the principal it stands for."""

    key_env: str | None = Field(default=None, min_length=1)
    """Name of the environment variable holding the key."""
    key_sha256: str | None = None
    """SHA-256 hex digest of the key."""
    tenant: str = Field(min_length=1, max_length=200)
    """The principal's tenant."""
    groups: list[str] = Field(default_factory=list)
    """The principal's groups."""

    @field_validator("key_sha256")
    @classmethod
    def _hex(cls, v: str | None) -> str | None:
        if v is None:
            return v
        v = v.strip().lower()
        if len(v) != 64 or not set(v) <= _HEX:
            raise ValueError("key_sha256 must be a 64-character hex SHA-256 digest (sha256sum of the key)")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> ApiKey:
        if (self.key_env is None) == (self.key_sha256 is None):
            raise ValueError("give exactly one of key_env (an environment variable name) or key_sha256")
        return self


class McpSettings(_Strict):
    """The MCP server's principal (stdio has no per-call credentials; the operator configures who it serves)."""

    tenant: str | None = Field(default=None, min_length=1, max_length=200)
    groups: list[str] = Field(default_factory=list)
    top_k: int | None = Field(default=None, gt=0, le=100)
    """Chunks retrieved per search (unset: the routed policy's ``candidate_count``, 30 in the shipped policy, as on
    every face)."""
    model: str = "gpt-4o"
    """Target model whose tokenizer counts the evidence budget."""
    input_limit: int = Field(default=8_000, gt=0)
    """Input limit the evidence is packed for."""
    max_result_bytes: int = Field(default=32_000, gt=0)
    """Most bytes of one ``search_knowledge_base`` result (passages past it come with a continuation token)."""


class ToolSettings(_Strict):
    """``[service.tools]``: how tool outputs (``tool_outputs`` of /v1/pack, /v1/search, MCP) are capped and redacted.

    A caller declares each output's ``max_rows``/``max_bytes``; the server's ceilings here win when lower.
    """

    max_rows: int = Field(default=200, gt=0)
    """Most rows of one tool output shown, whatever the caller asks."""
    max_bytes: int = Field(default=64_000, gt=0)
    """Most serialized bytes of one tool output's rows shown, whatever the caller asks."""
    redact: dict[str, str] = Field(default_factory=dict)
    """Extra redaction patterns, name -> regular expression (added to the shipped secret and e-mail ones)."""
    default_patterns: bool = True
    """Apply the shipped patterns (:data:`admit.tools.DEFAULT_REDACTIONS`) too."""

    @field_validator("redact")
    @classmethod
    def _compiles(cls, v: dict[str, str]) -> dict[str, str]:
        from admit._linear import LinearPattern

        for name, pattern in v.items():
            try:  # the engine the redactor runs (RE2: linear time; no look-arounds or back-references)
                LinearPattern(pattern, name=f"tools.redact.{name}")
            except ValueError as exc:
                raise ValueError(f"redaction pattern {name!r} is not a valid regular expression: {exc}") from exc
        return v


_SWITCH = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class ServiceSettings(_Strict):
    """The ``[service]`` section."""

    policy: str | None = None
    """Policy TOML path (relative to the config file); the shipped default when absent."""
    shadow_policy: str | None = None
    """A second policy computed and logged beside the current one (shadow mode)."""
    kill_switch: bool = False
    """When on, nothing is pruned: the reranked top within budget is admitted."""
    trace_file: str | None = None
    """JSONL trace file (relative to the config file)."""
    trace_requests: bool = False
    """Also write each request (question, principal, candidates with their text) into its trace line, so
    ``admit replay TRACE_FILE`` can re-run it under a new policy. Off by default: the trace holds no text."""
    server_timing: bool = False
    """Answer every ``/v1`` call with a ``Server-Timing`` header: the stages of the request on the server in ms
    (the loop's backlog, the gate, the fair queue, the worker, the way back; see docs/http.md)."""
    inspect_requests: int = Field(default=200, ge=0)
    """How many of each tenant's latest requests ``/inspect`` shows (kept in memory with their candidates' text,
    each tenant seeing only its own; ``0``: none)."""
    reranker: str = "retriever"
    """Reranker name for the pipelines (retriever, bm25, dense, hybrid)."""
    prune_strategy: str = DEFAULT_STRATEGY
    """Default strategy of /v1/prune and of ``prune=true`` searches."""
    prune_on_error: Literal["keep_top_k", "keep_all", "drop"] | None = None
    """Override of the policies' ``on_error`` in the service (``raise`` is not allowed in a service)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model names callers may use beyond OpenAI names and encodings: name -> tokenizer spec (e.g. a
    ``tokenizer.json`` path). Callers can never name a server-side path themselves."""
    limits: Limits = Field(default_factory=Limits)
    keys: dict[str, ApiKey] = Field(default_factory=dict)
    """API keys by label."""
    mcp: McpSettings = Field(default_factory=McpSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    base_dir: str = Field(default=".", exclude=True)
    """Folder relative paths are resolved against (the config file's folder)."""
    minilm: Any = Field(default=None, exclude=True)
    """The MiniLM folder, threads and encoder of every embedder the service makes by name (its pipelines' reranker
    and pruners, in the server and in each worker process, which gets it with the state it is forked with);
    ``None``: the process's fallback. Not read from the file: ``admit serve``/``admit mcp`` set it from the root
    options (``admit --minilm-dir DIR --embed-threads N --encoder E``), a program with ``ServiceSettings(minilm=...)``.
    An :class:`~admit.backends.embedders.defaults.EncoderConfig` (typed ``Any`` here so that reading the settings
    imports no model code)."""
    # -- the switches the environment may set (the service's edge reads it, the library never does)
    trace_content: bool = False
    """Record the question and the prompt in the trace records (``$ADMIT_TRACE_CONTENT`` when not set here)."""
    setwise_cross: bool | None = None
    """Whether ``setwise`` fuses the split cross-encoder's score (``$ADMIT_SETWISE_CROSS`` when not set here;
    default: the library's, off)."""
    setwise_multilingual: bool | None = None
    """Whether ``setwise`` reads multilingual e5, when installed, for lists that mix languages
    (``$ADMIT_SETWISE_MULTILINGUAL`` when not set here; default: when installed)."""

    @field_validator("minilm")
    @classmethod
    def _encoder_config(cls, v: Any) -> Any:
        """``None`` or an :class:`~admit.backends.embedders.defaults.EncoderConfig`."""
        from admit.backends.embedders.defaults import EncoderConfig

        if v is not None and not isinstance(v, EncoderConfig):
            raise ValueError(f"minilm must be an EncoderConfig or None, got {type(v).__name__}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _environment(cls, data: Any) -> Any:
        """The switches that the environment sets where the file does not (0/1, true/false, yes/no, on/off)."""
        if not isinstance(data, Mapping):
            return data
        from admit.prune.catalogue import strategy_switches

        named = {"trace_content": "ADMIT_TRACE_CONTENT"}
        for key, (strategy, sw) in strategy_switches().items():  # each strategy's switches, spelled by its spec
            if key in cls.model_fields:
                named[key] = sw.env(strategy)
        out = dict(data)
        for key, var in named.items():
            raw = os.environ.get(var, "").strip().lower()
            if key in out or not raw:
                continue
            if raw not in _SWITCH:
                raise ValueError(f"${var} must be one of {', '.join(sorted(_SWITCH))}, got {raw!r}")
            out[key] = _SWITCH[raw]
        return out

    def pruner_switches(self) -> dict[str, Any]:
        """The :class:`~admit.prune.spec.PrunerResources` fields these settings choose (``cross``: one cross model
        for every pipeline of the service, its weights read once; ``multilingual``)."""
        from admit.prune.catalogue import strategy_switches, switch_resources
        from admit.prune.setwise import cross_model

        out = switch_resources({k: getattr(self, k) for k in strategy_switches() if k in type(self).model_fields})
        if out.get("cross") is True:  # one cross model for every pipeline of the service
            out["cross"] = cross_model(self.minilm.path if self.minilm is not None else None)
        return out

    def path(self, value: str | None) -> Path | None:
        """Resolve a configured path against :attr:`base_dir`."""
        if value is None:
            return None
        p = Path(value).expanduser()
        return p if p.is_absolute() else Path(self.base_dir) / p

    def mcp_principal(self) -> Principal | None:
        """The MCP server's principal, or ``None`` when not configured."""
        if not self.mcp.tenant:
            return None
        return Principal(tenant=self.mcp.tenant, groups=tuple(self.mcp.groups))


@dataclass(frozen=True, slots=True)
class _Entry:
    label: str
    digest: bytes
    principal: Principal


class KeyRing:
    """Maps presented API keys to principals by SHA-256 digest, in constant time per entry."""

    def __init__(self, keys: Mapping[str, ApiKey], *, environ: Mapping[str, str] | None = None) -> None:
        """Resolve every key; a ``key_env`` naming an unset variable is a :class:`ConfigError`."""
        env = os.environ if environ is None else environ
        entries: list[_Entry] = []
        for label, k in keys.items():
            if k.key_env is not None:
                raw = env.get(k.key_env)
                if not raw:
                    raise ConfigError(
                        f"API key {label!r}: environment variable {k.key_env!r} is not set (or empty); "
                        "export it or use key_sha256."
                    )
                digest = hashlib.sha256(raw.encode("utf-8")).digest()
            else:
                assert k.key_sha256 is not None
                digest = bytes.fromhex(k.key_sha256)
            entries.append(_Entry(label, digest, Principal(tenant=k.tenant, groups=tuple(k.groups))))
        self._entries = tuple(entries)

    def __len__(self) -> int:
        """Number of configured keys."""
        return len(self._entries)

    def lookup(self, presented: str | None) -> tuple[str, Principal] | None:
        """Return ``(label, principal)`` for a presented key, or ``None`` when missing or unknown."""
        if not presented:
            return None
        digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        found: _Entry | None = None
        for e in self._entries:  # no early exit: every entry is compared
            if hmac.compare_digest(digest, e.digest) and found is None:
                found = e
        return (found.label, found.principal) if found else None


def _first_error(exc: ValidationError, where: str) -> ConfigError:
    """The first problem, an unknown key first (it is the likely cause of a missing one), with did-you-mean."""
    from admit.schema import model_at

    errors = sorted(exc.errors(), key=lambda e: e.get("type") != "extra_forbidden")
    err = errors[0]
    path = tuple(err.get("loc", ()))
    loc = ".".join(str(p) for p in path)
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    owner = model_at(ServiceSettings, path[:-1]) if err.get("type") == "extra_forbidden" else None
    if owner is not None:
        table = ".".join(["service", *(str(p) for p in path[:-1])])
        known = [k for k, f in owner.model_fields.items() if not f.exclude]  # base_dir, minilm: not from a file
        return ConfigError(f"{where}: [{table}]: {unknown_name('setting', str(path[-1]), known)}{more}")
    return ConfigError(f"{where}: service.{loc}: {err.get('msg', 'invalid')}{more}")


def _check_tables(data: Mapping[str, Any], where: str) -> None:
    """The file holds the ``[service]`` table only: a setting written above it, or a misspelled table, is named."""
    for key in data:
        if key == "service":
            continue
        if key in ServiceSettings.model_fields and not ServiceSettings.model_fields[key].exclude:
            raise ConfigError(f"{where}: {key!r} is a service setting: put it under [service].")
        import difflib

        fields = [k for k, f in ServiceSettings.model_fields.items() if not f.exclude]
        close = difflib.get_close_matches(str(key), fields, n=1)
        if close:
            raise ConfigError(f"{where}: {key!r} above [service]: did you mean [service] {close[0]}?")
        raise ConfigError(f"{where}: {unknown_name('table', str(key), ['service'])}.")


def settings_from_dict(
    data: Mapping[str, Any], *, base_dir: str | Path = ".", where: str = "<config>"
) -> ServiceSettings:
    """Validate the ``[service]`` table (``data`` is the whole parsed file)."""
    _check_tables(data, where)
    raw = data.get("service", {})
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: [service] must be a table.")
    if "minilm" in raw:
        raise ConfigError(
            f"{where}: [service] minilm is not read from the file; "
            "give `admit --minilm-dir DIR --embed-threads N --encoder E serve` (or ADMIT_MINILM_DIR, ...)."
        )
    try:
        return ServiceSettings.model_validate({**raw, "base_dir": str(base_dir)})
    except ValidationError as exc:
        raise _first_error(exc, where) from exc


def load_settings(path: str | Path | None) -> ServiceSettings:
    """Load ``admit.toml``; ``None`` gives the defaults (no keys: every HTTP call gets 401)."""
    if path is None:
        return ServiceSettings()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"Config file {str(p)!r} not found.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {str(p)!r} is not valid TOML: {exc}") from exc
    return settings_from_dict(data, base_dir=p.parent, where=str(p))
