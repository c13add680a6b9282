"""The service's limits and deadline, the same for every transport (HTTP and both MCP transports).

A request over a limit raises :class:`~admit.errors.LimitExceeded` naming the field and the limit; a request
whose work outlives ``request_timeout_s`` raises :class:`~admit.errors.BackendTimeout`. Model names from
callers are mapped to tokenizer specs without ever touching a server path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio

from admit import _scope
from admit.errors import BackendTimeout, LimitExceeded, RequestError
from admit.pipeline import PackRequest
from admit.service.config import Limits, ServiceSettings
from admit.service.procs import ProcessPool
from admit.service.state import ServiceState
from admit.service.timing import mark

__all__ = [
    "check_candidates",
    "check_pack_limits",
    "check_prune_limits",
    "check_search_limits",
    "check_text",
    "resolve_model",
    "run_bounded",
]

T = TypeVar("T")


def check_text(value: str, field: str, limits: Limits) -> None:
    """Raise :class:`LimitExceeded` when ``value`` is longer than ``max_text_chars``."""
    if len(value) > limits.max_text_chars:
        raise LimitExceeded(
            f"{field}: {len(value)} characters is over max_text_chars={limits.max_text_chars}; shorten or split it",
            field=field,
        )


def check_candidates(n: int, limits: Limits, field: str = "candidates") -> None:
    """Raise :class:`LimitExceeded` when ``n`` candidates are over ``max_candidates``."""
    if n > limits.max_candidates:
        raise LimitExceeded(
            f"{field}: {n} candidates is over max_candidates={limits.max_candidates}; send fewer", field=field
        )


def check_search_limits(question: str, top_k: int | None, limits: Limits) -> None:
    """Limits of a knowledge-base search: a question that is not blank, its length, and ``max_top_k`` (``None``:
    the policy's ``candidate_count``, the operator's own setting)."""
    if not question.strip():
        raise RequestError("question: must not be blank", field="question")
    check_text(question, "question", limits)
    if top_k is not None and top_k > limits.max_top_k:
        raise LimitExceeded(f"top_k: {top_k} is over max_top_k={limits.max_top_k}", field="top_k")


def check_prune_limits(question: str, texts: Sequence[str], limits: Limits) -> None:
    """Limits of a prune request: candidate count, question and candidate text lengths."""
    check_candidates(len(texts), limits)
    check_text(question, "question", limits)
    for i, text in enumerate(texts):
        check_text(text, f"candidates[{i}].text", limits)


def check_pack_limits(req: PackRequest, limits: Limits) -> None:
    """Raise :class:`LimitExceeded` when a pack request is over a limit."""
    check_candidates(len(req.candidates), limits)
    check_text(req.question, "question", limits)
    check_text(req.instructions, "instructions", limits)
    for i, m in enumerate(req.conversation):
        check_text(m.content, f"conversation[{i}].content", limits)
    for i, c in enumerate(req.candidates):
        check_text(c.text, f"candidates[{i}].text", limits)


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


def _in_scope(tenant: str | None, fn: Callable[[], T]) -> T:
    with _scope.scoped(f"tenant:{tenant}" if tenant else "anonymous"):
        return fn()


async def run_bounded(
    state: ServiceState, fn: Callable[[], T], *, tenant: str | None = None, key: str | None = None
) -> T:
    """Run blocking work in a worker of the state's :class:`WorkPool` under ``request_timeout_s``.

    A request that arrives while the models are still loading waits for them, and a request waits for a worker
    in the pool's fair queue (tenant by tenant), inside the same deadline. The deadline also stops the work
    itself: the worker's text processing checks it (:func:`admit._deadline.deadline`), so a timed-out request
    frees its worker instead of running on after its caller got 504. With worker processes
    (:attr:`ServiceState.procs`) ``fn`` runs in one of them (pickled, the state by reference) and a job still
    running at its deadline has its process killed and replaced; a full queue (the tenant's, ``key``'s, everyone's)
    raises :class:`~admit.errors.Overloaded` (429). The work runs in the tenant's cache scope
    (:mod:`admit._scope`): what it caches, only the same tenant's requests hit.
    """
    timeout = state.limits.request_timeout_s
    pool = state.work
    assert pool is not None  # sized in ServiceState.__post_init__
    at = time.monotonic() + timeout
    try:
        with anyio.fail_after(timeout):
            while state.readiness.status == "loading":
                await anyio.sleep(0.02)
            procs: ProcessPool | None = getattr(state, "procs", None)  # a stand-in state (tests) has none
            if procs is not None:
                return await procs.run(tenant or "-", partial(_in_scope, tenant, fn), deadline_at=at, key=key)
            mark("queued")  # Server-Timing (the process pool marks its own stages)
            return await pool.run(tenant or "-", partial(_in_scope, tenant, fn), deadline_at=at)
    except TimeoutError as exc:
        loading = ""
        if state.readiness.status == "loading":
            loading = " (the server is still loading its models: see /readyz)"
        raise BackendTimeout(f"the request took longer than request_timeout_s={timeout:g}{loading}") from exc
