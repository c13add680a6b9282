"""The cache scope of the work running now: caches whose hits a caller could time are kept per tenant.

A shared cache answers a repeated input faster; a caller who can time that learns that someone else sent the
same input (a question, a chunk text). The service runs each request's work inside :func:`scoped` with the
request's tenant, and the caches whose hits are observable (the embedding cache, the injection-flag cache,
the LLM pruner's result cache) put :func:`current` into their keys, so a tenant's hits are its own. Outside a
scope (the library, the CLI, eval) the scope is ``""``: one process, one user.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["current", "scoped"]

_SCOPE: ContextVar[str] = ContextVar("admit_cache_scope", default="")


def current() -> str:
    """The cache scope of the running work (``""`` outside :func:`scoped`)."""
    return _SCOPE.get()


@contextmanager
def scoped(scope: str | None) -> Iterator[None]:
    """Run the block with cache scope ``scope`` (a tenant); ``None`` keeps the current one."""
    if scope is None:
        yield
        return
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)
