"""Route: a deterministic, logged, overridable query classifier that picks a policy.

Cues and policies live in a TOML policy file (``admit/policies/default.toml`` by default). The router tries
classes in descending priority; the first cue that matches wins and is recorded as the reason.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from admit.errors import ConfigError

__all__ = ["Policy", "PolicySet", "PruneSettings", "Route", "load_policy_set"]

logger = logging.getLogger(__name__)

OnError = Literal["keep_top_k", "keep_all", "drop", "raise"]
FallbackKind = Literal["anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval"]
_FALLBACKS = {"anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval"}
_ON_ERROR = {"keep_top_k", "keep_all", "drop", "raise"}


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneSettings:
    """Pruner settings of a policy. ``threshold`` is a grade on the shared five-level rubric."""

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
        """Return a copy with pruner settings changed."""
        return replace(self, prune=replace(self.prune, **changes))


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
    _compiled: tuple[tuple[str, re.Pattern[str], str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        """Compile the cues in priority order and check the default class exists."""
        if self.default_class not in self.classes:
            raise ConfigError(f"default_class {self.default_class!r} is not one of {sorted(self.classes)}.")
        compiled: list[tuple[str, re.Pattern[str], str]] = []
        for pol in sorted(self.classes.values(), key=lambda p: (-p.priority, p.name)):
            for cue in pol.cues:
                try:
                    compiled.append((pol.name, re.compile(cue, re.IGNORECASE), cue))
                except re.error as exc:
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
    ps = PruneSettings(**known, params=params)
    if not 1 <= int(ps.threshold) <= 5:
        raise ConfigError(f"{where}.threshold must be between 1 and 5, got {ps.threshold}.")
    if ps.keep_top_k < 0:
        raise ConfigError(f"{where}.keep_top_k must be >= 0, got {ps.keep_top_k}.")
    if ps.on_error not in _ON_ERROR:
        raise ConfigError(f"{where}.on_error must be one of {sorted(_ON_ERROR)}, got {ps.on_error!r}.")
    return ps


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
