"""A circuit breaker around any :class:`~admit.backends.llms.base.LLM`.

A grader backend that keeps failing costs every request its full timeout and retries before the pruner
falls back. The breaker counts consecutive failures (:class:`~admit.errors.BackendError`, timeouts included,
and any other exception the backend lets escape);
after ``failure_threshold`` of them it *opens*: calls fail at once with :class:`CircuitOpenError` (a
``BackendError``, so :func:`~admit.prune.base.run_pruner` applies ``on_error`` as for any backend failure)
without touching the backend. After ``reset_timeout_s`` it lets one trial call through (*half-open*): success
closes the circuit, failure opens it again for another ``reset_timeout_s``.

Example:
    >>> from admit.backends.llms import FakeLLM
    >>> from admit.errors import BackendError
    >>> now = [0.0]
    >>> cb = CircuitBreakerLLM(FakeLLM(BackendError("down")), failure_threshold=2, reset_timeout_s=10,
    ...                        clock=lambda: now[0])
    >>> for _ in range(2):
    ...     try:
    ...         cb.complete([])
    ...     except BackendError:
    ...         pass
    >>> cb.state
    'open'
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Unpack

from admit.backends.llms.base import LLM, CompleteOptions, LLMReply
from admit.errors import BackendError, ConfigError
from admit.types import Message

__all__ = ["BreakerState", "BreakerStats", "CircuitBreakerLLM", "CircuitOpenError"]

logger = logging.getLogger(__name__)

BreakerState = Literal["closed", "open", "half_open"]


class CircuitOpenError(BackendError):
    """The circuit is open: the backend was not called."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakerStats:
    """Counters of one breaker (for metrics and tests)."""

    state: BreakerState
    calls: int
    """Calls passed to the backend."""
    failures: int
    """Calls that failed."""
    short_circuited: int
    """Calls refused while open (the backend was not called)."""
    opened: int
    """Times the circuit opened."""
    consecutive_failures: int


class CircuitBreakerLLM:
    """Wraps an LLM with a closed / open / half-open circuit breaker.

    Args:
        inner: The backend.
        failure_threshold: Consecutive failures that open the circuit (>= 1).
        reset_timeout_s: How long the circuit stays open before a trial call.
        clock: Monotonic clock in seconds (tests inject one).
        on_state_change: Called with ``(old, new)`` on every transition (metrics hooks).
        failure_types: Exceptions that count as failures (default: any ``Exception``: a backend that answers
            garbage the SDK cannot decode is failing too).
    """

    def __init__(
        self,
        inner: LLM,
        *,
        failure_threshold: int = 5,
        reset_timeout_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        on_state_change: Callable[[BreakerState, BreakerState], None] | None = None,
        failure_types: tuple[type[BaseException], ...] = (Exception,),
    ) -> None:
        if failure_threshold < 1:
            raise ConfigError(f"CircuitBreakerLLM: failure_threshold must be >= 1, got {failure_threshold}.")
        if reset_timeout_s <= 0:
            raise ConfigError(f"CircuitBreakerLLM: reset_timeout_s must be > 0, got {reset_timeout_s}.")
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.failure_threshold = int(failure_threshold)
        self.reset_timeout_s = float(reset_timeout_s)
        self._clock = clock
        self._on_change = on_state_change
        self._failure_types = failure_types
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._opened_at = 0.0
        self._trial_in_flight = False
        self._consecutive = 0
        self._calls = 0
        self._failures = 0
        self._short = 0
        self._opened = 0

    def __repr__(self) -> str:
        return f"CircuitBreakerLLM({self.inner!r}, state={self.state!r})"

    @property
    def state(self) -> BreakerState:
        """The current state (``open`` turns ``half_open`` once the reset timeout has passed)."""
        with self._lock:
            self._tick()
            return self._state

    def stats(self) -> BreakerStats:
        """A snapshot of the counters."""
        with self._lock:
            self._tick()
            return BreakerStats(
                state=self._state,
                calls=self._calls,
                failures=self._failures,
                short_circuited=self._short,
                opened=self._opened,
                consecutive_failures=self._consecutive,
            )

    def reset(self) -> None:
        """Close the circuit by hand."""
        with self._lock:
            self._consecutive = 0
            self._trial_in_flight = False
            self._set("closed")

    def _set(self, new: BreakerState) -> None:
        old = self._state
        if old == new:
            return
        self._state = new
        if new == "open":
            self._opened += 1
            self._opened_at = self._clock()
        logger.warning("LLM %s circuit %s -> %s", self.model, old, new)
        if self._on_change is not None:
            try:
                self._on_change(old, new)
            except Exception:  # a metrics hook must not break a call
                logger.exception("circuit breaker state hook failed")

    def _tick(self) -> None:
        if self._state == "open" and self._clock() - self._opened_at >= self.reset_timeout_s:
            self._set("half_open")

    def _admit(self) -> None:
        with self._lock:
            self._tick()
            if self._state == "closed":
                self._calls += 1
                return
            if self._state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True
                self._calls += 1
                return
            self._short += 1
            left = max(self.reset_timeout_s - (self._clock() - self._opened_at), 0.0)
        raise CircuitOpenError(
            f"LLM {self.model!r}: circuit open after {self.failure_threshold} consecutive failures; "
            f"not calling it for another {left:.1f}s"
        )

    def complete(self, messages: Sequence[Message], **opts: Unpack[CompleteOptions]) -> LLMReply:
        """Call the backend unless the circuit is open; record the outcome."""
        self._admit()
        try:
            reply = self.inner.complete(messages, **opts)
        except self._failure_types:
            with self._lock:
                self._failures += 1
                self._consecutive += 1
                was_trial = self._trial_in_flight
                self._trial_in_flight = False
                if was_trial or self._consecutive >= self.failure_threshold:
                    if self._state == "open":
                        self._opened_at = self._clock()
                    self._set("open")
            raise
        except BaseException:
            with self._lock:
                self._trial_in_flight = False
            raise
        with self._lock:
            self._consecutive = 0
            self._trial_in_flight = False
            self._set("closed")
        return reply
