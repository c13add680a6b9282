"""Chunker: sections by headings, then paragraphs packed up to ``max_tokens`` cl100k tokens; a paragraph longer
than that is split at sentence boundaries. Ids come from heading slugs, collision-safe.

Tables and lists keep their structure: an over-long table is split between rows, each part repeating the header
row (and its ``|---|`` rule), and an over-long list between items, never inside a row or an item; so a list-all
question finds whole rows with their column names.
"""

from __future__ import annotations

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


def _split_long(text: str, tok: Tokenizer, max_tokens: int) -> list[str]:
    """Split an over-long paragraph between table rows or list items, else at sentence (line, word) boundaries."""
    rows = _split_rows(text, tok, max_tokens)
    if rows is not None:
        return rows
    pieces = _sentence_pieces(text)
    if len(pieces) == 1:
        pieces = text.split("\n")
    out: list[str] = []
    cur = ""
    for piece in pieces:
        if tok.count(piece) > max_tokens:
            words = piece.split(" ")
            sub: list[str] = []
            for w in words:
                if sub and tok.count(" ".join([*sub, w])) > max_tokens:
                    out.append(" ".join(sub))
                    sub = []
                sub.append(w)
            piece = " ".join(sub)
        cand = f"{cur} {piece}".strip() if cur else piece
        if cur and tok.count(cand) > max_tokens:
            out.append(cur)
            cur = piece
        else:
            cur = cand
    if cur:
        out.append(cur)
    return out


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
