"""The policy schema: what each query class gets (:class:`Policy`), a policy file's classes with its version,
rollout share and kill switch (:class:`PolicySet`), and the TOML loader.

Cues and policies live in a TOML policy file (``admit/policies/default.toml`` by default). The router
(:mod:`admit.route`) picks a class by its cues; the prune settings of a class are
:class:`~admit.prune.settings.PruneSettings`.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from admit.errors import ConfigError, RequestError, unknown_name
from admit.prune.settings import PruneSettings
from admit.question import Question
from admit.route import QuestionShape, Route, RouteCues, Router, RoutingSettings
from admit.trace import RouteRecord

__all__ = [
    "DEFAULT_CANDIDATE_COUNT",
    "FallbackKind",
    "Policy",
    "PolicySet",
    "Resolution",
    "load_policy_set",
    "policy_as_toml",
    "policy_set_from_dict",
    "shipped_policy_text",
    "toml_value",
]

FallbackKind = Literal["anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval"]
NoAnswerAction = Literal["note", "admit_nothing", "ask_to_narrow"]
DEFAULT_CANDIDATE_COUNT = 30
"""How many candidates a search retrieves when nothing says otherwise: the policy's ``candidate_count`` default, and
through it every face's (the library, ``admit search``, HTTP ``/v1/search``, the MCP ``search_knowledge_base`` tool).
The pruner, not a fixed cut, decides among them."""

_NO_ANSWER = {"note", "admit_nothing", "ask_to_narrow"}
_FALLBACKS = {"anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval"}


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
    """Case-insensitive regular expressions that select the class, searched in the question's main clause
    (quoted text masked, subordinate clauses cut: :mod:`admit.route`)."""
    head_cues: tuple[str, ...] = ()
    """Case-insensitive regular expressions that select the class when they match at the start of the main
    clause (or of one of its sentences), after lead-ins such as ``please``, ``tell me`` or the ``can you`` of a
    polite request."""
    exclude: tuple[str, ...] = ()
    """Case-insensitive regular expressions searched in the main clause; a match takes the class out of the
    running (``^how (do|can) I`` keeps "How do I list all files?" out of ``list_all``)."""
    answer_reserve: int = 600
    """Tokens reserved for the answer (the answer contract)."""
    safety_margin: int = 64
    """Tokens held back for drift."""
    candidate_count: int = DEFAULT_CANDIDATE_COUNT
    """How many candidates to retrieve (every face's default: :data:`DEFAULT_CANDIDATE_COUNT`)."""
    rerank_count: int = 12
    """How many reranked candidates go on to dedupe, prune and pack; a pruner that grades the whole retrieved list
    (an LLM grader: ``grades_whole_list``, true unless a strategy says otherwise) gets every candidate instead, and
    it, not this cut, decides among them. ``setwise`` takes this many (its trees were fitted on lists of 10-20),
    and, with ``Pipeline.retriever_top`` set (0 by default; 5 measured), at most that many more that were among the
    first that many of the knowledge base's BM25 or vector list."""
    evidence_ceiling: int | None = None
    """A ceiling on evidence tokens below the model's limit."""
    per_source_limit: int = 2
    """At most this many passages per source (after pruning: the best graded, then the pruner's most probable, then
    the best ranked)."""
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
    on_no_answer: NoAnswerAction = "note"
    """What follows when the admitted evidence does not answer the question (:mod:`admit.answerability`):
    ``note`` admits it with a note telling the generator to say so, ``admit_nothing`` admits none of it,
    ``ask_to_narrow`` admits it with a note asking the user to rephrase or narrow. The ``no_answer`` fallback is
    recorded either way."""

    def with_prune(self, **changes: Any) -> Policy:
        """Return a copy with pruner settings changed (checked: see :class:`PruneSettings`)."""
        strategy = changes.pop("strategy", None)
        params = changes.pop("params", None)
        prune = self.prune.with_overrides(changes, strategy=strategy)
        if params is not None:
            prune = replace(prune, params=params)
        return replace(self, prune=prune)


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
    routing: RoutingSettings = field(default_factory=RoutingSettings)
    """How questions are prepared before the cues run (``[routing]``): quoted text masked, subordinate clauses
    cut, lead-ins stripped."""
    _router: Router = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        """Compile the cues in priority order and check the default class exists."""
        if self.default_class not in self.classes:
            raise ConfigError(f"default_class {self.default_class!r} is not one of {sorted(self.classes)}.")
        router = Router(
            [
                RouteCues(name=p.name, priority=p.priority, cues=p.cues, head_cues=p.head_cues, exclude=p.exclude)
                for p in self.classes.values()
            ],
            default_class=self.default_class,
            settings=self.routing,
        )
        object.__setattr__(self, "_router", router)

    def classify(self, question: str | Question, *, override: str | None = None) -> Route:
        """Pick the class for ``question``; ``override`` (a class name) wins and is logged as such."""
        return self._router.classify(question, override=override)

    def shape(self, question: str) -> QuestionShape:
        """The question as the router reads it: quoted text masked, the main clause, its heads."""
        return self._router.shape(question)

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


def _check_keys(raw: Any, known: Iterable[str], where: str) -> None:
    """Refuse a table that is not one, or a key ``known`` lacks, naming the table and the closest known key."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table, got {type(raw).__name__}.")
    for key in raw:
        if key not in known:
            moved = (
                f"; {key!r} is a prune setting: put it in [{where.strip('[]')}.prune]" if key in _PRUNE_FIELDS else ""
            )
            raise ConfigError(f"{where}: {unknown_name('setting', str(key), known)}{moved}.")


def _build_policy(name: str, raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> Policy:
    _check_keys(raw, _POLICY_FIELDS | {"prune"}, f"[classes.{name}]")
    merged: dict[str, Any] = {**defaults, **raw}
    prune_raw = {**defaults.get("prune", {}), **raw.get("prune", {})}
    kwargs = {k: v for k, v in merged.items() if k in _POLICY_FIELDS}
    for key in ("cues", "head_cues", "exclude", "fallbacks"):
        if key in kwargs:
            if isinstance(kwargs[key], str) or not isinstance(kwargs[key], list | tuple):
                raise ConfigError(f"{name}.{key} must be a list, got {kwargs[key]!r}.")
            kwargs[key] = tuple(kwargs[key])
    bad = [f for f in kwargs.get("fallbacks", ()) if f not in _FALLBACKS]
    if bad:
        raise ConfigError(f"Unknown fallback(s) {bad} in class {name!r}; known: {sorted(_FALLBACKS)}.")
    if kwargs.get("on_no_answer", "note") not in _NO_ANSWER:
        raise ConfigError(f"{name}.on_no_answer must be one of {sorted(_NO_ANSWER)}, got {kwargs['on_no_answer']!r}.")
    for key in ("answer_reserve", "safety_margin", "candidate_count", "rerank_count", "per_source_limit"):
        if key in kwargs and (not isinstance(kwargs[key], int) or kwargs[key] < 0):
            raise ConfigError(f"{name}.{key} must be a non-negative integer, got {kwargs[key]!r}.")
    return Policy(name=name, prune=_build_prune(prune_raw, f"[classes.{name}.prune]"), **kwargs)


_TOP_KEYS = frozenset({"version", "default_class", "kill_switch", "rollout", "routing", "defaults", "classes"})
_ROUTING_FIELDS = frozenset(RoutingSettings.__dataclass_fields__)


def _build_routing(raw: Any) -> RoutingSettings:
    """``[routing]``: booleans and lists of patterns, each checked; absent keys keep the defaults."""
    _check_keys(raw, _ROUTING_FIELDS, "[routing]")
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key in {"mask_quoted", "main_clause"}:
            if not isinstance(value, bool):
                raise ConfigError(f"[routing] {key} must be true or false, got {value!r}.")
            kwargs[key] = value
        else:
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ConfigError(f"[routing] {key} must be a list of non-empty strings, got {value!r}.")
            kwargs[key] = tuple(value)
    return RoutingSettings(**kwargs)


def policy_set_from_dict(data: Mapping[str, Any], *, source: str = "") -> PolicySet:
    """Build a :class:`PolicySet` from the parsed TOML structure.

    Every key is checked where it stands (an unknown one is named with its table and the closest known key).
    A file without ``[classes.*]`` tables keeps the shipped classes and applies its ``[defaults]`` (and
    ``[defaults.prune]``) over the shipped defaults: ``[defaults.prune] strategy = "top_n"`` alone is a
    whole policy.
    """
    where = source or "<dict>"
    _check_keys(data, _TOP_KEYS, f"Policy file {where}")
    defaults = dict(data.get("defaults", {}))
    _check_keys(defaults, _POLICY_FIELDS | {"prune"}, "[defaults]")
    if "prune" in defaults:
        _check_keys(defaults["prune"], defaults["prune"], "[defaults.prune]")  # a table
        _build_prune(defaults["prune"], "[defaults.prune]")
    classes_raw = data.get("classes", {})
    if not isinstance(classes_raw, Mapping):
        raise ConfigError(f"Policy file {where}: [classes] must hold [classes.NAME] tables.")
    if not classes_raw:
        shipped = _shipped_data()
        classes_raw = shipped["classes"]
        base = dict(shipped.get("defaults", {}))
        prune = {**base.get("prune", {}), **defaults.get("prune", {})}
        defaults = {**base, **defaults, "prune": prune}
        data = {**{k: v for k, v in shipped.items() if k not in {"classes", "defaults"}}, **data}
    classes = {name: _build_policy(name, raw, defaults) for name, raw in classes_raw.items()}
    rollout = float(data.get("rollout", 1.0))
    if not 0.0 <= rollout <= 1.0:
        raise ConfigError(f"rollout must be between 0 and 1, got {rollout}.")
    return PolicySet(
        classes=classes,
        routing=_build_routing(data.get("routing", {})),
        default_class=str(data.get("default_class", "default")),
        version=str(data.get("version", "")),
        kill_switch=bool(data.get("kill_switch", False)),
        rollout=rollout,
        source=source,
    )


def toml_value(value: Any) -> str:
    """One value as TOML: a string literal (``'\\bvs\\b'`` stays as written) unless it holds a quote or a line
    break, booleans and numbers as such, sequences as arrays, mappings as inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        if "'" not in value and "\n" not in value and "\r" not in value:
            return f"'{value}'"
        import json

        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} as TOML")


