"""Dedupe: exact and near-duplicates, superseded versions, and the per-source cap.

* Exact duplicates share a normalised-text hash.
* Near-duplicates (copied help pages, syndicated text, overlapping adjacent chunks): pairs that share word
  3-shingles are found with MinHash LSH (plus every pair of chunks of one source), then confirmed by the
  shingle Jaccard or containment against ``policy.near_duplicate_threshold``; texts too short for shingles
  are compared with ``rapidfuzz``'s token-sort ratio. Two texts whose numbers differ are never duplicates
  (a port, a limit or a version number is a fact), unless one chunk contains the other.
* Representatives are taken best first (highest authority, then newest, then best rerank rank); a chunk
  that duplicates a kept representative is dropped with ``duplicate_of``.
* Superseded versions: chunks of the same source that carry an older version or date lose to the newest
  (``superseded_by``) unless the class keeps history (``policy.keep_superseded``).
* Per-source cap (:func:`source_cap`): at most ``policy.per_source_limit`` passages of one source, best grades
  first (then the pruner's probability, then best ranks). The pipeline caps *after* pruning, so a useful chunk
  is never capped away while a weaker one of the same source survives; :func:`dedupe` caps by rank when no
  pruner runs after it. For a
  question of several facets (a comparison's sides, a multi-part question's parts) each facet first keeps
  its best section, over the cap, so a comparison never loses a side to a page's intro.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from admit import _linear
from admit._text import content_words, norm_hash, normalize, overlap, shingle_count, shingles, signatures
from admit.pack import covers, split_facets
from admit.policy import Policy
from admit.types import Chunk, Decision, Scored

__all__ = [
    "UNCAPPED_MOST_PROBABLE",
    "UNCAPPED_P",
    "dedupe",
    "facet_keepers",
    "most_probable",
    "similarity",
    "source_cap",
    "version_key",
]

_NUM = _linear.simple(r"\d+")


def version_key(chunk: Chunk) -> tuple[tuple[int, ...], float]:
    """Order key of a chunk's version: numeric parts of ``version``, then ``updated_at``."""
    v = tuple(int(x) for x in _NUM.findall(chunk.version or ""))
    ts = chunk.updated_at.timestamp() if isinstance(chunk.updated_at, datetime) else float("-inf")
    return v, ts


