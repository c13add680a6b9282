"""Dedupe: exact and near-duplicates, superseded versions, and the per-source cap.

* Exact duplicates share a normalised-text hash.
* Near-duplicates (copied help pages, syndicated text, overlapping adjacent chunks): pairs that share word
  3-shingles are found with an inverted index (exact, fast for a request's few hundred candidates), then
  confirmed by the shingle Jaccard or containment against ``policy.near_duplicate_threshold``; texts too short
  for shingles are compared with ``rapidfuzz``'s token-sort ratio.
* Of a group, the best representative stays: highest authority, then newest, then best rerank rank. The
  others are dropped with ``duplicate_of``.
* Superseded versions: chunks of the same source that carry an older version or date lose to the newest
  (``superseded_by``) unless the class keeps history (``policy.keep_superseded``).
* Per-source cap: at most ``policy.per_source_limit`` passages of one source, best ranks first.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from admit._text import norm_hash, normalize, shingles
from admit.route import Policy
from admit.types import Chunk, Decision, Scored

__all__ = ["dedupe", "similarity", "version_key"]

_NUM = re.compile(r"\d+")


def version_key(chunk: Chunk) -> tuple[tuple[int, ...], float]:
    """Order key of a chunk's version: numeric parts of ``version``, then ``updated_at``."""
    v = tuple(int(x) for x in _NUM.findall(chunk.version or ""))
    ts = chunk.updated_at.timestamp() if isinstance(chunk.updated_at, datetime) else float("-inf")
    return v, ts


def _has_version(chunk: Chunk) -> bool:
    return bool(chunk.version) or chunk.updated_at is not None


def similarity(a: frozenset[int], b: frozenset[int]) -> float:
    """Max of Jaccard and containment of the smaller set in the larger (catches overlapping chunks)."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    if not inter:
        return 0.0
    return max(inter / len(a | b), inter / min(len(a), len(b)))


def _better(x: Scored) -> tuple[float, tuple[tuple[int, ...], float], int]:
    """Sort key, smallest first = best representative."""
    auth = x.chunk.authority if x.chunk.authority is not None else 0.5
    vk = version_key(x.chunk)
    return (-auth, (tuple(-p for p in vk[0]), -vk[1]), x.rank)


def _candidate_pairs(sh: list[frozenset[int]], threshold: float) -> set[tuple[int, int]]:
    """Pairs that share enough shingles to possibly pass ``threshold`` (exact inverted-index blocking)."""
    postings: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(sh):
        for h in s:
            postings[h].append(i)
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for ids in postings.values():
        if len(ids) < 2 or len(ids) > 64:
            # a shingle shared by very many chunks is boilerplate; it cannot decide a pair alone
            continue
        for a_i in range(len(ids)):
            for b_i in range(a_i + 1, len(ids)):
                counts[(ids[a_i], ids[b_i])] += 1
    out: set[tuple[int, int]] = set()
    for (i, j), c in counts.items():
        smaller = min(len(sh[i]), len(sh[j])) or 1
        if c / smaller >= threshold * 0.9:
            out.add((i, j))
    return out


def dedupe(ranked: Sequence[Scored], policy: Policy) -> tuple[list[Scored], list[Decision]]:
    """Remove duplicates, superseded versions and over-cap passages. Input and output are best-first."""
    items = list(ranked)
    dropped: dict[int, Decision] = {}

    # 1. exact duplicates by normalised hash
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

    # 2. near-duplicates over shingles
    sh = [shingles(s.chunk.text) for s in items]
    thr = policy.near_duplicate_threshold
    pairs = sorted(_candidate_pairs(sh, thr))
    parent = list(range(len(items)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    short = [i for i, s in enumerate(sh) if len(s) < 10]
    for a_i, i in enumerate(short):
        for j in short[a_i + 1 :]:
            pairs.append((i, j))
    pairs = sorted(set(pairs))
    sims: dict[tuple[int, int], float] = {}
    for i, j in pairs:
        if i in dropped or j in dropped:
            continue
        sim = _short_ratio(items[i], items[j]) if len(sh[i]) < 10 and len(sh[j]) < 10 else similarity(sh[i], sh[j])
        if sim >= thr:
            sims[(i, j)] = sim
            parent[find(j)] = find(i)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(items)):
        if i not in dropped:
            groups[find(i)].append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        # history questions keep versions of one source side by side; they are handled below
        best = min(members, key=lambda i: _better(items[i]))
        for i in members:
            if i == best:
                continue
            same_src_versions = (
                items[i].chunk.source_id == items[best].chunk.source_id
                and _has_version(items[i].chunk)
                and version_key(items[i].chunk) != version_key(items[best].chunk)
            )
            if same_src_versions:
                continue  # decided by the superseded rule
            sim = sims.get((min(i, best), max(i, best)), similarity(sh[i], sh[best]))
            dropped[i] = _dup(items[i], items[best], f"near duplicate (similarity {sim:.2f})")

    # 3. superseded versions within a source
    if not policy.keep_superseded:
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
                # the newest chunk most like this one (same section, else most similar text)
                winner = max(
                    current,
                    key=lambda j: (items[j].chunk.title == items[i].chunk.title, similarity(sh[i], sh[j]), -j),
                )
                old = items[i].chunk
                dropped[i] = Decision(
                    chunk_id=old.id,
                    state="dropped",
                    stage="dedupe",
                    reason="superseded",
                    score=items[i].score,
                    related_id=items[winner].chunk.id,
                    detail=f"superseded_by {items[winner].chunk.id} (version {old.version or old.updated_at} "
                    f"< {items[winner].chunk.version or items[winner].chunk.updated_at})",
                )

    # 4. per-source cap, best ranks first
    per_source: dict[str, int] = defaultdict(int)
    kept: list[Scored] = []
    for i, s in enumerate(items):
        if i in dropped:
            continue
        if per_source[s.chunk.source_id] >= policy.per_source_limit:
            dropped[i] = Decision(
                chunk_id=s.chunk.id,
                state="dropped",
                stage="dedupe",
                reason="source_cap",
                score=s.score,
                detail=f"source {s.chunk.source_id} already has {policy.per_source_limit} passages",
            )
            continue
        per_source[s.chunk.source_id] += 1
        kept.append(s)
    return kept, [dropped[i] for i in sorted(dropped)]


def _short_ratio(a: Scored, b: Scored) -> float:
    from rapidfuzz import fuzz

    return float(fuzz.token_sort_ratio(normalize(a.chunk.text), normalize(b.chunk.text))) / 100.0


def _dup(item: Scored, best: Scored, why: str) -> Decision:
    return Decision(
        chunk_id=item.chunk.id,
        state="dropped",
        stage="dedupe",
        reason="duplicate",
        score=item.score,
        related_id=best.chunk.id,
        detail=f"duplicate_of {best.chunk.id} ({why})",
    )
