"""A knowledge base's own answerability thresholds: what ``admit adapt`` fitted on the user's ingested chunks.

The shipped models decide for every product's docs with one pair of thresholds. ``admit adapt``
(:mod:`admit.kb.adapt`) asks the knowledge base pseudo-questions built from its own chunks, answerable ones and
unanswerable ones, through the real search path, and sets each model's thresholds where they separate the two
there. The result is an :class:`Adaptation`, stored in the knowledge base's metadata (:data:`META_KEY`) with its
date, chunk count, figures and a fingerprint of the chunks it was fitted on. A knowledge base reads it when it
searches (every face goes through :meth:`admit.kb.KnowledgeBase.search_request`); the verdict's ``adaptation``
names it; a knowledge base whose chunks changed by more than :data:`STALE_SHARE` since is marked stale and its
adaptation is not used until ``admit adapt`` runs again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from admit.answerability.model import AnswerabilityModel
from admit.answerability.terms import vocabulary_prefixes
from admit.errors import ModelFileError

__all__ = ["DIGEST_KEY", "FINGERPRINT_KEY", "META_KEY", "STALE_SHARE", "Adaptation", "Fingerprint", "digest"]

#: The metadata key the adaptation is stored under, and the key of the fingerprint of the chunks it was fitted on.
META_KEY = "answerability_adaptation"
FINGERPRINT_KEY = "answerability_adaptation_fingerprint"
#: The metadata key of the stored adaptation's :func:`digest`, written after it: a search reads these few bytes, not
#: the adaptation (tens of KB with its vocabulary), to tell whether it changed.
DIGEST_KEY = "answerability_adaptation_digest"
#: Past this share of chunks changed (added, removed or edited) since it was fitted, an adaptation is stale.
STALE_SHARE = 0.2
#: The most chunk keys a fingerprint keeps (a sample of a bigger knowledge base, the same keys every time).
_FINGERPRINT_SIZE = 4000
_VERSION = 1


def digest(raw: str) -> str:
    """The digest of an adaptation's stored form (:data:`DIGEST_KEY`)."""
    return hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A sample of the knowledge base's chunk keys (each chunk's id and text hash): how much of it changed since."""

    keys: frozenset[str]
    modulus: int
    count: int

    @staticmethod
    def _key(chunk_id: str, text_hash: str) -> str:
        return hashlib.sha1(f"{chunk_id}\0{text_hash}".encode()).hexdigest()[:12]

    @classmethod
    def of(cls, chunks: Iterable[tuple[str, str]], modulus: int | None = None) -> Fingerprint:
        """The fingerprint of ``(chunk id, text hash)`` pairs; ``modulus`` keeps one key in that many (default: so
        that at most 4,000 are kept)."""
        keys = [cls._key(i, h) for i, h in chunks]
        m = modulus or max(1, math.ceil(len(keys) / _FINGERPRINT_SIZE))
        return cls(keys=frozenset(k for k in keys if int(k, 16) % m == 0), modulus=m, count=len(keys))

    def changed_share(self, now: Fingerprint) -> float:
        """The share of chunks changed between this fingerprint and ``now`` (taken with the same modulus)."""
        union = self.keys | now.keys
        if not union:
            return 0.0 if self.count == now.count else 1.0
        return len(self.keys ^ now.keys) / len(union)

    def to_json(self) -> str:
        return json.dumps({"modulus": self.modulus, "count": self.count, "keys": sorted(self.keys)})

    @classmethod
    def from_json(cls, text: str) -> Fingerprint:
        d = json.loads(text)
        return cls(keys=frozenset(str(k) for k in d["keys"]), modulus=int(d["modulus"]), count=int(d["count"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class Adaptation:
    """A knowledge base's own thresholds per answerability model, with when and on what they were fitted."""

    thresholds: Mapping[str, tuple[float, float]]
    """Per model name (``setwise``, ``lexical``): its ``threshold`` and ``answered_at``."""
    made: str
    """When it was fitted (ISO 8601, UTC)."""
    chunks: int
    """How many chunks the knowledge base held."""
    figures: Mapping[str, Any] = field(default_factory=dict)
    """What was measured on the pseudo-questions, before and after (counts and shares)."""
    stale: str = ""
    """Why it is no longer used (the knowledge base changed since), or ``""``."""
    similarity_floor: Mapping[str, float] = field(default_factory=dict)
    """Per model name (``setwise``): the best admitted passage's similarity to the question below which the verdict
    is "not answered" on this knowledge base (fitted on its own answerable pseudo-questions and the other products'
    questions; absent: no floor)."""
    vocabulary: frozenset[str] = frozenset()
    """The stems of every word the knowledge base holds (:func:`~admit.answerability.terms.kb_vocabulary`): a
    question with :data:`~admit.answerability.terms.KB_ABSENT_MIN` or more words it holds in no form is "not
    answered" (empty: no such rule; an adaptation made before it)."""
    prune_params: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per pruner strategy (``setwise``): the parameters fitted on this knowledge base's own questions
    (``keep_most``: the fitted cut, :data:`admit.prune.setwise.KEEP_MOST`); a search's pruner reads them unless its
    policy or request sets them (empty: the shipped cut)."""
    pages: frozenset[str] = frozenset()
    """The names of the knowledge base's pages that name one page's subject
    (:func:`~admit.answerability.pages.kb_page_names`): a question naming one, answered from no chunk of that page, is
    "unsure", and "not answered" when no retrieved candidate is from it (empty: no such rule; an adaptation made
    before it)."""
    prefixes: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefixes", vocabulary_prefixes(self.vocabulary))

    @property
    def current(self) -> bool:
        """Whether it is used (not stale)."""
        return not self.stale

    def label(self) -> str:
        """How the verdict names it: ``thresholds adapted to this knowledge base on DATE (N chunks)``."""
        return f"thresholds adapted to this knowledge base on {self.made[:10]} ({self.chunks:,} chunks)"

    def models_over(self, shipped: Mapping[str, AnswerabilityModel]) -> dict[str, AnswerabilityModel]:
        """The shipped models with this adaptation's thresholds where it has them."""
        out = dict(shipped)
        for name, (lo, hi) in self.thresholds.items():
            if name in out:
                out[name] = replace(out[name], threshold=float(lo), answered_at=float(max(lo, hi)))
        return out

    def marked_stale(self, why: str) -> Adaptation:
        """This adaptation, marked stale for ``why``."""
        return replace(self, stale=why)

    def as_dict(self, *, words: bool = False) -> dict[str, Any]:
        """The stored form, as a dict (``admit adapt --json``: the vocabulary's size, not its words, unless
        ``words``)."""
        return {
            "version": _VERSION,
            "made": self.made,
            "chunks": self.chunks,
            "thresholds": {k: list(v) for k, v in self.thresholds.items()},
            "figures": dict(self.figures),
            "stale": self.stale,
            "similarity_floor": dict(self.similarity_floor),
            "vocabulary": sorted(self.vocabulary) if words else len(self.vocabulary),
            "prune_params": {k: dict(v) for k, v in self.prune_params.items()},
            "pages": sorted(self.pages) if words else len(self.pages),
        }

    def to_json(self) -> str:
        """The stored form."""
        return json.dumps(self.as_dict(words=True), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Adaptation:
        """Read the stored form.

        Raises:
            ValueError: Not an adaptation this version reads.
        """
        d = json.loads(text)
        if not isinstance(d, dict) or d.get("version") != _VERSION:
            raise ModelFileError("not an answerability adaptation this version of admit reads")
        th = {str(k): (float(v[0]), float(v[1])) for k, v in dict(d["thresholds"]).items()}
        for name, (lo, hi) in th.items():
            if not (0.0 <= lo <= 1.0 and 0.0 <= hi <= 1.0):
                raise ModelFileError(f"adaptation thresholds of {name!r} must lie in [0, 1]")
        floor = {str(k): float(v) for k, v in dict(d.get("similarity_floor") or {}).items()}
        vocab = d.get("vocabulary")
        pages = d.get("pages")
        prune_params = {
            str(k): {str(p): int(v) for p, v in dict(ps).items()} for k, ps in dict(d.get("prune_params") or {}).items()
        }
        if any(v < 0 for ps in prune_params.values() for v in ps.values()):
            raise ModelFileError("an adaptation's pruner parameters must not be negative")
        if any(not -1.0 <= v <= 1.0 for v in floor.values()):
            raise ModelFileError("an adaptation's similarity floor must lie in [-1, 1]")
        return cls(
            thresholds=th,
            made=str(d["made"]),
            chunks=int(d["chunks"]),
            figures=dict(d.get("figures") or {}),
            stale=str(d.get("stale") or ""),
            similarity_floor=floor,
            vocabulary=frozenset(w for w in vocab if isinstance(w, str)) if isinstance(vocab, list) else frozenset(),
            prune_params=prune_params,
            pages=frozenset(w for w in pages if isinstance(w, str)) if isinstance(pages, list) else frozenset(),
        )
