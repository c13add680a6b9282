"""What the admitted evidence holds of the question: the features every answerability model reads.

Words are the text toolkit's (:mod:`admit._text`: content words, capitalised words, identifiers, the stem
without ``ies`` the models were fitted with). Text in a script MiniLM does not read (CJK, Thai, ...;
:func:`~admit._text.unreadable_script`) is matched by character bigrams instead of words.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence

from admit import _linear
from admit import _text as tx
from admit._text import char_bigrams, unreadable_script
from admit.answerability.reader import READER
from admit.answerability.terms import common_words, misspelt_in
from admit.question import Question, read_question

__all__ = ["FEATURES", "KNOWN_FEATURES", "SETWISE", "TOGETHER", "features", "is_short", "key_terms", "missing_terms"]

#: The model of evidence the setwise pruner graded is named after it.
SETWISE = "setwise"  # SetwisePruner.name: answerability reads no pruner module (admit.decide joins them)

#: What the evidence holds of the question: every model reads these.
_LEXICAL = ("best_q_cov", "union_q_cov", "best_entity_cov", "union_entity_cov", "ident_missing", "best_bigram_cov")
#: What the whole retrieved list (the pool the admitted evidence was chosen from) holds of the question: a name or key
#: word that no candidate holds is one the knowledge base most likely lacks ("back up to S3" where nothing names S3).
_POOL = ("pool_q_cov", "pool_entity_cov")

#: How the question's words sit in ONE passage: the share of its rare words (not among the common English words) the
#: best passage holds, and the share of its key-word pairs that one passage holds within :data:`PAIR_WINDOW` words
#: of each other (the answer's sentence names them together; a near miss spreads them over several passages).
TOGETHER = ("best_rare_cov", "best_pair_window")
#: Two words of the question this close (in content words) in one passage are held together.
PAIR_WINDOW = 10

#: Feature names per model.
FEATURES: dict[str, tuple[str, ...]] = {
    "lexical": (*_LEXICAL, *_POOL),
    SETWISE: (*_LEXICAL, *_POOL, "best_dense", "mean_dense_top2", "best_prob"),
    # with the cross model's scores of the kept chunks (setwise with ``cross`` on)
    "cross": (*_LEXICAL, "cross_best", "cross_second", "cross_margin"),
}
#: Every feature some model can read (the ones no shipped model reads yet included: a refit may pick them).
KNOWN_FEATURES = frozenset(f for names in FEATURES.values() for f in names) | frozenset(
    (*TOGETHER, "best_prob_share", *READER)
)


def _stem(w: str) -> str:
    return tx.stem(w, ies=False)


def _entities(question: Question) -> set[str]:
    """The question's capitalised words and numbers, its first word excluded (a sentence start, not a name)."""
    first = question.words[:1]
    return {_stem(w) for w in question.names if w not in first}


def _q_units(question: Question, script: str | None) -> list[str]:
    if script is not None:
        qb = char_bigrams(question.text)
        own = sorted(b for b in qb if any(unreadable_script(ch) for ch in b))
        return own or sorted(qb)
    return list(dict.fromkeys(_stem(w) for w in question.content_terms))


def _units(text: str, script: str | None) -> set[str]:
    if script is not None:
        return char_bigrams(text)
    return set(tx.key_units(text))


#: Words of a short question that name no content ("What does E4012 mean?" asks about E4012 alone).
_GENERIC = frozenset(
    """
    mean means meaning meant many much number numbers count stand stands define definition defined refer refers
    called call used use uses work works happen happens
    """.split()  # noqa: SIM905
)
_SHORT_FORM = _linear.compile(
    r"^\s*(what\s+(does|do|is|are)\b.*\b(mean|stand\s+for)\b|how\s+(many|much)\b|define\b)",
    re.IGNORECASE,
    name="answerability.short_form",
)
_WORD_AS_WRITTEN = _linear.compile(r"\w+", name="answerability.word")


def key_terms(question: str | Question) -> list[str]:
    """The question's content words less the generic ones of a short question's form (stemmed)."""
    q = read_question(question)
    return [w for w in dict.fromkeys(_stem(w) for w in q.content_terms) if w not in _GENERIC]


def is_short(question: str | Question) -> bool:
    """A short question: "What does X mean?", "how many ...", "define X", or at most three content words."""
    q = read_question(question)
    return bool(_SHORT_FORM.match(q.text)) or len(key_terms(q)) <= 2 or len(q.words) <= 3


