"""Word-level helpers of the setwise scorer: tokens, entities, titles, identifiers, question cues."""

from __future__ import annotations

import re
import unicodedata

from admit import _linear
from admit._text import STOPWORDS
from admit.passages import nfc

__all__ = [
    "capitalised_tokens",
    "char_bigrams",
    "contains_phrase",
    "content_tokens",
    "entity_phrases",
    "identifier_kind",
    "identifiers",
    "title_keys",
    "unreadable_script",
    "words",
]

_WORD = _linear.simple(r"\w+")
_PAREN = _linear.compile(r"\s*\([^)]*\)", name="setwise.paren")
#: Exact identifiers: letter-digit codes (``E4012``, ``FB-111A``, ``v1.2``) and UPPER_SNAKE names. Applied only
#: to one run of ``[\w.-]`` at a time, at most :data:`_IDENT_MAX` characters long (its look-arounds see the same
#: characters as on the whole text, since a run's neighbours are outside the class), so its work is bounded
#: per run and linear in the text.
_IDENT = re.compile(
    r"(?<![\w-])(?=[\w.-]*[A-Za-z])(?=[\w.-]*\d)[A-Za-z0-9][\w.-]*[A-Za-z0-9](?![\w-])"
    r"|(?<![\w-])[A-Z][A-Z0-9]*_[A-Z0-9_]+(?![\w-])"
)
_IDENT_RUN = _linear.compile(r"[\w.-]+", name="setwise.ident_run")
_IDENT_MAX = 64
_VERSION = _linear.compile(r"^v?\d+(?:\.\d+){2,3}$", name="setwise.version")
_ORDINAL = _linear.compile(r"^\d+(?:st|nd|rd|th|s)$", re.I, name="setwise.ordinal")

