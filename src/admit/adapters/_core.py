"""What every framework adapter shares: framework documents in, one verdict per document out.

:class:`AdmitFilter` holds the settings (checked when made and when changed), the pruner built from them (built
once, on :meth:`AdmitFilter.warm_up` or the first call, rebuilt when the strategy changes) and the steps around
pruning that every adapter needs: a size cap per document, exact duplicates under another id, the rank signal
(the retriever's scores, else the retriever's order), the framework's stored vectors, ``top_k`` and a token
budget. It is picklable and deep-copyable (the loaded model is shared, never copied) and saves itself as a
plain dict (:meth:`AdmitFilter.to_dict`), custom pruners included when they save themselves.
"""

from __future__ import annotations

import copy
import gc
import logging
import math
import numbers
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from admit._text import norm_hash
from admit.adapters._saving import instance_from_dict, instance_to_dict
from admit.adapters._vectors import seed_vectors
from admit.adapters._verdicts import Decision, Doc, FilterRun, Verdict
from admit.answerability import assess_kept
from admit.backends.embedders import DEFAULT_EMBEDDER
from admit.backends.rerankers import DEFAULT_RERANKER, RERANKERS, Reranker, resolve_reranker
from admit.errors import ConfigError, InvalidType, unknown_name
from admit.pack import anchored_excerpt
from admit.pipeline import prune_candidates
from admit.prune import DEFAULT_STRATEGY, Pruner, find_strategy, resolve_pruner, strategy_names
from admit.prune.base import PruneOutcome
from admit.prune.settings import PruneSettings
from admit.types import Chunk

__all__ = [
    "MAX_TITLE_CHARS",
    "SETTINGS",
    "AdmitFilter",
    "Decision",
    "Doc",
    "FilterRun",
    "Verdict",
    "as_score",
    "documents_of",
    "settings_from",
]

logger = logging.getLogger(__name__)

D = TypeVar("D")

EmbeddingUse = Literal["auto", "reuse", "ignore"]

#: The setting fields an adapter exposes under the same names (checked by :class:`AdmitFilter`).
SETTINGS = (
    "strategy",
    "threshold",
    "keep_top_k",
    "on_error",
    "params",
    "top_k",
    "max_tokens",
    "max_doc_chars",
    "drop_duplicates",
    "embeddings",
    "reranker",
)

#: A title longer than this is cut (said in the document's reason): it is part of every passage graded and of
#: the token count, so an unbounded one would make a call as slow as its longest title (the bound of
#: :class:`admit.schema.PruneCandidate`'s ``title``).
MAX_TITLE_CHARS = 2000


_QUIET_LOAD = threading.Lock()
"""One quiet model load at a time (each saves and restores the collector's thresholds)."""
_NO_FULL_PASS = 1_000_000_000
"""Generation-2 threshold during a quiet load: no full collection starts."""


