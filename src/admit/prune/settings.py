"""The pruner settings of a policy (:class:`PruneSettings`): strategy, threshold, keep_top_k, on_error, params.

The settings check themselves against the strategy's declared parameters (its
:class:`~admit.prune.spec.StrategySpec` in the :mod:`~admit.prune.catalogue`), so a typo in a policy file, a
request or a ``--set`` is an error wherever it comes from.

This module is the floor of :mod:`admit.prune`: it imports nothing of the package but :mod:`~admit.prune.checks`
(an import contract in ``pyproject.toml`` keeps it so). The catalogue, above it, hands it the parameter lookup
when it loads (:func:`use_params_lookup`), which ``import admit.prune`` always does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from admit.errors import RequestError
from admit.prune.checks import Check, int_at_least, int_between, one_of

__all__ = ["SETTING_KEYS", "OnError", "PruneSettings", "params_of", "use_params_lookup"]

OnError = Literal["keep_top_k", "keep_all", "drop", "raise"]

_SETTING_CHECKS: dict[str, Check] = {
    "threshold": int_between(1, 5),
    "keep_top_k": int_at_least(0),
    "on_error": one_of("keep_top_k", "keep_all", "drop", "raise"),
}
SETTING_KEYS = tuple(_SETTING_CHECKS)
"""The keys of a flat override that set :class:`PruneSettings` fields; every other key is a strategy parameter."""


ParamsLookup = Callable[[str], "Mapping[str, Check] | None"]
"""``lookup(strategy) -> its parameter checks``, or ``None`` for a strategy no spec declares."""

_lookup: list[ParamsLookup] = []


def use_params_lookup(lookup: ParamsLookup) -> None:
    """Install the parameter lookup (the catalogue does, when it loads)."""
    _lookup[:] = [lookup]


def params_of(strategy: str) -> Mapping[str, Check] | None:
    """The parameter checks of a catalogued strategy (``none`` reads none); ``None`` for a strategy the catalogue
    does not know (a custom pruner given to the pipeline takes its params unchecked)."""
    if strategy == "none":
        return {}
    return _lookup[0](strategy) if _lookup else None


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneSettings:
    """Pruner settings of a policy. ``threshold`` is a grade on the shared five-level rubric.

    The settings check themselves when made (also through :func:`dataclasses.replace`): a wrong type, a value
    out of range or a parameter the strategy does not read raises :class:`~admit.errors.RequestError` naming
    the field, so every entry point (policy file, ``PackRequest.prune_params``, ``admit prune --set``, the
    evaluation grid, ``/v1/pack``, ``/v1/prune``) gives the same clear error. Use :meth:`with_overrides` to
    apply a caller's flat ``{key: value}`` overrides.
    """

    strategy: str = "none"
    """Pruner strategy name (``none``, or a name in the strategy catalogue: ``setwise``, ``graded``, ...)."""
    threshold: int = 3
    """Keep chunks graded at or above this level (1..5)."""
    keep_top_k: int = 1
    """The top-k reranked chunks always stay, whatever their grade."""
    on_error: OnError = "keep_top_k"
    """What happens when the pruner fails: keep the reranked top-k, keep all, drop all, or raise."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Strategy-specific parameters (``n`` for top_n, ``min_score`` for score_threshold, ...)."""

    def __post_init__(self) -> None:
        """Check every field and parameter (see the class docstring)."""
        if not isinstance(self.strategy, str) or not self.strategy.strip():
            raise RequestError(f"prune strategy must be a non-empty string, got {self.strategy!r}.", field="strategy")
        for key, check in _SETTING_CHECKS.items():
            value = getattr(self, key)
            try:
                object.__setattr__(self, key, check(value))
            except ValueError as exc:
                raise RequestError(f"prune setting `{key}` must be {exc}, got {value!r}.", field=key) from None
        if not isinstance(self.params, Mapping):
            raise RequestError(f"prune `params` must be a mapping, got {type(self.params).__name__}.", field="params")
        spec = params_of(self.strategy)
        if spec is None:
            return
        checked: dict[str, Any] = {}
        for key, value in self.params.items():
            if key not in spec:
                import difflib

                known = ", ".join(sorted(spec)) or "none"
                close = difflib.get_close_matches(key, [*spec, "threshold", "keep_top_k", "on_error"], n=1)
                hint = f"; did you mean `{close[0]}`?" if close else ""
                raise RequestError(
                    f"unknown prune parameter `{key}` for strategy {self.strategy!r}{hint} (it reads: {known}; "
                    "every strategy reads threshold, keep_top_k, on_error).",
                    field=key,
                )
            try:
                checked[key] = spec[key](value)
            except ValueError as exc:
                raise RequestError(
                    f"prune parameter `{key}` of strategy {self.strategy!r} must be {exc}, got {value!r}.", field=key
                ) from None
        object.__setattr__(self, "params", checked)

    def with_overrides(self, overrides: Mapping[str, Any], *, strategy: str | None = None) -> PruneSettings:
        """Return these settings with a caller's flat overrides applied, checked.

        ``threshold``, ``keep_top_k`` and ``on_error`` set those fields; every other key is a strategy
        parameter. With a new ``strategy``, the policy's own parameters that the new strategy does not read
        are dropped (they were meant for the old one); the caller's are all checked.

        Example:
            >>> PruneSettings(strategy="top_n").with_overrides({"n": 2, "threshold": 4}).params
            {'n': 2}
        """
        if not isinstance(overrides, Mapping):
            raise RequestError(f"prune overrides must be an object, got {type(overrides).__name__}.", field="params")
        fields = {k: v for k, v in overrides.items() if k in _SETTING_CHECKS}
        extra = {k: v for k, v in overrides.items() if k not in _SETTING_CHECKS}
        new_strategy = self.strategy if strategy is None else strategy
        base = dict(self.params)
        if new_strategy != self.strategy:
            spec = params_of(new_strategy)
            base = {k: v for k, v in base.items() if spec is None or k in spec}
        return replace(self, strategy=new_strategy, params={**base, **extra}, **fields)