def _has_version(chunk: Chunk) -> bool:
    return bool(chunk.version) or chunk.updated_at is not None


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Max of Jaccard and containment of two shingle sets (see :func:`admit._text.overlap`)."""
    return overlap(a, b)


def _better(x: Scored) -> tuple[float, tuple[tuple[int, ...], float], int]:
    """Sort key, smallest first = best representative."""
    auth = x.chunk.authority if x.chunk.authority is not None else 0.5
    vk = version_key(x.chunk)
    return (-auth, (tuple(-p for p in vk[0]), -vk[1]), x.rank)


def _candidate_pairs(items: Sequence[Scored], sizes: Sequence[int]) -> set[tuple[int, int]]:
    """Pairs worth an exact check: MinHash LSH (8 bands x 4 rows, ~60% Jaccard) plus same-source pairs."""
    sig = signatures([s.chunk.text for s in items])
    out: set[tuple[int, int]] = set()
    live = np.flatnonzero(np.asarray(sizes, dtype=np.int64) > 0)
    for band in range(8):
        # each live item's band as one 32-byte key; the items of a key that more than one has, in index order
        keys = np.ascontiguousarray(sig[live, band * 4 : band * 4 + 4]).view(np.dtype((np.void, 32))).ravel()
        _, group, counts = np.unique(keys, return_inverse=True, return_counts=True)
        for g in np.flatnonzero(counts > 1):
            ids = [int(i) for i in live[group.ravel() == g]]
            out.update((ids[a], ids[b]) for a in range(len(ids)) for b in range(a + 1, len(ids)))
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(items):
        by_source[s.chunk.source_id].append(i)
    for ids in by_source.values():  # adjacent, overlapping chunks of one document
        out.update((ids[a], ids[b]) for a in range(len(ids)) for b in range(a + 1, len(ids)))
    return out


def dedupe(ranked: Sequence[Scored], policy: Policy, *, cap: bool = True) -> tuple[list[Scored], list[Decision]]:
    """Remove duplicates, superseded versions and (``cap``) over-cap passages. Input and output are best-first.

    The steps, each its own function over the same ranked list and the decisions so far: exact duplicates
    (:func:`_exact_duplicates`), near duplicates (:func:`_near_duplicates`), superseded versions
    (:func:`_superseded`), then the per-source cap (the pipeline caps after pruning instead: ``cap=False``).
    """
    items = list(ranked)
    dropped: dict[int, Decision] = {}
    _exact_duplicates(items, dropped)
    sh = _Shingles(items)  # shingle sets are built only for the pairs that get an exact check
    _near_duplicates(items, dropped, sh, policy.near_duplicate_threshold)
    if not policy.keep_superseded:
        _superseded(items, dropped, sh)
    kept = [s for i, s in enumerate(items) if i not in dropped]
    if cap:
        kept, capped = source_cap(kept, policy)
        at = {s.chunk.id: i for i, s in enumerate(items)}
        dropped.update((at[d.chunk_id], d) for d in capped)
    return kept, [dropped[i] for i in sorted(dropped)]


def _exact_duplicates(items: Sequence[Scored], dropped: dict[int, Decision]) -> None:
    """Equal texts (after normalisation): the best of each group stays."""
    by_hash: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(items):
        by_hash[norm_hash(f"{s.chunk.text}")].append(i)
    for group in by_hash.values():
        if len(group) < 2:
            continue
        best = min(group, key=lambda i: _better(items[i]))
        for i in group:
            if i != best:
                dropped[i] = _dup(items[i], items[best], "exact duplicate")


def _near_duplicates(items: Sequence[Scored], dropped: dict[int, Decision], sh: _Shingles, thr: float) -> None:
    """Texts at least ``thr`` alike (shingles; short texts by ratio): the best representative of each stays."""
    sims = _similar_pairs(items, dropped, sh, thr)
    # best representatives first; each later chunk that duplicates a kept representative is dropped
    partners: dict[int, set[int]] = defaultdict(set)
    for a, b in sims:
        partners[a].add(b)
        partners[b].add(a)
    reps: list[int] = []
    for i in sorted((i for i in range(len(items)) if i not in dropped), key=lambda i: _better(items[i])):
        alike = partners.get(i)  # the first representative it is alike to (most chunks are alike to none)
        rep = next((r for r in reps if r in alike), None) if alike else None
        if rep is None:
            reps.append(i)
        else:
            sim = sims[(min(i, rep), max(i, rep))]
            dropped[i] = _dup(items[i], items[rep], f"near duplicate (similarity {sim:.2f})")


def _similar_pairs(
    items: Sequence[Scored], dropped: Mapping[int, Decision], sh: _Shingles, thr: float
) -> dict[tuple[int, int], float]:
    """The pairs at least ``thr`` alike, with their similarity (their sizes and signatures may come from the
    features stored at ingest, :mod:`admit.features`)."""
    sizes = [shingle_count(s.chunk.text) for s in items]
    short = [i for i, n in enumerate(sizes) if n < 10]
    pairs = sorted(_candidate_pairs(items, sizes) | {(i, j) for a, i in enumerate(short) for j in short[a + 1 :]})
    nums = _Numbers(items)
    short_ids = set(short)
    sims: dict[tuple[int, int], float] = {}
    for i, j in pairs:
        if i in dropped or j in dropped or _versions_of_one_source(items[i].chunk, items[j].chunk):
            continue  # versions of one source: the superseded rule decides (history keeps both)
        small, large = (i, j) if sizes[i] <= sizes[j] else (j, i)
        same_size = sizes[small] >= 0.8 * sizes[large]
        if (nums[small] != nums[large]) if same_size else not nums[small] <= nums[large]:
            continue  # a changed number (port, version, limit) is a different fact, not a copy
        sim = _short_ratio(items[i], items[j]) if i in short_ids and j in short_ids else similarity(sh[i], sh[j])
        if sim >= thr:
            sims[(i, j)] = sim
    return sims


def _versions_of_one_source(a: Chunk, b: Chunk) -> bool:
    return a.source_id == b.source_id and _has_version(a) and _has_version(b) and version_key(a) != version_key(b)


def _superseded(items: Sequence[Scored], dropped: dict[int, Decision], sh: _Shingles) -> None:
    """Older versions within a source: each loses to the newest chunk most like it (same section, else most
    similar text)."""
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(items):
        if i not in dropped and _has_version(s.chunk):
            by_source[s.chunk.source_id].append(i)
    for members in by_source.values():
        newest = max(version_key(items[i].chunk) for i in members)
        current = [i for i in members if version_key(items[i].chunk) == newest]
        for i in members:
            if version_key(items[i].chunk) == newest:
                continue
            winner = max(
                current,
                key=lambda j: (items[j].chunk.title == items[i].chunk.title, similarity(sh[i], sh[j]), -j),
            )
            old, new = items[i].chunk, items[winner].chunk
            dropped[i] = Decision.drop(
                items[i],
                stage="dedupe",
                reason="superseded",
                related_id=new.id,
                detail=f"superseded_by {new.id} (version {old.version or old.updated_at} "
                f"< {new.version or new.updated_at})",
            )


def source_cap(
    items: Sequence[Scored],
    policy: Policy,
    grades: Mapping[str, int] | None = None,
    *,
    question: str = "",
    probs: Mapping[str, float] | None = None,
) -> tuple[list[Scored], list[Decision]]:
    """At most ``policy.per_source_limit`` of ``items`` per source: the best graded stay (then, among equal grades,
    the pruner's most probable where it gives ``probs``, then the best ranked).

    Grades are coarse: on a long page three sections of one grade compete for two slots, and the retriever's rank
    (which the pruner overrode when it graded them) is the worst tie-break; the pruner's probability is its own
    finer order (``setwise``: the answering section at p 0.10 beside its page's introduction at 0.05).

    With a ``question`` of several facets (:func:`admit.pack.split_facets`), each facet's best section
    (:func:`facet_keepers`) stays first, even over the cap; so do the pruner's :data:`UNCAPPED_MOST_PROBABLE` most
    probable chunks (:func:`most_probable`); the other slots go by grade, then rank.
    Returns the kept items in input order and a ``source_cap`` drop for each other one, in input order.
    """
    g = grades or {}
    pr = probs or {}
    protected = facet_keepers(items, question, g) if question else set()
    protected |= most_probable(items, pr)
    order = sorted(
        range(len(items)),
        key=lambda i: (
            i not in protected,
            -g.get(items[i].chunk.id, 0),
            -pr.get(items[i].chunk.id, 0.0),
            items[i].rank,
            i,
        ),
    )
    per_source: dict[str, int] = defaultdict(int)
    over: set[int] = set()
    for i in order:
        src = items[i].chunk.source_id
        if per_source[src] >= policy.per_source_limit and i not in protected:
            over.add(i)
        else:
            per_source[src] += 1
    drops = [
        Decision.drop(
            s,
            stage="dedupe",
            reason="source_cap",
            grade=g.get(s.chunk.id),
            detail=f"source {s.chunk.source_id} already has {policy.per_source_limit} passages"
            + (" graded at least as high" if grades else ""),
        )
        for i, s in enumerate(items)
        if i in over
    ]
    return [s for i, s in enumerate(items) if i not in over], drops


#: The pruner's most probable chunks of a list that the per-source cap never drops when their own probability reads
#: as answering (at least :data:`UNCAPPED_P`): where the three best chunks are one page's (a Texinfo chapter, a man
#: page), the page is the answer, not a flood of it. Measured on six documentation sites (``bench/bench_docsites.py``):
#: the answer's option entry at the list's third probability (p 0.16, beside its page's p 0.5 and 0.22) was capped.
UNCAPPED_MOST_PROBABLE = 3
#: The least probability of a chunk :data:`UNCAPPED_MOST_PROBABLE` spares: the one ``setwise`` reads as answering
#: (grade 4 by ``p`` alone, ``admit.prune.setwise_model.coverage.PROB_GRADE_CUTS``).
UNCAPPED_P = 0.15


def most_probable(items: Sequence[Scored], probs: Mapping[str, float], n: int = UNCAPPED_MOST_PROBABLE) -> set[int]:
    """The indexes of the ``n`` items the pruner gives the highest probability (ties: the earlier), among those whose
    probability is at least :data:`UNCAPPED_P`; none without ``probs``."""
    scored = [i for i, s in enumerate(items) if probs.get(s.chunk.id, 0.0) >= UNCAPPED_P]
    return set(sorted(scored, key=lambda i: (-probs[items[i].chunk.id], i))[:n])


def facet_keepers(items: Sequence[Scored], question: str, grades: Mapping[str, int]) -> set[int]:
    """The index of each facet's best section: one per facet of a question of two or more facets.

    A section covers a facet when its title and text hold half the facet's words; the best is the one
    whose *title* names most of the facet (the S3 section for "S3", not the page intro that mentions it),
    then the best graded, then the best ranked. A question of one facet keeps nothing over the cap.
    """
    facets = split_facets(question)
    if len(facets) < 2:
        return set()
    titles = [content_words(s.chunk.title) for s in items]
    words = [t | content_words(s.chunk.text) for t, s in zip(titles, items, strict=True)]
    keep: set[int] = set()
    for facet in facets:
        covering = [i for i in range(len(items)) if covers(words[i], facet)]
        if covering:
            keep.add(
                min(
                    covering,
                    key=lambda i: (-len(titles[i] & facet), -grades.get(items[i].chunk.id, 0), items[i].rank, i),
                )
            )
    return keep


class _Shingles:
    """The shingle sets of the items' texts, built on first use."""

    def __init__(self, items: Sequence[Scored]) -> None:
        self._items = items

    def __getitem__(self, i: int) -> np.ndarray:
        return shingles(self._items[i].chunk.text)


class _Numbers:
    """The numbers of each item's text, found on first use (most items are never compared)."""

    def __init__(self, items: Sequence[Scored]) -> None:
        self._items = items
        self._found: dict[int, frozenset[str]] = {}

    def __getitem__(self, i: int) -> frozenset[str]:
        if i not in self._found:
            self._found[i] = frozenset(_NUM.findall(self._items[i].chunk.text))
        return self._found[i]


def _short_ratio(a: Scored, b: Scored) -> float:
    from rapidfuzz import fuzz

    return float(fuzz.token_sort_ratio(normalize(a.chunk.text), normalize(b.chunk.text))) / 100.0


def _dup(item: Scored, best: Scored, why: str) -> Decision:
    return Decision.drop(
        item,
        stage="dedupe",
        reason="duplicate",
        related_id=best.chunk.id,
        detail=f"duplicate_of {best.chunk.id} ({why})",
    )