@dataclass(kw_only=True)
class AdmitFilter:
    """Prune a list of documents for a question with one of admit's strategies.

    Settings are checked when the filter is made and whenever one is assigned (a :class:`~admit.errors.ConfigError`
    naming the setting); a changed setting applies from the next call.

    Example:
        >>> f = AdmitFilter(strategy="top_n", params={"n": 1}, keep_top_k=0)
        >>> run = f.run("port", [Doc(id="a", text="port 80", score=2.0), Doc(id="b", text="bananas", score=1.0)])
        >>> [v.kept for v in run.verdicts]
        [True, False]

    Args:
        strategy: Pruning strategy (:data:`~admit.prune.DEFAULT_STRATEGY` by default; ``top_n``, LLM strategies ...).
        threshold: Keep grades at or above this (1..5).
        keep_top_k: The top-k ranked documents always stay (unless over the size cap or the budget).
        on_error: What a pruner failure does (``keep_top_k``, ``keep_all``, ``drop``, ``raise``).
        params: Strategy parameters (``n`` for ``top_n`` ...).
        top_k: At most this many documents are returned (the best ranked), like Haystack's rankers.
        max_tokens: Token budget of the kept documents (best ranked first; ``None``: no budget).
        max_doc_chars: A document longer than this is dropped before grading, logged and recorded as its fate
            (``None``, the default: no cap; a long document is graded by its best passages).
        drop_duplicates: Drop a document whose text repeats an earlier one under another id.
        embeddings: The framework's stored vectors, reused only for the text admit encodes (checked per document:
            no title prefix, one passage) and said in each document's reason: ``auto`` reuses them when the first
            checks out against admit's own (same model), ``reuse`` trusts the model, ``ignore`` re-encodes.
        tokenizer: The tokenizer counting ``max_tokens`` (a model name or encoding).
        reranker: Reranker name (a catalogue name, plug-ins included) or instance (``retriever``/``None``: the
            documents' scores, else their order).
        pruner: A pruner instance (overrides ``strategy``).
        pruner_options: Keyword arguments for the pruner built by name (``embedder=``, ``llm=`` ...).
    """

    strategy: str = DEFAULT_STRATEGY
    threshold: int = 3
    keep_top_k: int = 1
    on_error: str = "keep_top_k"
    params: Mapping[str, Any] = field(default_factory=dict)
    top_k: int | None = None
    max_tokens: int | None = None
    max_doc_chars: int | None = None
    drop_duplicates: bool = True
    embeddings: EmbeddingUse = "auto"
    tokenizer: str = "gpt-4o"
    reranker: Reranker | str | None = None
    pruner: Pruner | None = None
    pruner_options: Mapping[str, Any] = field(default_factory=dict)

    _CACHES: ClassVar[tuple[str, ...]] = ("_built_pruner", "_built_reranker", "_embedder", "_warmed")
    if TYPE_CHECKING:  # built on first use; not fields at run time (never compared, copied deep or pickled), and
        # declared `init=False` so that a type checker sees no constructor argument for them
        _built_pruner: Pruner | None = field(init=False, default=None, repr=False, compare=False)
        _built_reranker: Reranker | None = field(init=False, default=None, repr=False, compare=False)
        _embedder: Any = field(init=False, default=None, repr=False, compare=False)
        _warmed: Pruner | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for key, example in (("params", "params={'n': 3}"), ("pruner_options", "pruner_options={'llm': my_llm}")):
            if not isinstance(getattr(self, key), Mapping):
                got = type(getattr(self, key)).__name__
                raise InvalidType(f"`{key}` must be a mapping (a dict, e.g. {example}), got {got}.")
        self.params = dict(self.params)
        self.pruner_options = dict(self.pruner_options)
        self._check()
        self._reset_caches()
        object.__setattr__(self, "_ready", True)
        spec = find_strategy(self.strategy)
        if self.pruner is None and spec is not None and spec.reads_embedder and "scorer" not in self.pruner_options:
            from admit.backends.embedders.shared import import_libraries

            import_libraries()  # now, not in the first async call's worker thread (see warm_up_quietly)

    def __setattr__(self, name: str, value: Any) -> None:
        if not getattr(self, "_ready", False) or name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        trial = {f.name: getattr(self, f.name) for f in fields(self)}
        trial[name] = value
        _check_values(trial)  # a bad value is refused here, before it can be used
        object.__setattr__(self, name, value)
        if name in {"strategy", "pruner", "pruner_options"}:
            object.__setattr__(self, "_built_pruner", None)
            object.__setattr__(self, "_embedder", None)
        if name == "reranker":
            object.__setattr__(self, "_built_reranker", None)

    # -- copying and pickling: settings travel, the loaded model is shared or rebuilt --------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The settings only (the pruner built by name is rebuilt on first use after unpickling)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore the settings; caches start empty."""
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self._reset_caches()
        object.__setattr__(self, "_ready", True)

    def __deepcopy__(self, memo: dict[int, Any]) -> AdmitFilter:
        """A deep copy of the settings sharing the backends: the loaded pruner (its model is read-only and
        process-wide) and the instances given (a pruner, a reranker, an LLM or embedder in ``pruner_options``)."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in {"pruner", "reranker"}:
                copied = value
            elif f.name == "pruner_options":
                copied = dict(value)
            else:
                copied = copy.deepcopy(value, memo)
            object.__setattr__(new, f.name, copied)
        for name in self._CACHES:
            object.__setattr__(new, name, getattr(self, name, None))
        object.__setattr__(new, "_ready", True)
        return new

    def _reset_caches(self) -> None:
        for name in self._CACHES:
            object.__setattr__(self, name, None)

    def _check(self) -> None:
        _check_values({f.name: getattr(self, f.name) for f in fields(self)})

    # -- settings ----------------------------------------------------------------------------------------------
    def settings(self) -> PruneSettings:
        """The prune settings built from the fields (checked)."""
        return _prune_settings({f.name: getattr(self, f.name) for f in fields(self)})

    def settings_dict(self) -> dict[str, Any]:
        """The adapter-facing settings (:data:`SETTINGS`), as plain values."""
        return {k: (dict(v) if isinstance(v := getattr(self, k), Mapping) else v) for k in SETTINGS}

    def with_(self, **changes: Any) -> AdmitFilter:
        """A copy with fields changed (checked: an unknown name is a :class:`~admit.errors.ConfigError`, as a bad
        value is), sharing what was built when its inputs did not change."""
        check_names(changes, [f.name for f in fields(self)], error=InvalidType)  # a TypeError too, as Python's own
        new = replace(self, **changes)
        if not ({"strategy", "pruner", "pruner_options"} & changes.keys()):
            object.__setattr__(new, "_built_pruner", self._built_pruner)
            object.__setattr__(new, "_embedder", self._embedder)
            object.__setattr__(new, "_warmed", self._warmed)
        if "reranker" not in changes:
            object.__setattr__(new, "_built_reranker", self._built_reranker)
        return new

    def configured(self, values: Mapping[str, Any]) -> AdmitFilter:
        """This filter when ``values`` (adapter settings) equal its own, else a checked copy with them."""
        changes = {k: v for k, v in values.items() if _differs(getattr(self, k), v)}
        return self.with_(**changes) if changes else self

    # -- the built parts ---------------------------------------------------------------------------------------
    def _get_pruner(self) -> Pruner:
        if self.pruner is not None:
            return self.pruner
        built: Pruner | None = self._built_pruner
        if built is None:
            opts = dict(self.pruner_options)
            spec = find_strategy(self.strategy)
            reads = spec is not None and spec.reads_embedder
            if reads and "scorer" not in opts:  # (a scorer given brings its own embedder)
                from admit.backends.embedders.shared import shared_embedder

                emb = opts.get("embedder")
                emb = DEFAULT_EMBEDDER if emb is None else emb  # (an empty cache is falsy)
                opts["embedder"] = shared_embedder(emb) if isinstance(emb, str) else emb
            built = resolve_pruner(self.strategy, **opts)
            object.__setattr__(self, "_built_pruner", built)
            object.__setattr__(self, "_embedder", opts.get("embedder") if reads else None)
        return built

    def _get_reranker(self) -> Reranker | None:
        """The reranker, or ``None`` for the retriever's own signal (scores, else order)."""
        if self.reranker is None or self.reranker == DEFAULT_RERANKER:
            return None
        if self._built_reranker is None:
            object.__setattr__(self, "_built_reranker", resolve_reranker(self.reranker))
        return self._built_reranker

    @property
    def is_warm(self) -> bool:
        """Whether :meth:`warm_up` loaded the pruner the current settings build (a call would load nothing)."""
        current = self.pruner if self.pruner is not None else self._built_pruner
        return self._warmed is not None and self._warmed is current

    def warm_up_quietly(self) -> None:
        """:meth:`warm_up` for a worker thread beside an event loop (what the adapters' async calls run first).

        A model load allocates a great many objects; in a process that imported torch (Haystack does) each full
        (generation-2) collection it triggers walks that whole heap holding the GIL, and the event loop stalls
        for as long. So the objects alive before the load are frozen first (:func:`gc.freeze`: full passes
        skip them), full passes are held off during the load (the young generations are still collected), and
        what the load built (the model, kept for the process's life) is frozen after it. Does nothing once warm.
        """
        if self.is_warm:
            return
        with _QUIET_LOAD:
            if self.is_warm:
                return
            gc.freeze()
            young, middle, full = gc.get_threshold()
            gc.set_threshold(young, middle, _NO_FULL_PASS)
            try:
                self.warm_up()
            finally:
                gc.set_threshold(young, middle, full)
                gc.freeze()

    def warm_up(self) -> None:
        """Build the pruner and load its model now (not on the first call); once per built pruner."""
        pruner = self._get_pruner()
        if self._warmed is pruner:
            return
        object.__setattr__(self, "_warmed", pruner)
        warm = getattr(pruner, "warm_up", None)
        if callable(warm):
            warm()
        reranker = self._get_reranker()
        warm = getattr(reranker, "warm_up", None)
        if callable(warm):
            warm()

    # -- one call ----------------------------------------------------------------------------------------------
    def run(self, question: str, docs: Sequence[Doc], *, top_k: int | None = None) -> FilterRun:
        """Decide for each document (``top_k`` overrides the field for this call).

        Raises:
            ConfigError: ``question`` is not a string (``query=None`` names the argument to fix), or ``docs`` is
                not a sequence.
        """
        if not isinstance(question, str):
            raise ConfigError(f"The query must be a string (the user's question), got {type(question).__name__}.")
        docs = documents_of(docs, Doc, "Doc(id=..., text=...)")
        settings = self.settings()
        if top_k is not None:
            _check_values({**{f.name: getattr(self, f.name) for f in fields(self)}, "top_k": top_k})
        limit = top_k if top_k is not None else self.top_k
        if not docs:  # nothing retrieved answers nothing: "not_answered", as the pipeline says of an empty context
            empty = assess_kept(question, [], None)
            return FilterRun(
                strategy=self.strategy,
                verdicts=(),
                answerability=empty.probability,
                answer_state=empty.state,
            )
        ids = _unique_ids(docs)
        docs, notes = _bounded(docs)
        verdicts, live = self._screen(docs, ids)
        strategy = "none"
        outcome: PruneOutcome | None = None
        if live:
            strategy, outcome = self._grade(question, docs, ids, live, settings, notes, verdicts)
            signals = outcome.signals if outcome is not None else {}
            probs = {i: signals[ids[i]][1] for i in live if ids[i] in signals}
            self._cut(verdicts, limit, docs, question, probs)
        for i, said in notes.items():
            prior = verdicts[i]
            verdicts[i] = replace(prior, reason="; ".join([prior.reason, *said]))
        final = tuple(verdicts[i] for i in range(len(docs)))
        kept = [v for v in final if v.kept]
        # what is passed on: an excerpt where one replaced a document (then only its words are known)
        passed = [
            Chunk(id=ids[v.index], source_id=ids[v.index], text=v.excerpt or docs[v.index].text or " ",
                  title="" if v.excerpt else docs[v.index].title)
            for v in kept
        ]  # fmt: skip
        verdict = assess_kept(
            question, passed, None if any(v.excerpt for v in kept) else outcome, embedder=self._embedder
        )
        if verdict.not_answered:
            logger.info("not answered: %s", verdict.reason)
        return FilterRun(
            strategy=strategy,
            verdicts=final,
            answerability=verdict.probability,
            answer_state=verdict.state,
        )

    def _screen(self, docs: Sequence[Doc], ids: Sequence[str]) -> tuple[dict[int, Verdict], list[int]]:
        """Documents dropped before grading (over ``max_doc_chars``, exact duplicates), and the indexes left."""
        verdicts: dict[int, Verdict] = {}
        live: list[int] = []
        first_of: dict[str, int] = {}
        for i, d in enumerate(docs):
            if self.max_doc_chars is not None and len(d.text) > self.max_doc_chars:
                why = f"{len(d.text)} characters > max_doc_chars {self.max_doc_chars}"
                logger.info("document %s dropped before grading: %s", ids[i], why)
                verdicts[i] = _drop(i, "size", why, d)
                continue
            if self.drop_duplicates and d.text.strip():
                h = norm_hash(d.text)
                if h in first_of:
                    verdicts[i] = _drop(i, "duplicate", f"duplicate_of {ids[first_of[h]]} (exact duplicate)", d)
                    continue
                first_of[h] = i
            live.append(i)
        return verdicts, live

    def _grade(
        self,
        question: str,
        docs: Sequence[Doc],
        ids: Sequence[str],
        live: Sequence[int],
        settings: PruneSettings,
        notes: dict[int, list[str]],
        verdicts: dict[int, Verdict],
    ) -> tuple[str, PruneOutcome | None]:
        """Rerank and prune the ``live`` documents: their verdicts into ``verdicts``, a seeded vector's note into
        ``notes``; returns the strategy that ran and its outcome."""
        chunks = [
            Chunk(id=ids[i], source_id=ids[i], text=docs[i].text or " ", title=docs[i].title, score=docs[i].score)
            for i in live
        ]
        reranker = self._get_reranker()
        scores: list[float] | None = None
        if reranker is None:
            # the retriever's scores when every document has one, else the retriever's order
            given = [s for i in live if (s := docs[i].score) is not None]
            scores = given if len(given) == len(live) else [float(len(live) - r) for r in range(len(live))]
        pruner = self._get_pruner()
        for i, vector in zip(
            live, seed_vectors(self._embedder, self.embeddings, [docs[i] for i in live], chunks), strict=True
        ):
            if vector:
                notes.setdefault(i, []).append(vector)
        run = prune_candidates(
            question, chunks, settings=settings, reranker=reranker, pruner=pruner, scores=scores, assess=False
        )
        for i, v in zip(live, run.verdicts, strict=True):
            verdicts[i] = Verdict(
                index=i,
                kept=v.kept,
                stage="prune",
                grade=v.grade,
                reason=v.reason,
                score=v.score if reranker is not None else docs[i].score,
                rank=v.rank,
            )
        return run.strategy, run.outcome

    def _cut(
        self,
        verdicts: dict[int, Verdict],
        limit: int | None,
        docs: Sequence[Doc],
        question: str,
        probs: Mapping[int, float] | None = None,
    ) -> None:
        """``top_k``, then the token budget, over the kept documents best first: those ``keep_top_k`` keeps, then by
        the pruner's grade, its probability (``probs``, by document index, where the pruner gives one), the rank.

        The pruner read the whole list; the rank alone would cut a document it graded higher than those ranked above
        it (``top_k=3`` kept fewer answers than a BM25 re-sort of the same list). The best document alone over the
        budget is passed on as an anchored excerpt (the sentences matching the question), never replaced by a worse
        one that fits.
        """
        p = probs or {}
        kept = sorted(
            (v for v in verdicts.values() if v.kept),
            key=lambda v: (
                not (v.rank is not None and v.rank < self.keep_top_k),
                -(v.grade or 0),
                -p.get(v.index, 0.0),
                v.rank if v.rank is not None else 0,
            ),
        )
        if limit is not None:
            for v in kept[limit:]:
                verdicts[v.index] = replace(v, kept=False, stage="top_k", reason=f"rank {v.rank} beyond top_k {limit}")
            kept = kept[:limit]
        if self.max_tokens is not None:
            from admit.backends.tokenizers import resolve_tokenizer

            tok = resolve_tokenizer(self.tokenizer)
            used = 0
            for v in kept:
                d = docs[v.index]
                n = tok.count(f"{d.title}\n{d.text}" if d.title else d.text)
                if used + n > self.max_tokens:
                    if used == 0:
                        excerpt = anchored_excerpt(question, d.text, self.max_tokens, tok)
                        if excerpt is not None:
                            used = tok.count(excerpt)
                            why = f"{v.reason}; anchored excerpt: {n} tokens over max_tokens {self.max_tokens}"
                            verdicts[v.index] = replace(v, reason=why, excerpt=excerpt)
                            continue
                    why = f"{n} tokens over max_tokens {self.max_tokens} ({used} used)"
                    verdicts[v.index] = replace(v, kept=False, stage="budget", reason=why)
                    continue
                used += n

    # -- saving ------------------------------------------------------------------------------------------------
    def is_custom(self) -> bool:
        """Whether a pruner, reranker or pruner options beyond the settings would be lost by saving the settings."""
        return self.pruner is not None or not isinstance(self.reranker, str | None) or bool(self.pruner_options)

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain data; instances as ``{"type", "init_parameters"}`` (they must have ``to_dict``)."""
        data: dict[str, Any] = self.settings_dict()
        data["tokenizer"] = self.tokenizer
        data["reranker"] = instance_to_dict(self.reranker, "reranker")
        data["pruner"] = instance_to_dict(self.pruner, "pruner")
        opts = self.pruner_options.items()
        data["pruner_options"] = {k: instance_to_dict(v, f"pruner_options.{k}") for k, v in opts}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AdmitFilter:
        """The filter :meth:`to_dict` saved (settings checked)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"An AdmitFilter is loaded from a mapping, got {type(data).__name__}.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"Unknown AdmitFilter setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        values = dict(data)
        for key in ("reranker", "pruner"):
            values[key] = instance_from_dict(values.get(key))
        opts = dict(values.get("pruner_options") or {})
        values["pruner_options"] = {k: instance_from_dict(v) for k, v in opts.items()}
        return cls(**values)


