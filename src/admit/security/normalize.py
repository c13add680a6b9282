"""The text the rules match: smuggled characters decoded, invisible ones removed, NFKC, look-alikes mapped.

Every pattern here is a single character class or a bounded run of one (:mod:`admit._linear`, RE2), so
normalising is linear in the text.
"""

from __future__ import annotations

import unicodedata

from admit import _linear
from admit._clean import DEFAULT_IGNORABLE, JOINERS
from admit._clean import is_script_letter as _is_script_letter
from admit._linear import Match

__all__ = [
    "BIDI_OR_TAG",
    "CONFUSABLE_ANY",
    "CONFUSABLE_CHARS",
    "INVISIBLE_RUN",
    "JOINERS",
    "MIXED_WORD",
    "ZERO_WIDTH_IN_WORD",
    "is_latin_word_with_confusable",
    "is_script_letter",
    "normalize",
]

_INVISIBLE = _linear.compile(f"[{DEFAULT_IGNORABLE}]", name="security.invisible")
BIDI_OR_TAG = _linear.compile(r"[\x{202A}-\x{202E}\x{2066}-\x{2069}\x{E0000}-\x{E007F}]", name="security.bidi_or_tag")
# an invisible character inside a word ("ig\u200bnore"; joiners after letters of other scripts are ordinary)
ZERO_WIDTH_IN_WORD = _linear.compile(rf"\w[{DEFAULT_IGNORABLE}]+\w", name="security.zero_width_in_word")
# a run of invisible characters: more than an emoji's joiner and selector (variation-selector smuggling
# encodes one byte per selector; fillers and joiners pad hidden text)
INVISIBLE_RUN = _linear.compile(f"[{DEFAULT_IGNORABLE}]{{3,}}", name="security.invisible_run")
_VARIATION_RUN = _linear.compile(r"[\x{FE00}-\x{FE0F}\x{E0100}-\x{E01EF}]{4,}", name="security.variation_run")
_TAG_CHARS = _linear.compile(r"[\x{E0020}-\x{E007E}]+", name="security.tag_chars")

# Cyrillic and Greek letters that render like Latin ones (the usual homoglyph swaps).
_CONFUSABLE_MAP = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "һ": "h", "ӏ": "l", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O",
    "Р": "P", "С": "C", "Т": "T", "Х": "X", "Ү": "Y", "І": "I", "Ј": "J", "Ѕ": "S", "ο": "o", "α": "a",
    "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "Α": "A", "Β": "B",
    "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T",
    "Υ": "Y", "Χ": "X",
}  # fmt: skip
_CONFUSABLES = str.maketrans(_CONFUSABLE_MAP)
# small capitals (a styling, not a script): always read as the Latin letters they show
_SMALL_CAPS = str.maketrans(dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘǫʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnopqrstuvwyz", strict=True)))
CONFUSABLE_CHARS = "".join(_CONFUSABLE_MAP)
_CLASS = "".join(f"\\x{{{ord(c):04X}}}" for c in CONFUSABLE_CHARS)
CONFUSABLE_ANY = _linear.compile(f"[{_CLASS}]", name="security.confusable_any")
# a word holding a look-alike (whether it also holds Latin letters is checked on the word)
MIXED_WORD = _linear.compile(rf"\w*[{_CLASS}]\w*", name="security.mixed_word")
_LATIN_WORD = _linear.compile(r"\w+", name="security.word")


def is_latin_word_with_confusable(word: str) -> bool:
    """A word of at least two Latin letters with a Cyrillic or Greek look-alike among them, and no letter of those
    scripts that looks like no Latin one (``UNIXподобных``, a Russian compound, is no disguised Latin word)."""
    latin = sum(1 for ch in word if "a" <= ch.lower() <= "z")
    if latin < 2 or not any(ch in CONFUSABLE_CHARS for ch in word):
        return False
    return all(ch in CONFUSABLE_CHARS or ch.isascii() or not ch.isalpha() for ch in word)


def _untag(m: Match) -> str:
    # Unicode tag characters mirror ASCII (U+E0041 is an invisible "A"): decode them so a smuggled
    # payload is scanned like visible text.
    return " " + "".join(chr(ord(c) - 0xE0000) for c in m.group(0)) + " "


def _unselect(m: Match) -> str:
    # variation selectors smuggle bytes: VS1..VS16 are 0..15, VS17..VS256 are 16..255
    out = bytes((ord(c) - 0xFE00) if ord(c) < 0xFE10 else (ord(c) - 0xE0100 + 16) for c in m.group(0))
    return " " + out.decode("utf-8", "replace") + " "


def _drop_invisible(m: Match) -> str:
    ch = m.group(0)
    # a joiner after a letter of another script (Persian "می‌خواهم", Hindi "क्‍ष") is part of the word
    return ch if ch in JOINERS and is_script_letter(m.string, m.start() - 1) else ""


def is_script_letter(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a letter or mark of a script other than Latin that is no Latin look-alike."""
    return _is_script_letter(text, i) and text[i] not in CONFUSABLE_CHARS


def normalize(text: str) -> str:
    """The text the rules match: tag characters and variation-selector runs decoded, invisible characters
    removed (script joiners inside non-Latin words kept), NFKC, look-alikes mapped.

    Example:
        >>> normalize("ig\\u200bnore")
        'ignore'
    """
    if text.isascii():
        return text  # nothing to decode, remove, normalise or map (the slow part of a scan, skipped)
    s = _TAG_CHARS.sub(_untag, text)
    s = _VARIATION_RUN.sub(_unselect, s)
    s = _INVISIBLE.sub(_drop_invisible, s)
    s = unicodedata.normalize("NFKC", s).translate(_SMALL_CAPS)
    # look-alikes are mapped only inside words that also hold Latin letters (a Russian or Greek word stays as is)
    if CONFUSABLE_ANY.search(s) is None:
        return s
    return _LATIN_WORD.sub(lambda m: _map_latin(m.group(0)), s)


def _map_latin(word: str) -> str:
    return word.translate(_CONFUSABLES) if any("a" <= ch.lower() <= "z" for ch in word) else word
