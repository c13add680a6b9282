"""The settings the pydantic adapters share (LangChain's compressor, LlamaIndex's postprocessor): one model.

Each adapter subclasses :class:`AdapterSettings` beside its framework's base class, so the fields, their checks
(at construction, on assignment, on load: :class:`~admit.errors.ConfigError`) and the filter they build are
declared once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic.functional_validators import ModelWrapValidatorHandler

from admit.adapters._core import SETTINGS, AdmitFilter, check_names, settings_from
from admit.errors import ConfigError
from admit.prune.catalogue import DEFAULT_STRATEGY

__all__ = [
    "AdapterSettings",
    "check_assignment",
    "check_settings",
    "current_filter",
    "fill_from_filter",
    "refused_field",
]


class AdapterSettings(BaseModel):
    """The settings of a pydantic adapter (see :class:`~admit.adapters._core.AdmitFilter` for each)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    strategy: str = DEFAULT_STRATEGY
    threshold: int = 3
    keep_top_k: int = 1
    on_error: str = "keep_top_k"
    params: dict[str, Any] = Field(default_factory=dict)
    top_k: int | None = None
    """At most this many documents (nodes) are returned (the best ranked)."""
    max_tokens: int | None = None
    """Token budget of the kept documents, best ranked first."""
    max_doc_chars: int | None = None
    """A document longer than this is dropped before grading (logged, recorded in its metadata); ``None``: no
    cap, a long document is graded by its best passages."""
    drop_duplicates: bool = True
    """Drop a document whose text repeats an earlier one under another id."""
    embeddings: str = "auto"
    """Stored vectors: ``auto`` (reuse when one checks out against admit's own), ``reuse`` or ``ignore``."""
    title_key: str = "title"
    """Metadata key of the document title, if any."""
    reranker: Any = None
    """Reranker name (one of the catalogue's: ``bm25``, ``dense``, ``cross``, a plug-in's) or instance; ``None``: the
    retriever's scores, else its order."""
    filter: Any = None
    """A prebuilt :class:`~admit.adapters._core.AdmitFilter` (e.g. with a custom pruner); its settings are the
    defaults of the fields above."""

    _admit: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _from_filter(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_names(data, cls.model_fields)  # `treshold=` is refused, not ignored
            check_settings(data)  # `threshold="high"` is admit's ConfigError, not pydantic's ValidationError
        return fill_from_filter(data)

    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """A field pydantic refuses (``title_key=None``, LangChain's ``score_key=3``) is one ConfigError line naming
        it, as the admit settings are, not a ValidationError."""
        try:
            return handler(data)
        except ValidationError as exc:
            raise ConfigError(refused_field(exc)) from None

    @model_validator(mode="after")
    def _check(self) -> Self:
        current_filter(self)  # a bad setting raises ConfigError now, at construction or load
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        """Refuse a bad setting (``ConfigError``) before it is stored."""
        check_assignment(self, name, value)
        super().__setattr__(name, value)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied: an unknown name (``topk=``) or a bad value is refused
        (:class:`~admit.errors.ConfigError`) here, not stored unread (pydantic's own ``model_copy`` skips checks)."""
        if update:
            check_names(update, type(self).model_fields)
            check_settings({**settings_from(self), **update})
        made = super().model_copy(update=update, deep=deep)
        current_filter(made)
        return made

    @property
    def admit_filter(self) -> AdmitFilter:
        """The filter for the current settings."""
        return current_filter(self)

    def warm_up(self) -> None:
        """Load admit's model now rather than on the first call."""
        current_filter(self).warm_up()


def refused_field(exc: ValidationError) -> str:
    """One line for pydantic's refusal of a field: its name, what it must be, what it got."""
    first = exc.errors()[0]
    name = ".".join(str(part) for part in first["loc"]) or "the settings"
    more = exc.error_count() - 1
    also = f" ({more} more field{'s' if more > 1 else ''} refused)" if more else ""
    return f"`{name}`: {first['msg'][:1].lower()}{first['msg'][1:]}, got {first.get('input')!r}.{also}"


def fill_from_filter(data: Any) -> Any:
    """``model_validator(mode="before")``: a saved ``filter`` dict becomes an :class:`AdmitFilter`, whose settings
    fill those the caller did not give."""
    if not isinstance(data, Mapping):
        return data
    f = data.get("filter")
    if isinstance(f, Mapping):
        f = AdmitFilter.from_dict(f)
    if f is None:
        return data
    if not isinstance(f, AdmitFilter):
        raise ConfigError(f"`filter` must be an AdmitFilter or its dict, got {type(f).__name__}.")
    given = {k: v for k, v in data.items() if not (k == "reranker" and v is None)}  # None: the filter's
    return {**f.settings_dict(), **given, "filter": f}


def current_filter(obj: Any) -> AdmitFilter:
    """The filter for ``obj``'s current settings (checked): built once, rebuilt when a setting changed (also by
    ``model_copy(update=...)``, which skips validation), sharing the loaded pruner when the strategy did not."""
    src = obj.filter
    cached = obj._admit
    base = cached[1] if cached is not None and cached[0] is src else src
    values = settings_from(obj)
    f = base.configured(values) if isinstance(base, AdmitFilter) else AdmitFilter(**values)
    obj._admit = (src, f)
    return f


def check_settings(data: Mapping[str, Any]) -> None:
    """Check the admit settings among ``data`` (a constructor's or an update's keywords) with the filter's own
    checks, so a wrong type is one :class:`~admit.errors.ConfigError` line naming the setting."""
    given = settings_from(None, data)
    if given and not isinstance(data.get("filter"), AdmitFilter | Mapping):
        AdmitFilter(**given)


def check_assignment(obj: Any, name: str, value: Any) -> None:
    """Refuse a bad setting before a pydantic adapter stores it (``ConfigError`` naming it), and a name that is no
    setting of it at all (a misspelling would otherwise be stored and never read)."""
    if not name.startswith("_"):
        check_names([name], type(obj).model_fields)
    if name in SETTINGS:
        AdmitFilter(**{**settings_from(obj), name: value})