COMPARISON = _linear.compile(
    r"\b(both|either|neither|same|different|older|younger|earlier|later|first|last|more|less|larger|smaller"
    r"|longer|shorter|higher|lower|bigger|further|closer|compare|comparison|versus|vs)\b",
    re.IGNORECASE,
    name="setwise.comparison",
)
OR_CHOICE = _linear.compile(r"\b\w+\s+or\s+\w+", re.IGNORECASE, name="setwise.or_choice")
NESTED = _linear.compile(
    r"\b(of|in|by|for|from|at)\s+(the|a|an|this|that)\b|'s\b|’s\b", re.IGNORECASE, name="setwise.nested"
)
RELATIVE = _linear.compile(r"\b(who|which|that|where|whose|whom|when)\b", re.IGNORECASE, name="setwise.relative")
YEAR = _linear.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b", name="setwise.year")
NUMBER = _linear.compile(r"\b\d[\d,.]*\b", name="setwise.number")
#: Answer-type cues of a question, in the order of the ``q_wh_*`` question features.
WH_CUES: tuple[tuple[str, _linear.LinearPattern], ...] = tuple(
    (name, _linear.compile(p, re.I, name=f"setwise.wh_{name}"))
    for name, p in (
        ("when", r"^\s*(when|what year|which year|in what year|in which year)\b|\bwhat (year|date)\b"),
        ("who", r"^\s*(who|whom|whose)\b"),
        ("where", r"^\s*where\b|\bwhat (city|country|state|county)\b"),
        ("how_many", r"\bhow (many|much|long|old|far|tall)\b"),
        ("yes_no", r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b"),
    )
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _WORD.findall(nfc(text).lower())


def content_tokens(text: str) -> list[str]:
    """Lower-cased tokens without stopwords and one-letter words (digits kept)."""
    return [w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def capitalised_tokens(text: str) -> set[str]:
    """Lower-cased tokens written capitalised (or numbers) that are not stopwords (sentence starts too)."""
    out: set[str] = set()
    for tok in _WORD.findall(nfc(text)):
        low = tok.lower()
        if low in STOPWORDS or len(tok) < 2:
            continue
        if tok[0].isupper() or tok.isdigit():
            out.add(low)
    return out


def entity_phrases(text: str) -> set[str]:
    """Lower-cased runs of two or more capitalised non-stopword words (e.g. "natalie wood")."""
    out: set[str] = set()
    run: list[str] = []
    for tok in [*_WORD.findall(nfc(text)), ""]:
        if tok and tok[0].isupper() and tok.lower() not in STOPWORDS:
            run.append(tok.lower())
            continue
        if len(run) >= 2:
            out.add(" ".join(run))
        run = []
    return out


def title_keys(title: str) -> tuple[str, str]:
    """Normalised full title and its head (before a comma or parenthesis)."""
    t = nfc(title).lower()
    full = " ".join(_WORD.findall(_PAREN.sub("", t)))
    head = " ".join(_WORD.findall(_PAREN.sub("", t).split(",")[0]))
    return full, head


def contains_phrase(haystack: str, phrase: str) -> bool:
    """Whether a space-padded lower-cased text contains a phrase of 3+ characters as whole words."""
    if len(phrase) < 3:
        return False
    return f" {phrase} " in haystack


def identifiers(text: str) -> set[str]:
    """Exact identifiers in a text: letter-digit codes of 4+ characters and UPPER_SNAKE names.

    Dotted releases with three or four parts (``3.2.0``, ``v1.4.2``) count too. Not ordinals (``20th``), decades
    (``1990s``) or short tokens such as ``v5``, ``S3`` or ``WW2``, which name things too loosely for an exact-match
    rule.
    """
    out: set[str] = set()
    for run in _IDENT_RUN.finditer(nfc(text)):
        r = run.group(0)
        if len(r) > _IDENT_MAX or not (("_" in r) or any(c.isdigit() for c in r)):
            continue
        bare = r.strip(".-")
        if _VERSION.match(bare):  # a release such as 3.2.0 names one changelog entry exactly
            out.add(bare)
            continue
        _linear.meter.add(len(r) * len(r))  # the look-arounds' worst case on one bounded run
        out.update(m for m in _IDENT.findall(r) if not _ORDINAL.match(m) and (len(m) >= 4 or "_" in m))
    return out


_SHAPE = str.maketrans({**dict.fromkeys("0123456789", "9"), **dict.fromkeys(map(chr, range(65, 91)), "A"),
                        **dict.fromkeys(map(chr, range(97, 123)), "A")})  # fmt: skip


def identifier_kind(ident: str) -> str:
    """The shape of an identifier: ``E4012`` and ``E4031`` share ``A9999``; ``HL_X`` and ``HL_Y`` share ``HL_``."""
    if "_" in ident and ident.upper() == ident:
        return "snake:" + ident.split("_")[0]
    return ident.translate(_SHAPE)


# Unicode blocks of scripts that all-MiniLM-L6-v2 (English word pieces) cannot read: CJK, kana, hangul, Thai,
# Lao, Khmer, Myanmar, Tibetan, Ethiopic, and the Indic scripts. Counted per letter character.
_UNREADABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0900, 0x0DFF),  # Devanagari .. Sinhala
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1200, 0x139F),  # Ethiopic
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x318F),  # Bopomofo, Hangul compatibility jamo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FA1F),  # CJK extensions B..
)
#: A text is in an unreadable script when at least this share of its letters are.
UNREADABLE_SHARE = 0.3


def _unreadable_char(ch: str) -> bool:
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in _UNREADABLE_RANGES)


def unreadable_script(text: str, *, limit: int = 4000) -> str | None:
    """The name of the script MiniLM cannot read that ``text`` is mostly written in, else ``None``.

    Looks at the first ``limit`` letters; the name is the Unicode name's first word of the commonest such
    letter (``CJK``, ``HIRAGANA``, ``THAI``, ``HANGUL`` ...).
    """
    letters = 0
    counts: dict[str, int] = {}
    for ch in text:
        if not ch.isalpha():
            continue
        letters += 1
        if _unreadable_char(ch):
            name = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            counts[name] = counts.get(name, 0) + 1
        if letters >= limit:
            break
    if not letters or sum(counts.values()) / letters < UNREADABLE_SHARE:
        return None
    return max(counts, key=lambda k: counts[k])


def char_bigrams(text: str) -> set[str]:
    """Character bigrams of the letters and digits of ``text`` (case-folded; spaces and punctuation break runs)."""
    out: set[str] = set()
    prev = ""
    for ch in unicodedata.normalize("NFKC", text).casefold():
        if ch.isalnum():
            if prev:
                out.add(prev + ch)
            prev = ch
        else:
            prev = ""
    return out