def settings_from(obj: Any, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The adapter settings of ``obj`` (its attributes named in :data:`SETTINGS`)."""
    src = given if given is not None else {k: getattr(obj, k) for k in SETTINGS}
    return {k: src[k] for k in SETTINGS if k in src}


def documents_of(items: Any, kind: type[D], made_as: str, what: str = "documents") -> list[D]:
    """``items`` as a list of ``kind`` (what every adapter's call takes in), or one :class:`ConfigError` line
    naming the argument and how a document is made (``made_as``), for a ``None``, a string, a mapping or an item
    of another type.

    Example:
        >>> documents_of(None, Doc, "Doc(text=...)")
        Traceback (most recent call last):
        admit.errors.ConfigError: The documents must be a list of admit Doc (made as Doc(text=...)), got NoneType.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        got = _named(type(items))
        raise ConfigError(f"The {what} must be a list of {_named(kind)} (made as {made_as}), got {got}.")
    for i, d in enumerate(items):
        if not isinstance(d, kind):
            raise ConfigError(f"{what}[{i}]: got {_named(type(d))}, not {_named(kind)}: make each one as {made_as}.")
    return list(items)


def _named(kind: type) -> str:
    """A type as a message names it: ``dict``, ``haystack Document`` (the package it comes from)."""
    top = kind.__module__.partition(".")[0]
    return kind.__name__ if top == "builtins" else f"{top} {kind.__name__}"


def as_score(v: Any) -> float | None:
    """A retriever's score as a finite float (``numpy.float32`` included), or ``None``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


# -- helpers -----------------------------------------------------------------------------------------------------
def _prune_settings(values: Mapping[str, Any]) -> PruneSettings:
    try:
        return PruneSettings(
            strategy=values["strategy"],
            threshold=values["threshold"],
            keep_top_k=values["keep_top_k"],
            on_error=values["on_error"],
            params=values["params"],
        )
    except ConfigError as exc:
        raise ConfigError(f"Invalid admit setting: {exc}") from None


def _check_values(values: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the first bad setting."""
    if values.get("pruner") is None and values.get("strategy") not in strategy_names():
        known = ", ".join(strategy_names())
        raise ConfigError(f"Unknown pruning strategy {values.get('strategy')!r}; known: {known}.")
    _prune_settings(values)
    for key in ("top_k", "max_tokens", "max_doc_chars"):
        v = values.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ConfigError(f"`{key}` must be a positive integer or None, got {v!r}.")
    if not isinstance(values.get("drop_duplicates"), bool):
        raise ConfigError(f"`drop_duplicates` must be true or false, got {values.get('drop_duplicates')!r}.")
    if values.get("embeddings") not in ("auto", "reuse", "ignore"):
        raise ConfigError(f"`embeddings` must be 'auto', 'reuse' or 'ignore', got {values.get('embeddings')!r}.")
    rr = values.get("reranker")
    if isinstance(rr, str):
        RERANKERS.get(rr)  # the catalogue's ConfigError, listing the known ones
    elif rr is not None and not callable(getattr(rr, "score", None)):
        raise InvalidType(
            f"`reranker` must be a reranker's name (one of {', '.join(RERANKERS.names())}) or an instance with a "
            f"score(question, chunks) method, got {type(rr).__name__}."
        )
    pruner = values.get("pruner")
    if pruner is not None and not callable(getattr(pruner, "prune", None)):
        raise InvalidType(
            f"`pruner` must be a pruner instance (with a prune(question, candidates, settings) method), got "
            f"{type(pruner).__name__}; name a built-in or plug-in strategy with strategy=... instead."
        )
    if not isinstance(values.get("tokenizer", "gpt-4o"), str):
        raise ConfigError(f"`tokenizer` must be a model or encoding name, got {values.get('tokenizer')!r}.")
    if not isinstance(values.get("pruner_options", {}), Mapping):
        raise ConfigError("`pruner_options` must be a mapping.")


def _differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # values that cannot compare (arrays) count as changed
        return a is not b


def _unique_ids(docs: Sequence[Doc]) -> list[str]:
    ids: list[str] = []
    seen: set[str] = set()
    for i, d in enumerate(docs):
        cid = d.id or f"doc-{i}"
        if cid in seen:
            cid = f"{cid}~{i}"
        seen.add(cid)
        ids.append(cid)
    return ids


def _bounded(docs: Sequence[Doc]) -> tuple[list[Doc], dict[int, list[str]]]:
    """The documents with each title held to :data:`MAX_TITLE_CHARS`, and the note said in a cut one's reason."""
    out = list(docs)
    notes: dict[int, list[str]] = {}
    for i, d in enumerate(docs):
        if len(d.title) > MAX_TITLE_CHARS:
            out[i] = replace(d, title=d.title[:MAX_TITLE_CHARS])
            notes[i] = [f"title cut to {MAX_TITLE_CHARS} of its {len(d.title)} characters"]
    return out, notes


def _drop(i: int, stage: str, reason: str, d: Doc) -> Verdict:
    return Verdict(index=i, kept=False, stage=stage, grade=None, reason=reason, score=d.score, rank=None)


def check_names(names: Iterable[str], known: Iterable[str], *, error: type[ConfigError] = ConfigError) -> None:
    """Refuse a misspelled setting (``treshold=``, ``max_token=``, ``topk=``) with the one message for it.

    Raises:
        ConfigError: :func:`admit.errors.unknown_name`'s message (as ``error``, a subclass).
    """
    allowed = set(known)
    for name in names:
        if name not in allowed:
            raise error(unknown_name("setting", name, allowed))
