"""Robust parsing of LLM grader output: JSON inside prose or code fences, truncated JSON, numbers as strings,
unknown / duplicated / missing ids, out-of-range grades. Nothing usable raises
:class:`~admit.errors.GraderOutputError` so :func:`~admit.prune.base.run_pruner` applies ``on_error``.

A hostile or broken grader cannot make parsing slow: a reply longer than :data:`MAX_REPLY_CHARS` is refused
outright, and the search for the JSON value does linear work in the reply's length (at most 32 start offsets,
one bounded repair scan each, a few decode attempts per repair, a total scan budget).
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from admit import _linear
from admit.errors import GraderOutputError

__all__ = [
    "MAX_REPLY_CHARS",
    "GradeParse",
    "SelectParse",
    "extract_json",
    "normalize_id",
    "parse_anchors",
    "parse_grades",
    "parse_selection",
    "to_grade",
]

# grader replies are outside text: every pattern here is RE2 (linear time, admit._linear)
_ID_RE = _linear.compile(
    r"^\s*[\[(<#]?\s*(?:chunk\s*(?:id)?\s*[:#-]?\s*)?c?\s*[-_#]?\s*(\d{1,6})\s*[\])>]?\s*$", re.I, name="grader.id"
)
_NUM_RE = _linear.compile(r"^\s*(?:grade|score|level)?\s*[:=]?\s*(-?\d+(?:\.\d+)?)", name="grader.number")
_PAIR_RE = _linear.compile(
    r"[\"'\[]?\b[Cc](\d{1,6})\b[\"'\]]?\s*(?:[:=]|->|=>|\bis\b)\s*[\"']?(-?\d+(?:\.\d+)?)", name="grader.pair"
)
_WORDS = {
    "essential": 5,
    "needed": 4,
    "bridge": 4,
    "needed_with_other": 4,
    "useful": 3,
    "context": 3,
    "tangential": 2,
    "unrelated": 1,
    "irrelevant": 1,
    "off topic": 1,
}
MAX_REPLY_CHARS = 65_536
"""The longest grader reply parsed (grades for hundreds of chunks fit in a few kB); longer is an error."""
_MAX_STARTS = 32
_MAX_TRIES = 8

_LIST_KEYS = ("grades", "chunks", "results", "scores", "ratings", "items", "data", "output", "answer")
_ID_KEYS = ("id", "chunk", "chunk_id", "cid", "chunkid", "name")
_GRADE_KEYS = ("grade", "score", "relevance", "rating", "level", "value")
_SELECT_KEYS = ("keep", "kept", "add", "added", "selected", "select", "ids", "chunks", "relevant", "needed")


@dataclass(slots=True)
class GradeParse:
    """Grades by short id, the ids still missing, and what was repaired or ignored."""

    grades: dict[str, int]
    missing: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SelectParse:
    """Selected short ids in the order given, and what was repaired or ignored."""

    selected: list[str]
    notes: list[str] = field(default_factory=list)


def normalize_id(raw: Any, known: set[str]) -> str | None:
    """Map ``"C3"``, ``"c3"``, ``3``, ``"[C3]"``, ``"chunk 3"`` to ``"C3"`` when it is a known id, else ``None``."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        cand = f"C{raw}"
        return cand if cand in known else None
    if not isinstance(raw, str):
        return None
    if raw in known:
        return raw
    m = _ID_RE.match(raw)
    if not m:
        return None
    cand = f"C{int(m.group(1))}"
    return cand if cand in known else None