def features(
    question: str | Question,
    texts: Sequence[str],
    *,
    dense: Sequence[float] | None = None,
    probs: Sequence[float] | None = None,
    expected_needed: float | None = None,
    cross: Sequence[float] | None = None,
    pool: Sequence[str] | None = None,
    together: bool = True,
) -> dict[str, float]:
    """The answerability features of an evidence set (``texts``: the admitted passages, title included).

    ``dense`` and ``probs`` (one per text) and ``expected_needed`` are the setwise pruner's absolute cosine,
    probability and expected number of needed chunks; without them only the lexical features are meaningful.
    ``pool``: every candidate the evidence was chosen from (default: ``texts``), for the ``pool_*`` features.
    ``together``: compute ``best_rare_cov`` and ``best_pair_window`` (a model that reads neither passes ``False``:
    they then stand at ``best_q_cov``'s value, as for a question without rare words or word pairs).
    """
    question = read_question(question)
    script = question.script
    q_units = _q_units(question, script)
    q_ents = _entities(question) if script is None else set()
    q_pairs = set(itertools.pairwise(q_units)) if script is None else set()
    q_rare = _rare_units(question) if script is None and together else set()
    asked = question.identifiers
    best_cov = union = best_ent = best_pair = best_rare = best_window = 0.0
    hit_any: set[str] = set()
    ent_any: set[str] = set()
    found_ident = False
    for t in texts:
        units = _units(t, script)
        held = {u for u in q_units if u in units}
        hit_any |= held
        best_cov = max(best_cov, len(held) / max(1, len(q_units)))
        if q_ents:
            best_ent = max(best_ent, len(q_ents & units) / len(q_ents))
            ent_any |= q_ents & units
        if q_rare:
            best_rare = max(best_rare, len(q_rare & units) / len(q_rare))
        if q_pairs:
            best_pair = max(best_pair, tx.pairs_held(t, q_pairs) / len(q_pairs))
            if together and len(held) >= 2:
                toks = tx.key_stems(t)  # the stemmed content words in order (stored at ingest, memoised)
                best_window = max(best_window, _pairs_within(toks, held, PAIR_WINDOW) / math.comb(len(q_units), 2))
        if asked and not found_ident and asked & tx.identifiers(t):
            found_ident = True
    union = len(hit_any) / max(1, len(q_units))
    pool_cov, pool_ent, names_absent = _pool_cover(q_units, q_ents, script, hit_any, ent_any, texts, pool)
    short_held = _short_held(question, texts) if script is None else 0.0
    return {
        "best_q_cov": best_cov,
        "union_q_cov": union,
        "best_entity_cov": best_ent if q_ents else best_cov,
        # a name the question asks about (Kerberos, MongoDB) that no passage holds
        "union_entity_cov": len(ent_any) / len(q_ents) if q_ents else union,
        "ident_missing": 1.0 if asked and texts and not found_ident else 0.0,
        "best_bigram_cov": best_pair if q_pairs else best_cov,
        "best_rare_cov": best_rare if q_rare else best_cov,
        "best_pair_window": best_window if q_pairs and together else best_cov,
        "pool_q_cov": pool_cov,
        "pool_entity_cov": pool_ent,
        # how many names of the question (capitalised words past the first, numbers) no candidate holds: read by the
        # absent-name rule (AnswerabilityModel.state), by no model
        "pool_names_absent": float(names_absent),
        "log_n": math.log1p(len(texts)),
        **_pruner_signals(dense, probs, expected_needed),
        # a short question ("What does X mean?") whose every key term one passage holds: answered by rule
        "short_held": short_held,
        **_cross_signals(cross),
    }


def _rare_units(question: Question) -> set[str]:
    """The question's content words that are not common English words (stemmed): the ones that name its topic."""
    common = common_words()
    return {_stem(w) for w in question.content_terms if w not in common}


def _pairs_within(toks: Sequence[str], held: set[str], window: int) -> int:
    """How many pairs of the ``held`` words occur within ``window`` tokens of each other in ``toks``."""
    last: dict[str, int] = {}
    near: set[tuple[str, str]] = set()
    for i, w in enumerate(toks):
        if w not in held:
            continue
        for o, j in last.items():
            if o != w and i - j <= window:
                near.add((o, w) if o < w else (w, o))
        last[w] = i
    return len(near)