def _toml_key(key: Any) -> str:
    k = str(key)
    return k if k and all(c.isalnum() or c in "_-" for c in k) else toml_value(k)


def policy_as_toml(policy: Policy) -> str:
    """A class's policy as the ``[classes.NAME]`` and ``[classes.NAME.prune]`` tables of a policy file, to copy
    (``admit policy``): every setting, strategy parameters beside the prune settings."""
    lines = [f"[classes.{_toml_key(policy.name)}]"]
    for name in Policy.__dataclass_fields__:
        if name not in {"name", "prune"}:
            value = getattr(policy, name)
            if value is not None:
                lines.append(f"{name} = {toml_value(value)}")
    p = policy.prune
    lines += ["", f"[classes.{_toml_key(policy.name)}.prune]"]
    for name in ("strategy", "threshold", "keep_top_k", "on_error"):
        lines.append(f"{name} = {toml_value(getattr(p, name))}")
    lines += [f"{_toml_key(k)} = {toml_value(v)}" for k, v in p.params.items()]
    return "\n".join(lines) + "\n"


def shipped_policy_text() -> str:
    """The shipped policy file (``admit/policies/default.toml``), as TOML text to copy (``admit policy
    --show-default``)."""
    return resources.files("admit.policies").joinpath("default.toml").read_text("utf-8")


