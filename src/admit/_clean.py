"""Cleaning document-controlled text before anyone shows it: to a model (envelopes) or to a terminal.

Invisible and line-breaking characters are handled by Unicode class rather than by a hand list: every
``Default_Ignorable_Code_Point`` (zero-width, bidi controls, variation selectors, tag characters, fillers,
U+034F, U+061C, U+180E, U+3164, ...), every other format (``Cf``), control (``Cc``) and surrogate (``Cs``)
character is removed, except the zero-width joiners (U+200C, U+200D) that Persian, Hindi and other scripts
write inside ordinary words (kept after a letter of such a script); line and paragraph separators (``Zl``,
``Zp``, U+0085, CR) become a newline in a passage body and a space in an attribute. Every quote-like
character in an attribute value becomes an escaped ASCII quote, so a title cannot show the model attributes
of its own (``Ops guide” access=”acme:sre-only”``). Linear: RE2 patterns (:mod:`admit._linear`).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from admit import _linear
from admit._linear import Match

__all__ = [
    "DEFAULT_IGNORABLE",
    "JOINERS",
    "citation_id",
    "clean_attr",
    "clean_terminal",
    "clean_text",
    "escape_line_breaks",
    "is_script_letter",
]

# Unicode's Default_Ignorable_Code_Point property, spelled out (RE2 has no name for it)
DEFAULT_IGNORABLE = (
    r"\x{00AD}\x{034F}\x{061C}\x{115F}-\x{1160}\x{17B4}-\x{17B5}\x{180B}-\x{180F}\x{200B}-\x{200F}"
    r"\x{202A}-\x{202E}\x{2060}-\x{206F}\x{3164}\x{FE00}-\x{FE0F}\x{FEFF}\x{FFA0}\x{FFF0}-\x{FFF8}"
    r"\x{1BCA0}-\x{1BCA3}\x{1D173}-\x{1D17A}\x{E0000}-\x{E0FFF}"
)
JOINERS = "\u200c\u200d"
"""Zero-width non-joiner and joiner: part of ordinary words in Persian, Urdu, Hindi and other scripts."""

_ATTR_CHARS = 300
_SURROGATES = re.compile("[\ud800-\udfff]")  # a single class: linear in re
# removed everywhere: default-ignorable code points, and the other format/control characters (tab and newline
# are kept in passage bodies; CR and NEL became newlines first)
_INVISIBLE = _linear.compile(
    rf"[{DEFAULT_IGNORABLE}\p{{Cf}}\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F]", name="clean.invisible"
)
# line breaks that are not "\n": CRLF, CR, NEL, the line and paragraph separators (VT and FF: removed above)
_BREAKS = _linear.compile(r"\r\n?|[\x{85}\p{Zl}\p{Zp}]", name="clean.breaks")
_ANY_SPACE = _linear.compile(r"\s+", name="clean.space")
_DOUBLE_QUOTES = '"＂“”„‟〝〞〟″‶״ʺ˝ˮ«»⹂'
# the single angle quotes ‹ › are not here: they are ordinary separators in titles (ingest joins headings with
# " › "), and neither they nor an ASCII ' can end a double-quoted attribute
_SINGLE_QUOTES = "＇‘’‚‛′‵ʹʻʼʽ"
_QUOTES = str.maketrans({**dict.fromkeys(_DOUBLE_QUOTES, '"'), **dict.fromkeys(_SINGLE_QUOTES, "'")})
# terminal control sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other ESC sequences, C1 CSI/OSC
_TERMINAL = _linear.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
    r"|\x{9B}[0-?]*[ -/]*[@-~]|\x{9D}[^\x07]*\x07?",
    name="clean.terminal",
)


def is_script_letter(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a letter or mark of a script other than Latin (a joiner after it is ordinary)."""
    if not 0 <= i < len(text) or text[i].isascii():
        return False
    return text[i].isalpha() or unicodedata.category(text[i]).startswith("M")


def _drop_invisible(m: Match) -> str:
    ch = m.group(0)
    return ch if ch in JOINERS and is_script_letter(m.string, m.start() - 1) else ""


def _printable_ignorables() -> list[int]:
    """The default-ignorable code points :meth:`str.isprintable` calls printable (U+034F, the Hangul fillers, the
    variation selectors, ...): the only ones :data:`_INVISIBLE` removes that a printable text may hold (every other
    one is a format, control or unassigned character, or a line or paragraph separator: not printable)."""
    points: list[int] = []
    items = DEFAULT_IGNORABLE.split("\\x{")[1:]  # "00AD}", "115F}-", "1160}", ...: points and ranges
    while items:
        head, dash = items.pop(0).split("}")
        lo = hi = int(head, 16)
        if dash == "-":
            hi = int(items.pop(0).split("}")[0], 16)
        points.extend(c for c in range(lo, hi + 1) if chr(c).isprintable())
    return sorted(points)


