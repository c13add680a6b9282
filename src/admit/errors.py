"""The admit error tree.

Every exception admit raises on purpose derives from :class:`AdmitError`::

    AdmitError
    ├── ConfigError            caller mistakes: bad policy file, unknown backend, bad setting
    │   ├── RequestError       a malformed request (names the field)
    │   │   └── LimitExceeded  a request over a configured service limit (413 over HTTP)
    │   ├── InvalidValue       an argument or setting with a value admit does not take (ValueError too)
    │   ├── InvalidType        an argument of a type admit does not take (TypeError too)
    │   ├── InputError         something admit was given to read that it cannot take (ValueError too)
    │   │   └── ModelFileError a model, adaptation or weights file this version cannot read
    │   └── MissingExtraError  an optional dependency is not installed (ImportError too)
    ├── AuthorizationError     a principal is missing or malformed (fail closed)
    ├── BudgetError            the fixed parts of the request leave no room for evidence
    └── BackendError           a runtime failure of a backend (tokenizer, embedder, LLM, store)
        ├── GraderOutputError  an LLM grader answered something that cannot be used
        ├── BackendOutputError a backend answered something of the wrong shape (ValueError too)
        ├── BackendTimeout     a backend did not answer in time
        ├── StoreError         a knowledge-base store failed
        └── Overloaded         the service's queue for this caller is full (429, retry after a pause)

The classes marked "too" also derive from the builtin admit raised before they existed, so code written
``except ValueError`` (or ``TypeError``, ``ImportError``) keeps catching them. A raise of a bare builtin
exception in ``src/`` is refused by ``tests/unit/test_error_tree.py`` unless its allow-list says why a caller
never sees it (a protocol such as ``NotImplementedError`` or a module ``__getattr__``, or an internal signal
caught inside admit).

One protocol asks for the builtin: a pydantic validator (``field_validator``, ``model_validator``, an
``AfterValidator``) raises ``ValueError``, which pydantic gathers into a ``pydantic.ValidationError`` (itself a
``ValueError``). That is what constructing a request model (:class:`~admit.schema.PackRequest`, the service's
settings) with a bad field raises; the faces answer it as a :class:`RequestError` would be (a 422 naming the
field, or one CLI line), and the adapters turn a bad argument into one :class:`ConfigError` line.

Caller mistakes (``ConfigError``) are kept apart from runtime failures (``BackendError``) so a
service can map the first to a 4xx and the second to a recorded fallback.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AdmitError",
    "AuthorizationError",
    "BackendError",
    "BackendOutputError",
    "BackendTimeout",
    "BudgetError",
    "ConfigError",
    "GraderOutputError",
    "InputError",
    "InvalidType",
    "InvalidValue",
    "LimitExceeded",
    "MissingExtraError",
    "ModelFileError",
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


class InvalidValue(ConfigError, ValueError):
    """An argument or setting has a value admit does not take (``threads=0``, an unknown encoder name); the
    message says what it takes. A :class:`ValueError` too."""


class InvalidType(ConfigError, TypeError):
    """An argument has a type admit does not take (an embedder that is neither a name nor an instance). A
    :class:`TypeError` too."""


class InputError(ConfigError, ValueError):
    """Something admit was given to read cannot be taken: HTML nested past the parser's limit, a file that changed
    during its ingest, a text over the tokenizer's limit. A :class:`ValueError` too."""


class ModelFileError(InputError):
    """A model, adaptation or weights file this version of admit cannot read (its version, shape or dtype)."""


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


class BackendOutputError(BackendError, ValueError):
    """A backend answered something of the wrong shape (an embedder's array with the wrong number of rows). A
    :class:`ValueError` too."""


class BackendTimeout(BackendError):
    """A backend did not answer before its deadline."""


class StoreError(BackendError):
    """A knowledge-base store failed."""