def _shipped_data() -> dict[str, Any]:
    return tomllib.loads(shipped_policy_text())


def load_policy_set(path: str | Path | None = None) -> PolicySet:
    """Load a policy file (TOML); ``None`` loads the shipped default.

    Example:
        >>> ps = load_policy_set()
        >>> ps.classify("Compare Qdrant and pgvector").query_class
        'comparison'
    """
    if path is None:
        text = shipped_policy_text()
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """A request's settings, resolved once (:meth:`Pipeline.resolve`): route, rollout, overrides, kill switch."""

    policy: Policy
    """The policy of the routed class, its prune settings with the request's strategy and overrides applied."""
    route: Route
    """The router's decision."""
    policy_version: str
    """The version of the policy set the request got."""
    rollout: Literal["current", "baseline"]
    """``current`` inside the rollout share, ``baseline`` outside it."""
    kill_switch: bool = False
    """Whether the policy set's kill switch turned pruning off."""

    @property
    def prune(self) -> PruneSettings:
        """The prune settings to run."""
        return self.policy.prune

    def with_strategy(self, strategy: str) -> Resolution:
        """The same resolution running ``strategy`` (the kill switch still wins: then nothing changes)."""
        if self.kill_switch or strategy == self.policy.prune.strategy:
            return self
        return replace(self, policy=replace(self.policy, prune=self.policy.prune.with_overrides({}, strategy=strategy)))

    def record(self) -> RouteRecord:
        """The trace record's ``route`` entry."""
        r = self.route
        rec: RouteRecord = {
            "query_class": r.query_class,
            "cue": r.cue,
            "pattern": r.pattern,
            "overridden": r.overridden,
            "policy_version": self.policy_version,
            "rollout": self.rollout,
        }
        if self.kill_switch:
            rec["kill_switch"] = True
        return rec
