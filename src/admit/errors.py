"""The admit error tree.

Every exception admit raises on purpose derives from :class:`AdmitError`::

    AdmitError
    ├── ConfigError            caller mistakes: bad policy file, unknown backend, bad setting
    │   ├── RequestError       a malformed request (names the field)
    │   │   └── LimitExceeded  a request over a configured service limit (413 over HTTP)
    │   └── MissingExtraError  an optional dependency is not installed (ImportError too)
    ├── AuthorizationError     a principal is missing or malformed (fail closed)
    ├── BudgetError            the fixed parts of the request leave no room for evidence
    └── BackendError           a runtime failure of a backend (tokenizer, embedder, LLM, store)
        ├── GraderOutputError  an LLM grader answered something that cannot be used
        ├── BackendTimeout     a backend did not answer in time
        ├── StoreError         a knowledge-base store failed
        └── Overloaded         the service's queue for this caller is full (429, retry after a pause)

Caller mistakes (``ConfigError``) are kept apart from runtime failures (``BackendError``) so a
service can map the first to a 4xx and the second to a recorded fallback.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AdmitError",
    "AuthorizationError",
    "BackendError",
    "BackendTimeout",
    "BudgetError",
    "ConfigError",
    "GraderOutputError",
    "LimitExceeded",
    "MissingExtraError",
    "Overloaded",
    "RequestError",
    "StoreError",
    "unknown_name",
]


def unknown_name(what: str, name: str, known: Iterable[str]) -> str:
    """The one message for a misspelled name (a setting, an option, an argument), on every surface:
    ``unknown setting 'treshold'; did you mean 'threshold'? (settings: ...)``."""
    import difflib

    names = sorted(set(known))
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {what} {name!r}{hint} ({what}s: {', '.join(names)})"


class AdmitError(Exception):
    """Base class of every error admit raises on purpose."""


class ConfigError(AdmitError):
    """A caller mistake: a bad setting, policy file or backend name."""


class RequestError(ConfigError):
    """A malformed request. ``field`` names the offending field (dotted path)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        """Create the error; ``field`` is the dotted path of the offending field."""
        super().__init__(message)
        self.field = field


class LimitExceeded(RequestError):
    """A request is over a configured limit (size, count, ``top_k``); ``field`` names the offending field."""


class MissingExtraError(ConfigError, ImportError):
    """An optional dependency is missing; the message carries the ``pip install`` hint."""

    def __init__(self, package: str, extra: str) -> None:
        """Create the error for ``package``, installable with the ``extra`` extra."""
        super().__init__(f'`{package}` is not installed; install it with: pip install "admit[{extra}]"')
        self.package = package
        self.extra = extra


class AuthorizationError(AdmitError):
    """A principal is missing or malformed. admit fails closed."""


class BudgetError(AdmitError):
    """The fixed parts of the request (instructions, conversation, answer reserve) exceed the input limit."""


class BackendError(AdmitError):
    """A backend (tokenizer, embedder, reranker, LLM, store) failed at run time."""


class Overloaded(BackendError):
    """The service's queue for this caller (tenant, key) or for everyone is full: answered 429 with
    ``Retry-After`` (:attr:`retry_after_s`), never an unbounded wait."""

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        """Create the error; ``retry_after_s`` is the pause the caller should take."""
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the pause (the error crosses from a worker process)."""
        return (_overloaded, (str(self), self.retry_after_s))


def _overloaded(message: str, retry_after_s: float) -> Overloaded:
    return Overloaded(message, retry_after_s=retry_after_s)


class GraderOutputError(BackendError):
    """An LLM grader's answer could not be used (no JSON, wrong shape, nothing gradable)."""


class BackendTimeout(BackendError):
    """A backend did not answer before its deadline."""


class StoreError(BackendError):
    """A knowledge-base store failed."""
