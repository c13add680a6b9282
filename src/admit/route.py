"""Route: a deterministic, logged, overridable query classifier that picks a policy.

Cues and policies live in a TOML policy file (``admit/policies/default.toml`` by default). The router tries
classes in descending priority; the first cue that matches wins and is recorded as the reason.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from admit import _linear
from admit.errors import ConfigError, RequestError

__all__ = ["STRATEGY_PARAMS", "Policy", "PolicySet", "PruneSettings", "Route", "load_policy_set"]

logger = logging.getLogger(__name__)

OnError = Literal["keep_top_k", "keep_all", "drop", "raise"]
FallbackKind = Literal["anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval"]
_FALLBACKS = {"anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval"}


def _int_at_least(lo: int) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"an integer >= {lo}")
        return v

    return check


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def opt(v: Any) -> Any:
        return None if v is None else check(v)

    return opt


def _number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError("a finite number")
    return v


_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def _boolean(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[v.strip().lower()]
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def _one_of(*choices: str) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v not in choices:
            raise ValueError(f"one of {list(choices)}")
        return v

    return check


_LLM_PARAMS: dict[str, Callable[[Any], Any]] = {
    "max_prompt_tokens": _int_at_least(256),
    "window_anchors": _int_at_least(0),
    "max_chunk_tokens": _int_at_least(1),
    "max_tokens": _optional(_int_at_least(1)),
    "on_missing": _one_of("reask", "on_error"),
    "second_pass": _boolean,
}
STRATEGY_PARAMS: Mapping[str, Mapping[str, Callable[[Any], Any]]] = {
    "none": {},
    "setwise": {},
    "top_n": {"n": _int_at_least(0)},
    "score_threshold": {"min_score": _number, "relative": _boolean},
    "graded": _LLM_PARAMS,
    "select": _LLM_PARAMS,
    "budget_select": {**_LLM_PARAMS, "m": _int_at_least(0), "n": _int_at_least(0)},
    "anchors": {},
}
"""The strategy parameters each shipped strategy reads, with their checks. A strategy not listed (a custom
pruner given to the pipeline) takes its params unchecked."""

_SETTING_CHECKS: dict[str, Callable[[Any], Any]] = {
    "threshold": lambda v: _in_range(_int_at_least(1)(v), 5),
    "keep_top_k": _int_at_least(0),
    "on_error": _one_of("keep_top_k", "keep_all", "drop", "raise"),
}


def _in_range(v: int, hi: int) -> int:
    if v > hi:
        raise ValueError(f"an integer between 1 and {hi}")
    return v


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
    """Pruner strategy name (``none``, ``setwise``, ``graded``, ``select``, ``budget_select``, ``anchors``,
    ``top_n``, ``score_threshold``)."""
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
        spec = STRATEGY_PARAMS.get(self.strategy)
        if spec is None:
            return
        checked: dict[str, Any] = {}
        for key, value in self.params.items():
            if key not in spec:
                known = ", ".join(sorted(spec)) or "none"
                raise RequestError(
                    f"unknown prune parameter `{key}` for strategy {self.strategy!r} (it reads: {known}).", field=key
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
            spec = STRATEGY_PARAMS.get(new_strategy)
            base = {k: v for k, v in base.items() if spec is None or k in spec}
        return replace(self, strategy=new_strategy, params={**base, **extra}, **fields)


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """The policy of one query class: answer contract, counts, caps, weights, pruner, fallbacks."""

    name: str
    """The class name."""
    description: str = ""
    """What the class is for."""
    priority: int = 0
    """Routing priority; higher is tried first."""
    cues: tuple[str, ...] = ()
    """Case-insensitive regular expressions that select the class."""
    answer_reserve: int = 600
    """Tokens reserved for the answer (the answer contract)."""
    safety_margin: int = 64
    """Tokens held back for drift."""
    candidate_count: int = 30
    """How many candidates to retrieve."""
    rerank_count: int = 12
    """How many reranked candidates go on to dedupe, prune and pack."""
    evidence_ceiling: int | None = None
    """A ceiling on evidence tokens below the model's limit."""
    per_source_limit: int = 2
    """At most this many passages per source."""
    keep_superseded: bool = False
    """Keep older versions beside the newest (history questions)."""
    recency_weight: float = 0.0
    """Weight of recency in packing."""
    authority_weight: float = 0.15
    """Weight of the source registry's authority in packing."""
    novelty_weight: float = 0.25
    """Weight of novelty (distance from admitted evidence) in packing."""
    relevance_weight: float = 0.60
    """Weight of rerank relevance in packing."""
    coverage_weight: float = 0.30
    """Bonus for covering a question facet not yet covered."""
    near_duplicate_threshold: float = 0.80
    """Shingle Jaccard (or containment) at or above which two chunks are near-duplicates."""
    max_passage_tokens: int | None = 1500
    """A passage longer than this is admitted as an anchored excerpt."""
    fallbacks: tuple[FallbackKind, ...] = ("anchored_excerpt", "scope_note", "second_retrieval")
    """Fallbacks applied in order when the evidence does not fit."""
    prune: PruneSettings = field(default_factory=PruneSettings)
    """Pruner settings."""

    def with_prune(self, **changes: Any) -> Policy:
        """Return a copy with pruner settings changed (checked: see :class:`PruneSettings`)."""
        strategy = changes.pop("strategy", None)
        params = changes.pop("params", None)
        prune = self.prune.with_overrides(changes, strategy=strategy)
        if params is not None:
            prune = replace(prune, params=params)
        return replace(self, prune=prune)


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """The router's decision."""

    query_class: str
    """The chosen class."""
    cue: str
    """The matched cue text, ``override`` or ``default``."""
    pattern: str = ""
    """The pattern that matched."""
    overridden: bool = False
    """Whether the caller chose the class."""

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "query_class": self.query_class,
            "cue": self.cue,
            "pattern": self.pattern,
            "overridden": self.overridden,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicySet:
    """All classes of a policy file, with the router."""

    classes: Mapping[str, Policy]
    """Policies by class name."""
    default_class: str = "default"
    """The class used when no cue matches."""
    version: str = ""
    """Policy file version, recorded in traces."""
    kill_switch: bool = False
    """When on, the pipeline skips pruning and admits the reranked top within budget."""
    rollout: float = 1.0
    """Share of requests (deterministic hash of the request id) that get this policy."""
    source: str = ""
    """Where the policy was loaded from."""
    _compiled: tuple[tuple[str, _linear.LinearPattern, str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        """Compile the cues in priority order and check the default class exists."""
        if self.default_class not in self.classes:
            raise ConfigError(f"default_class {self.default_class!r} is not one of {sorted(self.classes)}.")
        compiled: list[tuple[str, _linear.LinearPattern, str]] = []
        for pol in sorted(self.classes.values(), key=lambda p: (-p.priority, p.name)):
            for cue in pol.cues:
                try:  # RE2: a cue is matched against outside text (the question) in linear time
                    rx = _linear.LinearPattern(cue, re.IGNORECASE, name=f"route.{pol.name}")
                    compiled.append((pol.name, rx, cue))
                except ValueError as exc:
                    raise ConfigError(f"Bad cue {cue!r} in class {pol.name!r}: {exc}") from exc
        object.__setattr__(self, "_compiled", tuple(compiled))

    def classify(self, question: str, *, override: str | None = None) -> Route:
        """Pick the class for ``question``; ``override`` (a class name) wins and is logged as such."""
        if override:
            if override not in self.classes:
                raise ConfigError(f"Unknown query_class {override!r}; known: {', '.join(sorted(self.classes))}.")
            route = Route(query_class=override, cue="override", overridden=True)
        else:
            route = Route(query_class=self.default_class, cue="default")
            for name, rx, pattern in self._compiled:
                m = rx.search(question)
                if m:
                    route = Route(query_class=name, cue=m.group(0).strip(), pattern=pattern)
                    break
        logger.debug("route: class=%s cue=%r overridden=%s", route.query_class, route.cue, route.overridden)
        return route

    def policy(self, name: str) -> Policy:
        """Return the policy of class ``name``."""
        try:
            return self.classes[name]
        except KeyError:
            raise ConfigError(f"Unknown query class {name!r}; known: {', '.join(sorted(self.classes))}.") from None

    def in_rollout(self, request_id: str) -> bool:
        """Whether ``request_id`` falls in the rollout share (a deterministic hash, stable across runs)."""
        if self.rollout >= 1.0:
            return True
        if self.rollout <= 0.0:
            return False
        h = int.from_bytes(hashlib.sha256(request_id.encode("utf-8")).digest()[:8], "big") / 2**64
        return h < self.rollout


_POLICY_FIELDS = {f for f in Policy.__dataclass_fields__ if f not in {"name", "prune"}}
_PRUNE_FIELDS = {f for f in PruneSettings.__dataclass_fields__ if f != "params"}


def _build_prune(raw: Mapping[str, Any], where: str) -> PruneSettings:
    known = {k: v for k, v in raw.items() if k in _PRUNE_FIELDS}
    params = {k: v for k, v in raw.items() if k not in _PRUNE_FIELDS}
    if "params" in raw and isinstance(raw["params"], Mapping):
        params.pop("params", None)
        params.update(raw["params"])
    try:
        return PruneSettings(**known, params=params)
    except RequestError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _build_policy(name: str, raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> Policy:
    merged: dict[str, Any] = {**defaults, **raw}
    unknown = set(merged) - _POLICY_FIELDS - {"prune"}
    if unknown:
        raise ConfigError(f"Unknown setting(s) {sorted(unknown)} in class {name!r}.")
    prune_raw = {**defaults.get("prune", {}), **raw.get("prune", {})}
    kwargs = {k: v for k, v in merged.items() if k in _POLICY_FIELDS}
    for key in ("cues", "fallbacks"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    bad = [f for f in kwargs.get("fallbacks", ()) if f not in _FALLBACKS]
    if bad:
        raise ConfigError(f"Unknown fallback(s) {bad} in class {name!r}; known: {sorted(_FALLBACKS)}.")
    for key in ("answer_reserve", "safety_margin", "candidate_count", "rerank_count", "per_source_limit"):
        if key in kwargs and (not isinstance(kwargs[key], int) or kwargs[key] < 0):
            raise ConfigError(f"{name}.{key} must be a non-negative integer, got {kwargs[key]!r}.")
    return Policy(name=name, prune=_build_prune(prune_raw, f"{name}.prune"), **kwargs)


def policy_set_from_dict(data: Mapping[str, Any], *, source: str = "") -> PolicySet:
    """Build a :class:`PolicySet` from the parsed TOML structure."""
    defaults = dict(data.get("defaults", {}))
    classes_raw = data.get("classes", {})
    if not isinstance(classes_raw, Mapping) or not classes_raw:
        raise ConfigError(f"Policy file {source or '<dict>'} has no [classes.*] tables.")
    classes = {name: _build_policy(name, raw, defaults) for name, raw in classes_raw.items()}
    rollout = float(data.get("rollout", 1.0))
    if not 0.0 <= rollout <= 1.0:
        raise ConfigError(f"rollout must be between 0 and 1, got {rollout}.")
    return PolicySet(
        classes=classes,
        default_class=str(data.get("default_class", "default")),
        version=str(data.get("version", "")),
        kill_switch=bool(data.get("kill_switch", False)),
        rollout=rollout,
        source=source,
    )


def load_policy_set(path: str | Path | None = None) -> PolicySet:
    """Load a policy file (TOML); ``None`` loads the shipped default.

    Example:
        >>> ps = load_policy_set()
        >>> ps.classify("Compare Qdrant and pgvector").query_class
        'comparison'
    """
    if path is None:
        text = resources.files("admit.policies").joinpath("default.toml").read_text("utf-8")
        source = "admit:default.toml"
    else:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"Policy file {str(path)!r} does not exist.")
        text = p.read_text("utf-8")
        source = str(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Policy file {source} is not valid TOML: {exc}") from exc
    return policy_set_from_dict(data, source=source)
