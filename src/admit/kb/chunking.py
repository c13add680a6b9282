"""Chunker: sections by headings, then paragraphs packed up to ``max_tokens`` cl100k tokens; a paragraph longer
than that is split at sentence boundaries. Ids come from heading slugs, collision-safe.

Tables and lists keep their structure: an over-long table is split between rows, each part repeating the header
row (and its ``|---|`` rule), and an over-long list between items, never inside a row or an item; so a list-all
question finds whole rows with their column names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from admit import _linear
from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.errors import ConfigError
from admit.kb.parse import ParsedDocument

__all__ = ["DEFAULT_MAX_TOKENS", "TextChunk", "chunk_document", "slugify"]

DEFAULT_MAX_TOKENS = 350
# a sentence end, the space after it (group 1), and what may start the next sentence
_SENT = _linear.compile(r"[.!?](\s+)[A-Z0-9\"'(\[`]", name="ingest.sentence_end")
_NON_WORD = _linear.simple(r"[^\w]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class TextChunk:
    """A chunk before embedding."""

    section_path: str
    """The id suffix after ``#``."""
    headings: tuple[str, ...]
    """Section headings (document title excluded)."""
    text: str
    """The passage."""
    ordinal: int
    """Position in the document."""


def slugify(text: str) -> str:
    """``"Upgrade & Rollback (v2)"`` -> ``"upgrade-rollback-v2"``; ``"section"`` when nothing is left."""
    s = _NON_WORD.sub("-", text.lower()).strip("-_")
    return s[:60].rstrip("-") or "section"


def _sentence_pieces(text: str) -> list[str]:
    """``text`` cut after each sentence end that a space and a capital, digit or opening mark follow."""
    out, start = [], 0
    for m in _SENT.finditer(text):
        out.append(text[start : m.start(1)])
        start = m.end(1)
    out.append(text[start:])
    return out


def _is_table(lines: list[str]) -> bool:
    return len(lines) >= 3 and sum(ln.lstrip().startswith("|") for ln in lines) >= len(lines) - 1


def _is_list(lines: list[str]) -> bool:
    starts = sum(ln.lstrip()[:2] in ("- ", "* ", "+ ") or ln.lstrip()[:1].isdigit() for ln in lines)
    return len(lines) >= 3 and starts >= 0.6 * len(lines)


