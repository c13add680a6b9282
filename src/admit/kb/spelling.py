"""British and American spellings of one word, for the lexical search's query terms.

The stemmers the stores use (Porter in SQLite's FTS5, the ``english`` configuration in PostgreSQL, none in the
in-memory and Qdrant stores) do not join ``licence`` and ``license``, ``colour`` and ``color``, ``organise`` and
``organize``: a question spelt one way missed the chunk spelt the other way in BM25 (a ``licence`` question asked of
documentation that says "License" lost its answer before the pruner saw it). :func:`variants` gives the other
spellings of a query term; :func:`admit.kb.store.fts_terms`, the one query builder every store reads, adds them
beside the term. Nothing is changed in what the stores index.

The rules are the regular patterns (``-our``/``-or``, ``-ise``/``-ize``, ``-yse``/``-yze``, ``-re``/``-er``,
``-ogue``/``-og``, ``-ence``/``-ense``, a doubled ``l`` before ``-ed``/``-ing``/``-er``), each on a list of stems
where the pattern is a spelling and not another word (``four`` is not ``for``, ``wise`` is not ``wize``), and a
short table of single words (``grey``/``gray``, ``programme``/``program``).
"""

from __future__ import annotations

__all__ = ["variants"]

#: ``-our`` (British) / ``-or`` (American) stems: ``colour``/``color``, ``behaviours``/``behaviors``.
_OUR = (
    "armo", "behavio", "cando", "clamo", "colo", "demeano", "endeavo", "favo", "flavo", "harbo", "hono", "humo",
    "labo", "neighbo", "odo", "parlo", "rigo", "rumo", "savo", "splendo", "tumo", "valo", "vapo", "vigo",
)  # fmt: skip
#: ``-re`` / ``-er`` words: ``centre``/``center``, ``centres``/``centers``.
_RE = (
    "cent", "met", "lit", "theat", "fib", "calib", "sab", "spect", "meag", "lust", "somb", "scept",
)  # fmt: skip
#: ``-ogue`` / ``-og`` stems: ``catalogue``/``catalog``.
_OGUE = ("catal", "dial", "anal", "monol")
#: ``-ence`` / ``-ense`` stems: ``licence``/``license``, ``defence``/``defense``.
_ENCE = ("lic", "def", "off", "pret")
#: Verbs whose final ``l`` is doubled in British spelling before ``-ed``, ``-ing``, ``-er``: ``cancelled``.
_LL = (
    "cancel", "channel", "counsel", "dial", "equal", "fuel", "funnel", "jewel", "label", "level", "marshal", "model",
    "panel", "rival", "shovel", "signal", "total", "travel", "tunnel",
)  # fmt: skip
#: ``-ise`` words that are not ``-ize`` spellings (their ``-ize`` form is another word or none).
_ISE_NOT = frozenset(
    (
        "advise", "apprise", "arise", "chemise", "circumcise", "comprise", "compromise", "concise", "demise",
        "despise", "devise", "disguise", "enterprise", "excise", "exercise", "expertise", "franchise", "guise",
        "improvise", "incise", "merchandise", "noise", "otherwise", "paradise", "poise", "praise", "precise",
        "premise", "promise", "raise", "revise", "rise", "supervise", "surmise", "surprise", "televise", "treatise",
        "likewise", "clockwise", "wise", "cruise", "bruise", "anise", "reprise", "valise", "mortise", "practise",
    )
)  # fmt: skip
#: ``-ize`` words whose ``-ise`` form is another word or none.
_IZE_NOT = frozenset(("size", "prize", "seize", "capsize", "maize", "baize", "downsize", "oversize", "resize"))
#: Single words.
_WORDS = {
    "grey": "gray",
    "programme": "program",
    "programmes": "programs",
    "aluminium": "aluminum",
    "judgement": "judgment",
    "judgements": "judgments",
    "acknowledgement": "acknowledgment",
    "acknowledgements": "acknowledgments",
    "ageing": "aging",
    "enrol": "enroll",
    "enrolment": "enrollment",
    "fulfil": "fulfill",
    "fulfilment": "fulfillment",
    "instalment": "installment",
    "artefact": "artifact",
    "artefacts": "artifacts",
    "sceptical": "skeptical",
    "mould": "mold",
    "plough": "plow",
    "cheque": "check",
    "practise": "practice",
    "practised": "practiced",
    "practising": "practicing",
    "storey": "story",
    "whilst": "while",
}
_WORDS_BACK = {v: k for k, v in _WORDS.items() if v not in ("check", "story", "while", "practice", "mold")}

#: What follows the ``o`` of an ``-our`` stem: ``colo`` + ``ur`` / ``r``, ``urs`` / ``rs``, ...
_OUR_ENDS = ("ur", "urs", "ured", "uring", "urful", "urite", "urites", "urable", "urless", "ural", "urally")
_ISE_ENDS = ("isation", "isations", "ised", "ises", "ising", "iser", "isers", "ise")
_YSE_ENDS = ("yse", "ysed", "yses", "ysing", "yser", "ysers")


def _pair(word: str, stems: tuple[str, ...], ends: tuple[tuple[str, str], ...]) -> str | None:
    """The other spelling when ``word`` is one of ``stems`` plus one side of an ``ends`` pair."""
    for a, b in ends:
        for this, other in ((a, b), (b, a)):
            if word.endswith(this):
                stem = word[: len(word) - len(this)]
                if stem in stems:
                    return stem + other
    return None


def variants(term: str) -> list[str]:
    """The other spellings of ``term`` (lower case), British and American; ``[]`` when it has none.

    >>> variants("licence"), variants("colours"), variants("organize"), variants("catalogue")
    (['license'], ['colors'], ['organise'], ['catalog'])
    >>> variants("wise"), variants("four"), variants("size")
    ([], [], [])
    """
    t = term.lower()
    if len(t) < 4 or not t.isalpha():
        return []
    out: list[str] = []
    if t in _WORDS:
        out.append(_WORDS[t])
    if t in _WORDS_BACK:
        out.append(_WORDS_BACK[t])
    our = _pair(t, _OUR, tuple((e, e[1:]) for e in _OUR_ENDS))
    if our:
        out.append(our)
    re_ = _pair(t, _RE, (("re", "er"), ("res", "ers")))
    if re_:
        out.append(re_)
    ogue = _pair(t, _OGUE, (("ogue", "og"), ("ogues", "ogs")))
    if ogue:
        out.append(ogue)
    ence = _pair(t, _ENCE, (("ence", "ense"), ("ences", "enses"), ("enced", "ensed"), ("encing", "ensing")))
    if ence:
        out.append(ence)
    ll = _pair(t, _LL, (("led", "ed"), ("ling", "ing"), ("ler", "er"), ("lers", "ers")))
    if ll:
        out.append(ll)
    out += _ise(t)
    return [v for v in dict.fromkeys(out) if v != t]


def _ise(t: str) -> list[str]:
    """``organise``/``organize`` and their forms; ``analyse``/``analyze``."""
    for brit, amer in (("is", "iz"), ("ys", "yz")):
        ends = _ISE_ENDS if brit == "is" else _YSE_ENDS
        for e in sorted(ends, key=len, reverse=True):
            for this, other, root_end in ((e, e.replace(brit, amer, 1), brit), (e.replace(brit, amer, 1), e, amer)):
                if t.endswith(this):
                    stem = t[: len(t) - len(this)]
                    root = stem + root_end + "e"
                    if len(stem) < 3 or root in _ISE_NOT or root in _IZE_NOT:
                        return []
                    return [stem + other]
    return []
