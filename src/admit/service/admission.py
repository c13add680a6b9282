"""Admission at the gate: requests in flight counted per key, per tenant and in all, before a body is read.

:class:`Admission` is what the ASGI gate (:class:`~admit.service.gate.Gate`) asks once a request's key is known
and before it reads a byte of its body: a request over a bound is answered 429 with ``Retry-After`` at once, so
a flood of large bodies is never buffered (the server holds at most the bytes it has let in). A request holds
its :class:`Ticket` from its headers to its answer; nothing sleeps while holding one.

**Each tenant owns a share of the queue.** The first ``reserved_per_tenant`` requests of a tenant (and up to its
own byte bound) are let in whatever the others hold; only what a tenant has beyond its share comes out of the
shared part (``max_in_flight`` requests, ``max_in_flight_bytes`` bytes; the names are ``[service.limits]``'s). So
however many tenants fill the shared part, a quiet tenant is never refused: it is inside its own share.

**Bytes.** A request counts its declared ``Content-Length``, else the largest body it may send
(``max_body_bytes``). Bound on the bodies held at once: ``max_in_flight_bytes + tenants *
min(max_in_flight_bytes_per_tenant, reserved_per_tenant * max_body_bytes)`` (the shared part plus every tenant's
own share; tenants are the configured keys'), with no more than ``max_in_flight_bytes_per_tenant`` for any one
tenant.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admit.service.config import Limits

__all__ = ["Admission", "Refusal", "Ticket"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: ``scope`` is ``key``, ``tenant`` or ``server``; ``retry_after_s`` for the header."""

    scope: str
    detail: str
    retry_after_s: int
    close: bool = False
    """Close the connection with the answer (a connection over its key's or tenant's cap)."""


@dataclass(slots=True, eq=False)
class Ticket:
    """One admitted request: what it counts against (returned with :meth:`Admission.release`)."""

    key: str
    tenant: str
    size: int
    shared: bool
    """It counts against the shared part (it came in beyond its tenant's own share)."""
    released: bool = False


class Admission:
    """Requests in flight by key, by tenant and in all (module docstring). Used on the event loop only."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        """The bounds: ``[service.limits]``'s ``max_in_flight*`` and ``reserved_per_tenant``."""
        self.reserved = min(limits.reserved_per_tenant, limits.max_in_flight_per_tenant)
        """Requests of one tenant let in however full the shared part is: its own share."""
        self.by_key: collections.Counter[str] = collections.Counter()
        self.by_tenant: collections.Counter[str] = collections.Counter()
        self.bytes_by_tenant: collections.Counter[str] = collections.Counter()
        self.shared = 0
        """Requests in flight beyond their tenant's own share."""
        self.shared_bytes = 0
        self.refused: collections.Counter[str] = collections.Counter()
        """Refusals by scope (``key``, ``tenant``, ``server``)."""

    def in_flight(self) -> int:
        """Requests in flight in all."""
        return sum(self.by_tenant.values())

    def bytes_in_flight(self) -> int:
        """Body bytes in flight in all."""
        return sum(self.bytes_by_tenant.values())

    def enter(self, key: str, tenant: str, size: int) -> Ticket | Refusal:
        """Let a request in (a :class:`Ticket`, to :meth:`release` when it is answered) or refuse it."""
        lim = self.limits
        held = self.by_tenant[tenant]
        retry = self._retry(held)
        why: Refusal | None = None
        if self.by_key[key] >= lim.max_in_flight_per_key:
            why = Refusal("key", f"too many requests of this key in flight ({lim.max_in_flight_per_key})", retry)
        elif held >= lim.max_in_flight_per_tenant:
            why = Refusal(
                "tenant", f"too many requests of this tenant in flight ({lim.max_in_flight_per_tenant})", retry
            )
        elif held and self.bytes_by_tenant[tenant] + size > lim.max_in_flight_bytes_per_tenant:
            why = Refusal("tenant", "too many body bytes of this tenant in flight", retry)
        shared = held >= self.reserved
        if (
            why is None
            and shared
            and (self.shared >= lim.max_in_flight or self.shared_bytes + size > lim.max_in_flight_bytes)
        ):
            why = Refusal("server", "the server's shared queue is full", retry)
        if why is not None:
            self.refused[why.scope] += 1
            return why
        self.by_key[key] += 1
        self.by_tenant[tenant] += 1
        self.bytes_by_tenant[tenant] += size
        if shared:
            self.shared += 1
            self.shared_bytes += size
        return Ticket(key, tenant, size, shared)

    def release(self, ticket: Ticket) -> None:
        """The request is answered (or its client gone): its counts are returned, once."""
        if ticket.released:
            return
        ticket.released = True
        _drop(self.by_key, ticket.key, 1)
        _drop(self.by_tenant, ticket.tenant, 1)
        _drop(self.bytes_by_tenant, ticket.tenant, ticket.size)
        if ticket.shared:
            self.shared -= 1
            self.shared_bytes -= ticket.size

    def _retry(self, held: int) -> int:
        """Seconds a refused client should wait: one while its tenant holds less than its own share, one more for
        each further share it holds, at most five (a flood holding dozens in flight gets five: its backlog will
        not have moved in one, and each refusal it comes back for costs the event loop a request's parse)."""
        return 1 + min(4, held // max(1, self.reserved))


def _drop(counter: collections.Counter[str], name: str, n: int) -> None:
    left = counter[name] - n
    if left > 0:
        counter[name] = left
    else:
        del counter[name]