def to_grade(raw: Any) -> float | None:
    """Read a grade: a number, a numeric string (``"4"``, ``"4/5"``, ``"grade: 4"``), a rubric word, or a dict
    with a ``grade``/``score`` key. Returns ``None`` when it is not a grade."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int | float):
        return float(raw) if math.isfinite(raw) else None
    if isinstance(raw, dict):
        for k in _GRADE_KEYS:
            if k in raw:
                return to_grade(raw[k])
        return None
    if isinstance(raw, list | tuple) and len(raw) == 1:
        return to_grade(raw[0])
    if isinstance(raw, str):
        m = _NUM_RE.match(raw)
        if m:
            v = float(m.group(1))
            return v if math.isfinite(v) else None
        low = raw.strip().lower()
        for word, g in _WORDS.items():
            if low.startswith(word):
                return float(g)
    return None


def extract_json(text: str) -> tuple[Any, list[str]]:
    """Find the JSON value in ``text`` (prose and code fences around it are ignored; truncated JSON is
    repaired by dropping the incomplete tail). Returns ``(value, notes)``; value is ``None`` when none.

    Raises:
        GraderOutputError: ``text`` is longer than :data:`MAX_REPLY_CHARS`.
    """
    notes: list[str] = []
    if len(text) > MAX_REPLY_CHARS:
        raise GraderOutputError(
            f"grader reply of {len(text)} characters is over the {MAX_REPLY_CHARS}-character cap; not parsed"
        )
    s = text.strip()
    if not s:
        return None, ["empty output"]
    dec = json.JSONDecoder()
    budget = 4 * len(s)  # characters the repair scans may read in all: linear work whatever the reply
    starts = [m.start() for m, _ in zip(_OPENERS.finditer(s), range(_MAX_STARTS), strict=False)]
    for i in starts:
        try:
            value, end = dec.raw_decode(s, i)
        except (json.JSONDecodeError, RecursionError):
            if budget <= 0:
                continue
            value, scanned = _repair(s, i, budget)
            budget -= scanned
            if value:  # an empty container is what any stray bracket repairs to: not an answer
                notes.append("truncated JSON repaired (incomplete tail dropped)")
                return value, notes
            continue
        if isinstance(value, dict | list):
            if i > 0 or s[end:].strip():
                notes.append("text around the JSON ignored")
            return value, notes
    return None, notes


_OPENERS = _linear.simple(r"[{\[]")


def _repair(s: str, start: int, budget: int) -> tuple[Any, int]:
    """Close the JSON document truncated at ``s[start:]`` at the last point where it was complete.

    One pass of at most ``budget`` characters; the open-bracket stack is a linked list so remembering it at a
    cut point costs nothing, and only the last few cut points are tried. Returns ``(value, characters read)``.
    """
    stack: tuple[str, Any] | None = None  # (closer, rest): a persistent stack
    cuts: deque[tuple[int, tuple[str, Any] | None]] = deque(maxlen=_MAX_TRIES)
    in_str = esc = False
    end = min(len(s), start + budget)
    i = start
    for i in range(start, end):
        ch = s[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{" or ch == "[":
            stack = ("}" if ch == "{" else "]", stack)
            cuts.append((i + 1, stack))
        elif ch == "}" or ch == "]":
            if stack is None:
                break
            stack = stack[1]
            cuts.append((i + 1, stack))
            if stack is None:
                break
        elif ch == ",":
            cuts.append((i, stack))
    else:
        if not in_str and stack is not None and end == len(s):
            cuts.append((len(s), stack))
    read = i - start + 1
    for pos, st in reversed(cuts):
        closers: list[str] = []
        while st is not None:
            closers.append(st[0])
            st = st[1]
        candidate = s[start:pos].rstrip().rstrip(",") + "".join(closers)
        try:
            return json.loads(candidate), read
        except (json.JSONDecodeError, RecursionError):
            continue
    return None, read


def _pairs(obj: Any, depth: int = 0) -> Iterator[tuple[Any, Any]]:
    if depth > 6:
        return
    if isinstance(obj, dict):
        for k in _LIST_KEYS:
            if k in obj and isinstance(obj[k], dict | list):
                yield from _pairs(obj[k], depth + 1)
                return
        idk = next((k for k in _ID_KEYS if k in obj), None)
        gk = next((k for k in _GRADE_KEYS if k in obj), None)
        if idk is not None:
            yield obj[idk], (obj[gk] if gk is not None else None)
            return
        yield from obj.items()
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict):
                yield from _pairs(item, depth + 1)
            elif isinstance(item, list | tuple) and len(item) == 2:
                yield item[0], item[1]
            else:
                yield item, None


def parse_grades(text: str, ids: Sequence[str]) -> GradeParse:
    """Parse a grader's answer into grades 1..5 for the short ``ids`` (``C1..Cn``).

    Accepts ``{"C1": 5, ...}``, ``{"grades": {...}}``, ``{"grades": [{"id": "C1", "grade": 5}]}``,
    ``[["C1", 5], ...]``, and as a last resort ``C1: 5`` pairs in prose. Unknown ids are ignored,
    out-of-range grades clamped, duplicates resolved to the highest grade (recall first), each noted.

    Raises:
        GraderOutputError: Nothing gradable came back.
    """
    known = set(ids)
    value, notes = extract_json(text)
    pairs: list[tuple[Any, Any]] = list(_pairs(value)) if value is not None else []
    if not pairs or value is None:
        found = _PAIR_RE.findall(text)
        if found:
            pairs = [(f"C{a}", b) for a, b in found]
            notes.append("no usable JSON; grades read from 'Cn: grade' pairs in the text")
    grades: dict[str, int] = {}
    unknown: list[str] = []
    bad: list[str] = []
    for raw_id, raw_grade in pairs:
        sid = normalize_id(raw_id, known)
        if sid is None:
            unknown.append(str(raw_id)[:40])
            continue
        g = to_grade(raw_grade)
        if g is None:
            bad.append(f"{sid}={str(raw_grade)[:20]!r}")
            continue
        gi = math.floor(g + 0.5)
        if not 1 <= gi <= 5:
            notes.append(f"out-of-range grade {raw_grade!r} for {sid} clamped")
            gi = min(5, max(1, gi))
        if sid in grades:
            if grades[sid] != gi:
                notes.append(f"duplicate id {sid} (grades {grades[sid]} and {gi}; kept the higher)")
            gi = max(gi, grades[sid])
        grades[sid] = gi
    if unknown:
        notes.append(f"ignored unknown ids: {', '.join(unknown[:8])}" + (" ..." if len(unknown) > 8 else ""))
    if bad:
        notes.append(f"ignored non-numeric grades: {', '.join(bad[:8])}")
    if not grades:
        raise GraderOutputError(f"grader output has no usable grade for ids {_span(ids)}: {_excerpt(text)}")
    missing = [i for i in ids if i not in grades]
    return GradeParse(grades=grades, missing=missing, notes=notes)


def parse_selection(text: str, ids: Sequence[str]) -> SelectParse:
    """Parse a selection (``{"keep": ["C1", "C4"]}``, a bare list, ``{"C1": true, ...}``) into known short ids.

    Raises:
        GraderOutputError: No selection could be read (an empty list is a valid selection).
    """
    known = set(ids)
    value, notes = extract_json(text)
    items: list[Any] | None = None
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        for k in _SELECT_KEYS:
            if isinstance(value.get(k), list):
                items = value[k]
                break
        if items is None:
            lists = [v for v in value.values() if isinstance(v, list)]
            if len(lists) == 1:
                items = lists[0]
            elif value and all(isinstance(v, bool) for v in value.values()):
                items = [k for k, v in value.items() if v]
    if items is None:
        raise GraderOutputError(f"selector output has no list of chunk ids for {_span(ids)}: {_excerpt(text)}")
    selected: list[str] = []
    unknown: list[str] = []
    dups = 0
    for item in items:
        raw = next((item[k] for k in _ID_KEYS if k in item), None) if isinstance(item, dict) else item
        sid = normalize_id(raw, known)
        if sid is None:
            unknown.append(str(raw)[:40])
        elif sid in selected:
            dups += 1
        else:
            selected.append(sid)
    if unknown:
        notes.append(f"ignored unknown ids: {', '.join(unknown[:8])}" + (" ..." if len(unknown) > 8 else ""))
    if dups:
        notes.append(f"ignored {dups} duplicated id(s)")
    return SelectParse(selected=selected, notes=notes)


_LEVEL_RE = _linear.compile(r"([1-5])", name="grader.level")


def parse_anchors(text: str) -> tuple[dict[int, str], list[str]]:
    """Parse anchor passages ``{"level_5": "...", ..., "level_1": "..."}`` into ``{level: text}``.

    Raises:
        GraderOutputError: No anchor passage could be read.
    """
    value, notes = extract_json(text)
    out: dict[int, str] = {}
    entries: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        inner = value.get("anchors", value)
        entries = list(inner.items()) if isinstance(inner, dict) else list(_pairs(inner))
    elif isinstance(value, list):
        entries = [
            (next((it[k] for k in ("level", "grade") if k in it), None), it.get("text") or it.get("passage"))
            for it in value
            if isinstance(it, dict)
        ]
    for key, passage in entries:
        level: int | None = None
        if isinstance(key, int) and not isinstance(key, bool):
            level = key
        elif isinstance(key, str):
            m = _LEVEL_RE.search(key)
            level = int(m.group(1)) if m else _WORDS.get(key.strip().lower())
        if isinstance(passage, dict):
            passage = passage.get("text") or passage.get("passage")
        if level is None or not 1 <= level <= 5 or not isinstance(passage, str) or not passage.strip():
            continue
        out.setdefault(level, passage.strip())
    if not out:
        raise GraderOutputError(f"anchor output has no usable passage: {_excerpt(text)}")
    return out, notes


def _span(ids: Sequence[str]) -> str:
    return f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else (ids[0] if ids else "(none)")


def _excerpt(text: str, n: int = 160) -> str:
    t = " ".join(text.split())
    return repr(t[:n] + ("..." if len(t) > n else ""))