def _char_class(points: list[int]) -> str:
    """A character class of sorted code points, as ranges (re tests a character beyond U+FFFF against each item of
    a class in turn)."""
    runs: list[list[int]] = []
    for c in points:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return "[" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in runs) + "]"


_IGNORABLE_POINTS = _printable_ignorables()
# one character class (linear in re): a printable text (tabs and newlines aside) without one of these holds nothing
# clean_text changes
_PRINTABLE_IGNORABLE = _linear.simple(_char_class(_IGNORABLE_POINTS))
# their first bytes in UTF-8 (5 distinct ones): a text whose UTF-8 holds none of those bytes holds none of the
# characters, told by one byte deletion in C (a regex pass over a non-ASCII text costs ten times as much)
_IGNORABLE_LEADS = bytes(sorted({chr(c).encode("utf-8")[0] for c in _IGNORABLE_POINTS}))


def unchanged_by_cleaning(text: str) -> bool:
    """Whether :func:`clean_text` would return ``text`` as it is, told without a regex pass over most texts:
    nothing in it but printable characters, tabs and newlines, and no printable default-ignorable character."""
    if not (text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()):
        return False  # a control, format, surrogate or separator character (a tab or newline aside)
    if text.isascii():
        return True
    raw = text.encode("utf-8")  # printable: no surrogate
    return len(raw.translate(None, _IGNORABLE_LEADS)) == len(raw) or _PRINTABLE_IGNORABLE.search(text) is None


def clean_text(text: str) -> str:
    """Remove invisible, format and control characters; turn every other line break into ``\\n``."""
    if unchanged_by_cleaning(text):
        return text  # nothing to remove (most texts: printable, their only controls tabs and newlines)
    s = _SURROGATES.sub("", text)
    return _INVISIBLE.sub(_drop_invisible, _BREAKS.sub("\n", s))


def clean_attr(value: object) -> str:
    """An attribute value that cannot break out of its quotes or its line: cleaned, all whitespace (line
    breaks included) collapsed to one space, cut to 300 characters, quote-like characters made ASCII quotes,
    then escaped (so a cut never splits an escape)."""
    raw = str(value if value is not None else "")
    if raw.isascii() and raw.isprintable() and "  " not in raw:
        s = raw.strip(" ")  # printable ASCII: nothing to remove, its only space is " ", never doubled
    else:
        s = _ANY_SPACE.sub(" ", clean_text(raw)).strip()
    return s[:_ATTR_CHARS].translate(_QUOTES).replace("\\", "\\\\").replace('"', '\\"')


def citation_id(raw: object) -> str:
    """The id a passage is cited by: its id when rendering leaves it as it is, else the rendered form cut to
    280 characters plus ``~`` and 8 hex digits of the raw id's digest, so two distinct ids never render as
    one (``errors.md`` beside ``errors\\u200b.md``; ids equal in their first 300 characters; a trailing tab).
    A raw id that itself ends in ``~`` and 8 hex digits is digested as well: it cannot pose as another id's
    digested form.

    Example:
        >>> citation_id("install#upgrade")
        'install#upgrade'
        >>> citation_id("errors\\u200b.md")
        'errors.md~f8bbc1d0'
    """
    s = str(raw if raw is not None else "")
    shown = clean_attr(s)
    if shown == s and not _looks_digested(s):
        return s
    return f"{shown[:280]}~{hashlib.sha256(s.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


_HEX = frozenset("0123456789abcdef")
_JSON_BREAKS = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\u0085", "\\u0085"))


def escape_line_breaks(json_text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with U+2028, U+2029 and U+0085 written as escapes:
    JSON allows them raw, but ``str.splitlines()`` and many line readers end a line at each, so a value holding
    one would break its record out of a JSON line. The result decodes to the same value."""
    for ch, esc in _JSON_BREAKS:
        if ch in json_text:
            json_text = json_text.replace(ch, esc)
    return json_text


def _looks_digested(s: str) -> bool:
    """Whether ``s`` ends like a digested citation id (``~`` and 8 hex digits): such a raw id is digested too,
    so a crafted id can never take the citation id another id renders to."""
    return len(s) >= 9 and s[-9] == "~" and set(s[-8:]) <= _HEX


def clean_terminal(text: str) -> str:
    """Text for a terminal: escape sequences (window title, clear screen, colours, hyperlinks) and every other
    control character removed, line breaks kept."""
    return clean_text(_TERMINAL.sub("", text))