def _short_held(question: Question, texts: Sequence[str]) -> float:
    """1.0 when the question is short and one passage holds every key term: an identifier the question names
    ("What does E4012 mean?") is its key alone; else its key words."""
    if not texts or not is_short(question):
        return 0.0
    asked = question.identifiers
    keys = {w.lower() for w in asked} if asked else set(key_terms(question))
    if keys and any(keys <= (_units(t, None) | {w.lower() for w in tx.identifiers(t)}) for t in texts):
        return 1.0
    return 0.0


def _pruner_signals(
    dense: Sequence[float] | None, probs: Sequence[float] | None, expected_needed: float | None
) -> dict[str, float]:
    """The setwise pruner's absolute cosine and probability of the kept chunks, and its expected needed count."""
    d = sorted((float(x) for x in dense or ()), reverse=True)
    p = [float(x) for x in probs or ()]
    return {
        "best_dense": d[0] if d else 0.0,
        "mean_dense_top2": sum(d[:2]) / len(d[:2]) if d else 0.0,
        "best_prob": max(p) if p else 0.0,
        # how much of the kept chunks' probability the best one holds: one chunk that answers, or several half-way
        "best_prob_share": max(p) / sum(p) if p and sum(p) > 0 else 0.0,
        "log_expected": math.log(max(expected_needed or 0.0, 1e-3)),
    }


def _cross_signals(cross: Sequence[float] | None) -> dict[str, float]:
    """The cross model's scores of the kept chunks: the best, the second (the best again for one chunk), margin."""
    c = sorted((float(x) for x in cross or ()), reverse=True)
    return {
        "cross_best": c[0] if c else 0.0,
        "cross_second": c[1] if len(c) > 1 else (c[0] if c else 0.0),
        "cross_margin": c[0] - c[1] if len(c) > 1 else 0.0,
    }


def _pool_cover(
    q_units: Sequence[str],
    q_ents: set[str],
    script: str | None,
    hit_any: set[str],
    ent_any: set[str],
    texts: Sequence[str],
    pool: Sequence[str] | None,
) -> tuple[float, float, int]:
    """The share of the question's units and of its names that some candidate of the pool (or an admitted text)
    holds (the share of its units when it names nothing), and how many of its names none holds; a pool text is read
    only while a unit is still unseen."""
    units_left = [u for u in q_units if u not in hit_any]
    ents_left = q_ents - ent_any
    if pool is not None and (units_left or ents_left):
        admitted = set(texts)
        for t in pool:
            if t in admitted:
                continue
            got = _units(t, script)
            units_left = [u for u in units_left if u not in got]
            ents_left -= got
            if not units_left and not ents_left:
                break
    cov = 1.0 - len(units_left) / max(1, len(q_units))
    ent = 1.0 - len(ents_left) / len(q_ents) if q_ents else cov
    if ents_left and script is None:
        # a name the question misspells ("OpnShft") is not one the knowledge base lacks: the absent-name rule's count
        vocab = {u for t in [*texts, *(pool or ())] for u in _units(t, None)}
        ents_left = {e for e in ents_left if not misspelt_in(e, vocab)}
    return cov, ent, len(ents_left)


def missing_terms(question: str | Question, texts: Sequence[str], limit: int = 6) -> tuple[str, ...]:
    """The question's identifiers, names and key words that no passage holds, in the question's order."""
    q = read_question(question)
    if q.script is not None:
        return ()
    held: set[str] = set()
    idents: set[str] = set()
    asked = sorted(q.identifiers)
    wanted = {i.lower() for i in asked}
    for t in texts:
        held |= tx.key_units(t)
        # a passage can hold an identifier only as a substring: read its identifiers only when it has one
        if wanted and any(i in tx.nfc(t).lower() for i in wanted):
            idents |= {i.lower() for i in tx.identifiers(t)}
    out: list[str] = [i for i in asked if i.lower() not in idents]
    seen = {i.lower() for i in out}
    content = set(q.content_terms)
    for w in dict.fromkeys(q.words):
        st = _stem(w)
        if w in content and st not in _GENERIC and st not in held and w not in seen and st not in seen:
            out.append(w)
            seen |= {w, st}
    shown = {m.lower(): m for m in reversed(_WORD_AS_WRITTEN.findall(q.text))}
    return tuple(shown.get(w, w) for w in out[:limit])