def _split_rows(text: str, tok: Tokenizer, max_tokens: int) -> list[str] | None:
    """An over-long table split between rows (the header repeated) or a list between items; ``None`` otherwise."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    header: list[str] = []
    if _is_table(lines):
        rule = 1 if len(lines) > 1 and set(lines[1].replace("|", "").strip()) <= set("-: ") else -1
        header = lines[: rule + 1] if rule == 1 else lines[:1]
        rows = lines[len(header) :]
    elif _is_list(lines):
        rows = []
        for ln in lines:  # an item's continuation lines stay with it
            if rows and not (ln.lstrip()[:2] in ("- ", "* ", "+ ") or ln.lstrip()[:1].isdigit()):
                rows[-1] += "\n" + ln
            else:
                rows.append(ln)
    else:
        return None
    head = "\n".join(header)
    room = max_tokens - (tok.count(head) + 1 if header else 0)
    out: list[str] = []
    cur: list[str] = []
    for row in rows:
        if cur and tok.count("\n".join([*cur, row])) > room:
            out.append("\n".join([*header, *cur]))
            cur = []
        cur.append(row)
    if cur:
        out.append("\n".join([*header, *cur]))
    return out


def _fit_prefix(run: str, start: int, tok: Tokenizer, max_tokens: int) -> int:
    """Where to end the part of ``run`` (text without a space to cut at) that begins at ``start``, so that it
    counts at most ``max_tokens`` tokens and, where the run is long enough, nearly that many: a few counts of a
    window near the limit, never of the rest of the run (at least one character)."""
    left = len(run) - start
    take = min(left, max_tokens * 4)
    best = 0
    for _ in range(12):
        n = tok.count(run[start : start + take])
        if n <= max_tokens:
            best = max(best, take)
            if take == left or n >= max_tokens * 0.8:
                break
            take = min(left, max(take + 1, int(take * max_tokens * 0.95 / max(n, 1))))
        else:
            take = max(1, min(take - 1, int(take * max_tokens * 0.95 / n)))
    return start + max(best, 1)


def _words(piece: str) -> Iterator[str]:
    """The words of ``piece`` between single spaces (``str.split(" ")``), one at a time."""
    start = 0
    while True:
        end = piece.find(" ", start)
        if end < 0:
            yield piece[start:]
            return
        yield piece[start:end]
        start = end + 1


def _units(piece: str, tok: Tokenizer, max_tokens: int) -> Iterator[tuple[str, int, str]]:
    """``piece`` as ``(text, tokens, separator before it)`` units of at most ``max_tokens`` tokens each: its words,
    and a word too long for one chunk (a run without spaces: a hash, a blob, a page without spaces) cut where
    its prefix reaches the limit (its parts are joined again without a separator when they share a chunk)."""
    for w in _words(piece):
        n = tok.count(" " + w)  # with the space before it: how it counts inside a text
        if n <= max_tokens:
            yield w, n, " "
            continue
        sep, at = " ", 0
        while at < len(w):
            end = _fit_prefix(w, at, tok, max_tokens)
            part = w[at:end]
            yield part, tok.count(part), sep
            sep, at = "", end


def _pack(units: Iterable[tuple[str, int, str]], tok: Tokenizer, max_tokens: int) -> list[str]:
    """Units packed in order into texts of at most ``max_tokens`` tokens.

    The sum of the units' counts decides where a text ends, so each text is counted whole once, when full (linear
    in the input); a text whose exact count is over (a merge across a join) hands its last units to the next.
    """
    out: list[str] = []
    cur: list[tuple[str, int, str]] = []
    total = 0
    for unit in units:
        if cur and total + unit[1] > max_tokens:
            cur = _flush(cur, tok, max_tokens, out)
            total = sum(u[1] for u in cur)
        cur.append(unit)
        total += unit[1]
    while cur:
        cur = _flush(cur, tok, max_tokens, out)
    return out


def _flush(
    cur: list[tuple[str, int, str]], tok: Tokenizer, max_tokens: int, out: list[str]
) -> list[tuple[str, int, str]]:
    """Append ``cur`` joined to ``out`` (its last units left over while it counts more than ``max_tokens``);
    return the units left over."""
    keep = len(cur)
    joined = _joined(cur)
    while keep > 1 and tok.count(joined) > max_tokens:
        keep -= 1
        joined = _joined(cur[:keep])
    out.append(joined)
    return cur[keep:]


def _joined(units: list[tuple[str, int, str]]) -> str:
    return "".join((sep if j else "") + text for j, (text, _, sep) in enumerate(units))


def _split_long(text: str, tok: Tokenizer, max_tokens: int) -> list[str]:
    """Split an over-long paragraph between table rows or list items, else at sentence (line, word) boundaries,
    and a word longer than a chunk where its prefix reaches the limit: every part holds at most ``max_tokens``
    tokens, in time linear in the paragraph (each sentence and word counted once, each full chunk once more)."""
    rows = _split_rows(text, tok, max_tokens)
    if rows is not None:
        return rows
    pieces = _sentence_pieces(text)
    if len(pieces) == 1:
        pieces = text.split("\n")

    def units() -> Iterator[tuple[str, int, str]]:  # one at a time: memory is the page and its chunks
        for piece in pieces:
            n = tok.count(piece)
            if n <= max_tokens:
                yield piece, n, " "
            else:
                yield from _units(piece, tok, max_tokens)

    return [t for t in _pack(units(), tok, max_tokens) if t.strip()]


def chunk_document(
    doc: ParsedDocument, *, tokenizer: Tokenizer | str = "cl100k_base", max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[TextChunk]:
    """Sections, then paragraphs packed up to ``max_tokens``; ids from heading slugs, collision-safe."""
    if max_tokens < 16:
        raise ConfigError(f"max_tokens must be at least 16, got {max_tokens}.")
    tok = resolve_tokenizer(tokenizer)
    out: list[TextChunk] = []
    used: set[str] = set()
    ordinal = 0
    for sec in doc.sections:
        base = "/".join(slugify(h) for h in sec.headings) or "intro"
        path = base
        n = 2
        while path in used:
            path = f"{base}-{n}"
            n += 1
        used.add(path)
        parts: list[str] = []
        cur: list[str] = []
        cur_tokens = 0
        for para in sec.paragraphs:
            pieces = _split_long(para, tok, max_tokens) if tok.count(para) > max_tokens else [para]
            for piece in pieces:
                t = tok.count(piece)
                if cur and cur_tokens + t + 1 > max_tokens:
                    parts.append("\n\n".join(cur))
                    cur, cur_tokens = [], 0
                cur.append(piece)
                cur_tokens += t + 1
        if cur:
            parts.append("\n\n".join(cur))
        for i, text in enumerate(parts):
            sp = path if i == 0 else f"{path}~{i + 1}"
            used.add(sp)
            out.append(TextChunk(section_path=sp, headings=sec.headings, text=text, ordinal=ordinal))
            ordinal += 1
    return out
