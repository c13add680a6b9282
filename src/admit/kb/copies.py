"""One copy of each page: exact and near-duplicate chunks across the pages of one ingest, stored once.

A built site often holds the same text twice: a single-page build beside the chunked one (a FAQ as one page
and as 60), an appendix in two guides, a section included in several pages. Stored as it is, a search admits
the same passage several times and the copies crowd out other evidence. :func:`one_copy` decides, over every
page an ingest run chunks, which chunks are copies of another and which copy is kept:

* **Copies**: two chunks whose normalised text (casefolded, punctuation and whitespace runs collapsed:
  :func:`admit._text.normalize`) is the same are exact copies; two of at least :data:`NEAR_MIN_WORDS` words whose
  word 3-shingle sets have a Jaccard of at least :data:`NEAR_JACCARD` and which state the same numbers are
  near copies when they also name the same code names (``cairo_pdf_surface_create`` is not its SVG twin: an
  API reference's near-identical entries); pairs are found by MinHash banding, then confirmed on the shingles.
  Copies are joined transitively. Only chunks of one ``group`` (for the ingest: the same tenant, groups, label,
  authority and version) are ever copies: text two audiences or two versions may read is stored for each.
* **The kept copy** is the one with the truer title: a chunk of the page with fewer chunks (the page that is
  about that section, not the single-page build around it), then the one whose heading path is longer (the
  section is named), then the longer text, then the first id. The others are not stored; their ids go in the
  kept chunk's metadata as ``also_at`` (:data:`ALSO_AT_KEY`).
* **A short section repeated under other headings** (under :data:`NEAR_MIN_WORDS` words: a one-line FAQ answer
  on six pages, an empty package template under eleven packages, "Nothing that affects upgraded systems" under
  four release notes) is stored once too, however short or generic: its meaning is in its headings, so the kept
  copy lists the other copies' section titles (:attr:`Copies.also_under`, the part of each heading path that
  differs from the kept one's, at most :data:`ALSO_UNDER_MAX`), which the ingest adds to its title
  (``... › libupsclient1 (also under: nut-cgi; nut-snmp)``) and its metadata (:data:`ALSO_UNDER_KEY`): a search
  for any of those sections still finds the text, and no copy of it crowds out other evidence. A long copy's
  text carries its own meaning; its other places are only recorded in ``also_at``.

It is a pure function of its input (the same pages give the same answer whatever their order), called by the
ingest (:func:`admit.kb.ingest.ingest_paths`) and by the oracle benchmark (``bench/bench_docsite_oracle.py``).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from admit import _linear
from admit._text import normalize, shingles, signatures

__all__ = [
    "ALSO_AT_KEY",
    "ALSO_UNDER_KEY",
    "ALSO_UNDER_MAX",
    "NEAR_JACCARD",
    "NEAR_MIN_WORDS",
    "Copies",
    "PageChunks",
    "also_under_title",
    "one_copy",
]

ALSO_AT_KEY = "also_at"
"""Chunk metadata key: the ids of the copies of this chunk that were not stored (``["faq#install", ...]``)."""

ALSO_UNDER_KEY = "also_under"
"""Chunk metadata key: the section titles a short chunk's copies that were not stored sat under
(``["nut-cgi", "26. How do you make upsmon reload the config file?"]``)."""

ALSO_UNDER_MAX = 12
"""At most this many other section titles are added to a kept short chunk's title (``... and 3 more``); its
``also_under`` metadata and ``also_at`` name every one."""

NEAR_JACCARD = 0.9
"""The least word 3-shingle Jaccard of two near copies."""

NEAR_MIN_WORDS = 12
"""Chunks shorter than this (in words) are copies only when their normalised text is the same, and the kept one
lists the sections its copies were under (:attr:`Copies.also_under`)."""

_BANDS = 8
"""MinHash bands (of 4 rows each, over the 32 permutations of :func:`admit._text.signatures`)."""

_NUMBER = _linear.simple(r"\d+")
_IDENTIFIER = _linear.compile(r"\b(?:[A-Za-z]\w*_\w*[A-Za-z0-9]|[a-z]+[A-Z]\w*)", name="copies.identifier")
"""A code name, ``cairo_pdf_surface_create`` or ``fieldLabelModifier``: two chunks that name different ones
document different things (an API reference's near-identical entries), never copies of each other."""
_NUMBERING = _linear.compile(r"^\s*(?:[A-Z]|[0-9]+)(?:\.[0-9]+)*\.?\s+", name="copies.numbering")


def _section_name(heading: str) -> str:
    """A heading without its numbering (``1.2. Clone`` -> ``clone``), normalised."""
    m = _NUMBERING.match(heading)
    return normalize(heading[m.end() :] if m is not None else heading)


@dataclass(frozen=True, slots=True)
class PageChunks:
    """One page's chunks, as :func:`one_copy` reads them.

    Args:
        group: What copies must share (the ingest's: tenant, groups, label, authority, version): any hashable value.
        title: The page's title (a chunk with no heading is under it).
        chunks: ``(id, headings, text)`` of each chunk, in page order; ``headings`` is the chunk's heading path
            under the page's title.
    """

    group: Hashable
    title: str
    chunks: Sequence[tuple[str, Sequence[str], str]]


@dataclass(frozen=True, slots=True)
class Copies:
    """What :func:`one_copy` decided."""

    dropped: Mapping[str, str] = field(default_factory=dict)
    """Chunk id -> the id of the kept copy (a chunk not stored)."""
    also_at: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Kept chunk id -> the ids of its copies that are not stored, sorted."""
    also_under: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Kept short chunk id -> the section titles its copies were under, where they differ from its own (each the
    part of the copy's heading path, page title first, after what it shares with the kept chunk's), in the order
    of the copies' ids, each once."""

    def of_page(self, ids: Sequence[str]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
        """A page's share of the decision: its dropped chunk ids, and ``also_at`` of its kept chunks."""
        drop = tuple(i for i in ids if i in self.dropped)
        kept = {i: self.also_at[i] for i in ids if i in self.also_at}
        return drop, kept

    def under_of_page(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """``also_under`` of a page's kept chunks."""
        return {i: self.also_under[i] for i in ids if i in self.also_under}

    def digest(self, ids: Sequence[str]) -> str:
        """A short digest of a page's share of the decision (``""`` when it has none): part of the page's
        ingest key, so a page whose copies changed (or whose copies' headings did) is written again."""
        drop, kept = self.of_page(ids)
        if not drop and not kept:
            return ""
        under = sorted(self.under_of_page(ids).items())
        text = repr((drop, sorted(kept.items()), under) if under else (drop, sorted(kept.items())))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


class _Union:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _join_near(
    longs: Sequence[int], norms: Sequence[str], texts: Sequence[str], groups: Sequence[Hashable], union: _Union
) -> None:
    """Join near copies among ``longs`` (one representative per exact class): a banded signature bucket, then
    the shingles' Jaccard at :data:`NEAR_JACCARD` or more, with the same numbers and the same code names."""
    sigs = signatures([norms[i] for i in longs])
    rows = sigs.shape[1] // _BANDS
    buckets: dict[tuple[int, Hashable, bytes], list[int]] = defaultdict(list)
    for k, i in enumerate(longs):
        for b in range(_BANDS):
            buckets[(b, groups[i], sigs[k, b * rows : (b + 1) * rows].tobytes())].append(i)
    sh: dict[int, np.ndarray] = {}
    nums: dict[int, tuple[str, ...]] = {}
    names: dict[int, frozenset[str]] = {}
    tried: set[tuple[int, int]] = set()
    for members in buckets.values():
        if len(members) < 2:
            continue
        for x_pos, x in enumerate(members):
            for y in members[x_pos + 1 :]:
                pair = (min(x, y), max(x, y))
                if pair in tried or union.find(x) == union.find(y):
                    continue
                tried.add(pair)
                for z in pair:
                    if z not in sh:
                        sh[z] = shingles(norms[z])
                        nums[z] = tuple(sorted(_NUMBER.findall(norms[z])))
                        names[z] = frozenset(m.group(0) for m in _IDENTIFIER.finditer(texts[z]))
                if nums[x] != nums[y]:  # a port, a limit, a version: a fact, never a copy's noise
                    continue
                if names[x] != names[y]:  # cairo_pdf_surface_create_for_stream is not its SVG twin
                    continue
                a, b2 = sh[x], sh[y]
                inter = len(np.intersect1d(a, b2, assume_unique=True))
                union_size = len(a) + len(b2) - inter
                if union_size and inter / union_size >= NEAR_JACCARD:
                    union.join(x, y)


def one_copy(pages: Sequence[PageChunks]) -> Copies:
    """Which chunks of ``pages`` are copies of another, and which copy of each is kept (module docstring).

    Example:
        >>> a = PageChunks("t", "Guide", [("guide#appendix", ("A. Appendix",), "Copy me once.")])
        >>> b = PageChunks("t", "Appendix", [("faq#appendix", (), "Copy me once!")])
        >>> one_copy([b, a]).dropped
        {'faq#appendix': 'guide#appendix'}
    """
    ids: list[str] = []
    texts: list[str] = []
    depth: list[int] = []
    page_size: list[int] = []
    groups: list[Hashable] = []
    paths: list[tuple[str, ...]] = []
    for page in pages:
        for cid, headings, text in page.chunks:
            paths.append((page.title, *headings))
            ids.append(cid)
            texts.append(text)
            depth.append(len(headings))
            page_size.append(len(page.chunks))
            groups.append(page.group)
    n = len(ids)
    if n < 2:
        return Copies()
    union = _Union(n)
    norms = [normalize(t) for t in texts]
    long = [norm.count(" ") + 1 >= NEAR_MIN_WORDS for norm in norms]
    exact: dict[tuple[Hashable, str], int] = {}
    for i, (g, norm) in enumerate(zip(groups, norms, strict=True)):
        if not norm:
            continue
        first = exact.setdefault((g, norm), i)
        if first != i:
            union.join(first, i)
    # near copies: one representative per exact class, long enough for shingles
    longs = [i for i in range(n) if long[i] and exact.get((groups[i], norms[i])) == i]
    if len(longs) > 1:
        _join_near(longs, norms, texts, groups, union)
    classes: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        if norms[i]:
            classes[union.find(i)].append(i)
    dropped: dict[str, str] = {}
    also_at: dict[str, tuple[str, ...]] = {}
    also_under: dict[str, tuple[str, ...]] = {}
    for members in classes.values():
        if len(members) < 2:
            continue
        keep = min(members, key=lambda i: (page_size[i], -depth[i], -len(texts[i]), ids[i]))
        others = sorted((i for i in members if i != keep), key=lambda i: ids[i])
        for o in others:
            dropped[ids[o]] = ids[keep]
        also_at[ids[keep]] = tuple(ids[o] for o in others)
        if not long[keep]:
            under = _other_sections(paths[keep], [paths[o] for o in others])
            if under:
                also_under[ids[keep]] = under
    return Copies(dropped=dropped, also_at=also_at, also_under=also_under)


def _other_sections(kept: Sequence[str], others: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The section titles of ``others`` (heading paths, page title first) that name another section than
    ``kept``'s: each the part of its path after what it shares with ``kept``'s, joined with `` › ``; each section
    once (its own page's copy and a single-page build's are one section: the shorter path is shown)."""
    own = _section_name(kept[-1])
    out: dict[str, str] = {}
    for path in others:
        name = _section_name(path[-1])
        if name == own:
            continue  # the same section (a single-page build's copy of it): no other heading to list
        k = 0
        while k < len(path) - 1 and k < len(kept) and normalize(path[k]) == normalize(kept[k]):
            k += 1
        shown = " › ".join(path[k:])
        if name not in out or len(shown) < len(out[name]):  # one section once: its shortest path (its own page's)
            out[name] = shown
    return tuple(out.values())


def also_under_title(title: str, sections: Sequence[str]) -> str:
    """A kept short chunk's title with the sections its copies were under: ``T (also under: A; B)`` (at most
    :data:`ALSO_UNDER_MAX` of them, then ``and N more``); ``title`` itself when there are none.

    Example:
        >>> also_under_title("Packages › nut-cgi", ["nut-snmp", "nut-xml"])
        'Packages › nut-cgi (also under: nut-snmp; nut-xml)'
    """
    if not sections:
        return title
    shown = "; ".join(sections[:ALSO_UNDER_MAX])
    more = len(sections) - ALSO_UNDER_MAX
    return f"{title} (also under: {shown}{f' and {more} more' if more > 0 else ''})"
