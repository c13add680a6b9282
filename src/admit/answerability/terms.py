"""The verdict's own check of its reason: what the question asks against what the admitted chunks hold.

A key term of the question (a content word in any case that is not a common English word, or a word it writes as a
name: "borg", "JSON", "endpoint"; an identifier) that no admitted chunk holds, as written, as another form of the
word ("reformatted" and "reformat"), misspelt ("aplications") or as a word the encoder sees as close ("repo" and
"repository"), means the evidence cannot be "answered" (:func:`check_terms`). When no retrieved candidate holds it
either, the knowledge base most likely lacks it: "not answered".

Where the question states an answer type, the admitted chunks must hold one (:func:`answer_type_missing`): a
version asks for a version string, "default" for a value beside the word, "how do I" for a step, a command or a
setting.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Container, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from admit import _linear, modelfiles
from admit import _text as tx
from admit._lru import LRU
from admit.backends.embedders.base import Embedder
from admit.question import ASKS_HOWTO, Question, read_question, releases_in

__all__ = [
    "ABSENT_TYPES",
    "KB_ABSENT_MIN",
    "NEAR_COSINE",
    "RELATION_WINDOW",
    "TermCheck",
    "answer_type_missing",
    "check_terms",
    "compounds",
    "form_word_typo",
    "forms_of_one_word",
    "kb_absent_words",
    "kb_vocabulary",
    "misspelt_in",
    "question_terms",
    "vocabulary_prefixes",
    "words_apart",
]

#: A word of an admitted chunk whose MiniLM cosine with the question's term is at least this is the term's synonym
#: or variant ("licence"/"license" 0.8+, "reformatted"/"reformat"); unrelated words of one domain stay below it.
NEAR_COSINE = 0.7

#: Words of a question that say what is asked, not about what: their absence from the evidence says nothing.
_FORM_WORDS = frozenset(
    """
    how what which when where why who whom whose can could should would will shall may might must do does did done
    doing is are was were be been being have has had get gets got getting make makes made making use uses used using
    way ways want wants need needs needed possible able thing things something anything everything someone
    work works working happen happens mean means meaning tell show shows find know see seen look like
    specific particular certain also just only still even really exactly actually instead rather
    good best better right correct proper properly kind type sort lot lots much many number several
    new old first last next other another same different given available supported support supports
    option options way value values case cases part parts let lets try tries without within whether
    call called name named stop stops keep keeps run runs running change changes changed set sets setting
    version versions release releases default defaults added introduced difference differ between
    dont doesnt didnt cant wont isnt arent shouldnt wouldnt couldnt ive youre
    """.split()  # noqa: SIM905
)
_MORPH_PREFIX = 5
_WORD_AS_WRITTEN = _linear.compile(r"\w+", name="answerability.term_word")


def _stem(w: str) -> str:
    return tx.stem(w, ies=False)


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Common English words (``modelfiles/common_words.txt``, from MiniLM's own vocabulary): not key terms."""
    text = modelfiles.path("common_words.txt").read_text(encoding="utf-8")
    return frozenset(w for w in text.split() if not w.startswith("#") and w.isalpha())


def _names(question: str) -> set[str]:
    """The question's words written as names: capitalised past its first word, all capitals, or with a digit."""
    toks = _WORD_AS_WRITTEN.findall(tx.nfc(question))
    out = set()
    for i, w in enumerate(toks):
        mixed = any(ch.isdigit() for ch in w) and any(ch.isalpha() for ch in w)
        if mixed or (len(w) >= 2 and (w.isupper() or (i > 0 and w[0].isupper()))):
            out.add(w.lower())
    return out


def _inflected_common(w: str, common: frozenset[str]) -> bool:
    """Whether ``w`` is an inflection of a common word: "upgrading" (upgrade), "stopped" (stop), "fixes" (fix).
    MiniLM's vocabulary, which the common list comes from, holds many words only in their base form."""
    for suffix in ("ing", "ed", "es", "s"):
        base = w.removesuffix(suffix)
        if base == w or len(base) < 3:
            continue
        if base in common or base + "e" in common or (base[-1] == base[-2] and base[:-1] in common):
            return True
    return False


def question_terms(question: str | Question) -> list[str]:
    """The question's key terms, lower-cased and stemmed, in order: its content words in any case that are not
    common English words (``borg``, ``json``, ``endpoint``) or that it writes as names (``REST``, ``Windows``),
    less the words of the question's form ("how", "use", "version" ...)."""
    q = read_question(question)
    common = common_words()
    names = _names(q.text)
    role = _ROLE.match(tx.nfc(q.text))
    if role:  # "As a Platform Engineer, ...": the asker's role, capitalised, names nothing the docs must hold
        names -= {w.lower() for w in _WORD_AS_WRITTEN.findall(role.group(1))} & _ROLE_WORDS
    out: dict[str, None] = {}
    for w in q.content_terms:
        st = _stem(w)
        short = len(w) < 3 and w not in names
        if short or w in _FORM_WORDS or st in _FORM_WORDS or w.isdigit():
            continue
        if w not in names and form_word_typo(w):  # "wht", "tryin": the question's form, misspelt
            continue
        if w not in names and (w in common or st in common or _inflected_common(w, common)):
            continue
        out[st] = None
    return list(out)


#: The asker's role opening a question ("As a Platform Engineer, ...", "As the team lead I ..."): its role words
#: (:data:`_ROLE_WORDS`), capitalised, are no names ("As a Windows user": Windows stays one).
_ROLE = _linear.compile(
    r"^\s*as\s+(?:an?|the|our)\s+([^,.;:?!]{1,100}?)(?:,|\s+(?:i|we)\b|$)", re.IGNORECASE, name="answerability.role"
)


_ROLE_WORDS = frozenset(
    """
    engineer engineers engineering developer developers admin admins administrator administrators lead leader manager
    architect architects platform team member devops sre analyst consultant head director student beginner newcomer
    contributor maintainer senior junior principal staff
    """.split()  # noqa: SIM905
)


@lru_cache(maxsize=1)
def _form_forms() -> frozenset[str]:
    """The form words (:data:`_FORM_WORDS`) with their ``-s``, ``-ed`` and ``-ing`` endings ("trying")."""
    out = set(_FORM_WORDS)
    for f in _FORM_WORDS:
        stem = f[:-1] if f.endswith("e") and len(f) > 3 else f
        out |= {f + "s", f + "ed", stem + "ing", stem + "ed"}
    return frozenset(out)


#: The question words whose three-letter misspellings ("wht", "hw") are read as them; of other form words only
#: misspellings of four letters or more are ("tryin"): "ext" (next), "cat" (cast) are terms.
_QUESTION_WORDS = frozenset({"what", "when", "where", "which", "who", "whom", "whose", "why", "how"})


@lru_cache(maxsize=1)
def _form_deletions() -> frozenset[str]:
    """Every form (:func:`_form_forms`) with one letter left out (of four letters or more; three for a question
    word)."""
    forms = _form_forms()
    short = {w for q in _QUESTION_WORDS for w in _drop1(q) if len(w) == 3}
    out = {w for f in forms for w in _drop1(f) if len(w) >= 4 or w in short}
    return frozenset(out - forms)


def _drop1(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def form_word_typo(word: str) -> bool:
    """Whether ``word`` (lower case) is a form word of a question ("what", "trying", "how") with one letter left out
    or added ("wht", "tryin", "hoow"): a misspelt form word is no key term, though no passage holds it as written.
    A letter changed is not read ("borg" is not "born").

    Example:
        >>> [form_word_typo(w) for w in ("wht", "tryin", "whatt", "borg", "what", "json")]
        [True, True, True, False, False, False]
    """
    if len(word) < 3 or word in _form_forms():
        return False
    if word in _form_deletions():
        return True
    forms = _form_forms()
    return len(word) >= 4 and any(word[:i] + word[i + 1 :] in forms for i in range(len(word)))


def _within(a: str, b: str, limit: int) -> bool:
    """Whether the edit distance of ``a`` and ``b`` is at most ``limit`` (banded, stops early)."""
    if abs(len(a) - len(b)) > limit:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        if min(cur) > limit:
            return False
        prev = cur
    return prev[-1] <= limit


def misspelt_in(term: str, vocab: AbstractSet[str]) -> bool:
    """Whether ``term`` is a misspelling of a word of ``vocab`` with the same first and last letters: one edit away
    (two for a word of seven letters or more, three from twelve; for one of four, a letter left out or added only:
    "chrt" and "chart", not "borg" and "born")."""
    if len(term) < 4:
        return False
    limit = 3 if len(term) >= 12 else 2 if len(term) >= 7 else 1
    for w in vocab:
        if len(w) < 3 or w[0] != term[0] or w[-1] != term[-1] or abs(len(w) - len(term)) > limit:
            continue
        if len(term) < 5 and len(w) == len(term):
            continue
        if _within(term, w, limit):
            return True
    return False


#: Irregular past forms of verbs a question about software uses ("undid" asks about "undo"), as base forms.
_IRREGULAR = {
    "did": "do",
    "done": "do",
    "made": "make",
    "ran": "run",
    "wrote": "write",
    "written": "write",
    "went": "go",
    "gone": "go",
    "got": "get",
    "gotten": "get",
    "built": "build",
    "sent": "send",
    "kept": "keep",
    "lost": "lose",
    "left": "leave",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "found": "find",
    "broke": "break",
    "broken": "break",
    "chose": "choose",
    "chosen": "choose",
    "hid": "hide",
    "hidden": "hide",
    "froze": "freeze",
    "frozen": "freeze",
    "began": "begin",
    "begun": "begin",
    "threw": "throw",
    "thrown": "throw",
    "saw": "see",
    "seen": "see",
    "shown": "show",
    "bound": "bind",
    "fed": "feed",
    "led": "lead",
    "read": "read",
    "split": "split",
    "set": "set",
    "put": "put",
    "cut": "cut",
    "shut": "shut",
    "reset": "reset",
}
#: Prefixes an irregular form may carry ("undid", "rewrote", "rebuilt").
_VERB_PREFIXES = ("", "un", "re", "over", "under", "out", "with", "up")
#: Derivational endings whose base word answers the same question ("readable" and "read", "usability" and "use").
_DERIVED = ("ability", "ibility", "able", "ible", "ably")


def _base_forms(term: str) -> set[str]:
    """Other forms of ``term`` a passage may hold instead: a short word's plural without its ``s`` ("ids": "id"),
    the base of an irregular past ("undid": "undo"), of a derived adjective ("readable": "read")."""
    out: set[str] = set()
    if term.endswith("s") and len(term) >= 3 and not term.endswith("ss"):
        out.add(term[:-1])
    for pre in _VERB_PREFIXES:
        if term.startswith(pre) and term[len(pre) :] in _IRREGULAR:
            out.add(pre + _IRREGULAR[term[len(pre) :]])
    for end in _DERIVED:
        base = term.removesuffix(end)
        if base != term and len(base) >= 3:
            out |= {base, base + "e"}
            if base[-1] == base[-2]:
                out.add(base[:-1])
    return out


def _held(term: str, vocab: AbstractSet[str], prefixes: Container[str]) -> bool:
    if term in vocab:
        return True
    if len(term) >= _MORPH_PREFIX and term[:_MORPH_PREFIX] in prefixes:
        return True
    if _base_forms(term) & vocab:
        return True
    if term.endswith("_") and len(term) >= 3 and any(w.startswith(term) for w in vocab):
        # a fragment of an identifier family ("LC_" for LC_ALL, LC_MESSAGES ...)
        return True
    return misspelt_in(term, vocab)


class _Prefixes:
    """The :data:`_MORPH_PREFIX`-letter prefixes of a vocabulary's words, gathered on the first lookup: most
    questions' terms are held as written, and then no prefix is ever looked up."""

    __slots__ = ("_set", "_vocab")

    def __init__(self, vocab: AbstractSet[str]) -> None:
        self._vocab = vocab
        self._set: frozenset[str] | None = None

    def __contains__(self, prefix: object) -> bool:
        if self._set is None:
            self._set = frozenset(w[:_MORPH_PREFIX] for w in self._vocab if len(w) >= _MORPH_PREFIX)
        return prefix in self._set


def _vocab(texts: Sequence[str]) -> tuple[set[str], _Prefixes]:
    vocab: set[str] = set()
    for t in texts:
        vocab |= tx.word_stems(t)  # each distinct word stemmed once, once per text: the same set
    return vocab, _Prefixes(vocab)


#: A question with at least this many words (common ones included) that the whole knowledge base holds in no form
#: (:func:`kb_absent_words`) is not one its docs answer. Measured on ``../shared/train``'s documentation files, each
#: file's candidates as the knowledge base: two or more such words in 0-1.3% of a file's own questions (Doc2Dial,
#: MedQuAD, API Zoo, PolicyQA, QMSum) and in 6-43% of the other files' questions; one such word in 0-10% of the
#: own questions (a user's word the docs never use: "throwaway"), so one is not enough.
KB_ABSENT_MIN = 2
#: Function words the content-word reader keeps that say nothing of the topic: not read against the knowledge base.
_FUNCTION_WORDS = frozenset(
    [
        *("while", "during", "after", "before", "since", "until", "through", "across", "yet", "upon", "onto"),
        "towards",
        # the words of a conversation, not of its topic ("Hello, ...", "If yes, how?")
        *("yes", "hello", "hi", "hey", "thanks", "thank", "okay", "ok", "dear", "sir", "madam"),
    ]
)
#: The words a knowledge base's vocabulary keeps (:func:`kb_vocabulary`): alphabetic, of this many letters.
_VOCAB_LEN = (3, 30)


def kb_vocabulary(texts: Iterable[str]) -> frozenset[str]:
    """The stems of the alphabetic words of ``texts`` (a knowledge base's chunks, titles included), lower-cased:
    what :func:`kb_absent_words` reads a question against."""
    lo, hi = _VOCAB_LEN
    out: set[str] = set()
    for t in texts:
        out |= {_stem(w) for w in tx.words(t) if w.isalpha() and lo <= len(w) <= hi}
    return frozenset(out)


def vocabulary_prefixes(vocabulary: AbstractSet[str]) -> frozenset[str]:
    """The prefixes :func:`kb_absent_words` reads another form of a word by ("configur" for "configuring")."""
    return frozenset(w[:_MORPH_PREFIX] for w in vocabulary if len(w) >= _MORPH_PREFIX)


def kb_absent_words(
    question: str | Question, vocabulary: AbstractSet[str], prefixes: AbstractSet[str] | None = None
) -> tuple[str, ...]:
    """The question's content words (any case, common ones included; not the words of its form, "how", "use" ...)
    that ``vocabulary`` (:func:`kb_vocabulary`: the whole knowledge base) holds in no form: not as written, not as
    another form of the word, not misspelt. As the question writes them, in its order."""
    q = read_question(question)
    if q.script is not None or not vocabulary:
        return ()
    pre = prefixes if prefixes is not None else vocabulary_prefixes(vocabulary)
    lo, hi = _VOCAB_LEN
    out: dict[str, None] = {}
    for w in q.content_terms:
        st = _stem(w)
        if not w.isalpha() or not lo <= len(w) <= hi or w in _FORM_WORDS or st in _FORM_WORDS or w in _FUNCTION_WORDS:
            continue
        if not _held(st, vocabulary, pre):
            out[st] = None
    return _as_written(q.text, list(out))


#: Endings by which two words of one stem are forms of one word ("configuring" and "configuration", "formatter"
#: and "format"); what is left after a shared start that is not one of these ("enterprise" and "enter",
#: "internet" and "interact", "colleague" and "collect") makes another word.
_ENDINGS = frozenset(
    """
    e s es ed d ing ings er ers or ors ion ions ation ations ment ments able ible ability ibility ity ive ively ly al
    ally ure ures ence ences ance ances ent ents ant ants ize ise izes ises ized ised izing ising ization isation y ies
    ied ness ic ical ative ator ators ual ually ful ism ist ists tion tions sion sions tive tor tors
    """.split()  # noqa: SIM905
) | {""}
#: Two forms of one word share at least this many first letters (:func:`forms_of_one_word`).
_SHARED_START = 4


def _ending(rest: str, last: str) -> bool:
    return rest in _ENDINGS or (len(rest) > 1 and rest[0] == last and rest[1:] in _ENDINGS)  # "formatter": t+er


def forms_of_one_word(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (lower-case, stemmed) are forms of one word: they share their first letters (four
    or more) and differ only by endings (:data:`_ENDINGS`; a doubled last consonant and a dropped ``e`` allowed)."""
    if a == b:
        return True
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    if n < _SHARED_START:
        return False
    last = a[n - 1]
    if _ending(a[n:], last) and _ending(b[n:], last):
        return True
    # a dropped "e" splits the shared start one letter early: "compil-e"/"compil-ing" read as "compile"/"compiling"
    return n > _SHARED_START and a[n - 1 :] in _ENDINGS and b[n - 1 :] in _ENDINGS


#: Two of the question's consecutive content words stand together in a passage when at most this many words apart.
RELATION_WINDOW = 4


def _relation_words(q: Question) -> list[str]:
    out: dict[str, None] = {}
    for w in q.content_terms:
        st = _stem(w)
        if len(w) < 3 or w.isdigit() or w in _FORM_WORDS or st in _FORM_WORDS or w in _FUNCTION_WORDS:
            continue
        out[st] = None
    return list(out)


def words_apart(question: str | Question, texts: Sequence[str]) -> bool:
    """Whether the question's words stand apart in ``texts``: it has two content words or more (not the words of
    its form), and no passage holds two that follow each other in the question (in any form,
    :func:`forms_of_one_word`) within :data:`RELATION_WINDOW` words. A near miss's passages name its words one at a
    time ("archive" in one, "read-only" in another), not the relation the question asks about."""
    q = read_question(question)
    ws = _relation_words(q)
    pairs = list(itertools.pairwise(ws))
    if not pairs:
        return False
    for t in texts:
        toks = [_stem(w) for w in tx.words(t)]
        at: dict[str, list[int]] = {w: [] for w in ws}
        for i, tok in enumerate(toks):
            for w in ws:
                if tok[:_SHARED_START] == w[:_SHARED_START] and forms_of_one_word(w, tok):
                    at[w].append(i)
        for a, b in pairs:
            if any(abs(i - j) <= RELATION_WINDOW for i in at[a] for j in at[b]):
                return False
    return True


_VEC_LOCK = threading.Lock()
_VECS: LRU[tuple[str, str], np.ndarray] = LRU(60_000)


def _inner(embedder: Embedder) -> Embedder:
    # a knowledge base's cache holds passage vectors; words go to this module's own cache, not into it
    inner = getattr(embedder, "inner", None)
    return inner if inner is not None and hasattr(inner, "embed") else embedder


def word_vectors(embedder: Embedder, words: Sequence[str]) -> np.ndarray:
    """The encoder's vectors of single words (rows L2-normalised), cached per embedder name."""
    emb = _inner(embedder)
    name = str(getattr(emb, "name", type(emb).__name__))
    out: list[np.ndarray | None] = []
    todo: list[str] = []
    with _VEC_LOCK:
        for w in words:
            v = _VECS.get((name, w))
            out.append(v)
            if v is None:
                todo.append(w)
    if todo:
        todo = list(dict.fromkeys(todo))
        got = np.asarray(emb.embed(todo), dtype=np.float32)
        with _VEC_LOCK:
            for w, v in zip(todo, got, strict=True):
                _VECS.put((name, w), v)
        new = dict(zip(todo, got, strict=True))
        out = [v if v is not None else new[w] for v, w in zip(out, words, strict=True)]
    if not out:
        return np.zeros((0, int(getattr(emb, "dim", 384))), dtype=np.float32)
    return np.vstack([np.asarray(v, dtype=np.float32) for v in out])


def _near(embedder: Embedder, terms: Sequence[str], texts: Sequence[str], limit: int = 800) -> set[str]:
    """The terms a word of ``texts`` is close to in the encoder's eyes (cosine >= :data:`NEAR_COSINE`)."""
    words = list(dict.fromkeys(w for t in texts for w in tx.content_tokens(t) if len(w) >= 3 and w.isalpha()))
    words = words[:limit]
    if not terms or not words:
        return set()
    tv = word_vectors(embedder, list(terms))
    wv = word_vectors(embedder, words)
    sims = tv @ wv.T
    return {t for t, row in zip(terms, sims, strict=True) if float(row.max()) >= NEAR_COSINE}


@dataclass(frozen=True, slots=True)
class TermCheck:
    """What the admitted chunks lack of the question's key terms."""

    missing: tuple[str, ...] = ()
    """Key terms (as the question writes them) that no admitted chunk holds, in any form or as a close word."""
    absent: tuple[str, ...] = ()
    """Those of :attr:`missing` that no retrieved candidate holds either (the knowledge base lacks them)."""
    answer_type: str = ""
    """The answer type the question states and no admitted chunk holds (``version``, ``default``, ``steps``,
    ``quantity``, ``price``, ``release``)."""
    type_absent: bool = False
    """Whether no retrieved candidate holds :attr:`answer_type` either, where that is evidence the knowledge base
    lacks the answer (:data:`ABSENT_TYPES`: a price, a release's changes, the thing a count counts)."""
    counted: str = ""
    """The word a count question counts ("days" of "after how many days"), when it asks for a count."""


_COMPOUND = _linear.compile(r"\b[A-Za-z]{2,}(?:-[A-Za-z]{2,})+\b", name="answerability.compound")
#: The last part of a compound may end otherwise ("single-quoted" and "single quotes"): its first letters, less
#: this many, are read (at least four).
_COMPOUND_END = 2


#: Parts that make a compound of any word ("multi-location", "video-based", "non-empty"): no term of their own.
_AFFIX_PARTS = frozenset(
    """
    multi non pre post anti auto co self semi sub super inter intra cross based like related specific friendly wise
    free style aware enabled level driven oriented only re
    """.split()  # noqa: SIM905
)


def compounds(question: str | Question) -> list[str]:
    """The hyphenated compounds the question writes ("two-factor", "patch-queue", "machine-translate"), lower-cased:
    one term each, which a passage holds only as such (hyphenated, spaced or joined), not as its parts apart. A
    compound of stop words and form words only ("how-to") is none."""
    q = read_question(question)
    out: dict[str, None] = {}
    for m in _COMPOUND.finditer(tx.nfc(q.text)):
        c = m.group(0).lower()
        parts = c.split("-")
        if all(p in tx.STOPWORDS or p in _FORM_WORDS for p in parts) or set(parts) & _AFFIX_PARTS:
            continue
        if len(parts) >= 3 and parts[0] == parts[-1]:  # an idiom ("step-by-step", "side-by-side"), not a term
            continue
        out[c] = None
    return list(out)


def _holds_compound(compound: str, texts: Sequence[str]) -> bool:
    """Whether one of ``texts`` holds ``compound`` hyphenated, spaced or joined, its last part in any ending."""
    parts = compound.split("-")
    last = parts[-1][: max(4, len(parts[-1]) - _COMPOUND_END)]
    joined = "".join(parts[:-1]) + last
    n = len(parts)
    for t in texts:
        ws = tx.words(t)
        for i, w in enumerate(ws):
            if w.startswith(joined):
                return True
            if (
                w == parts[0]
                and i + n <= len(ws)
                and ws[i + 1 : i + n - 1] == parts[1:-1]
                and ws[i + n - 1].startswith(last)
            ):
                return True
    return False


def _as_written(question: str, stems: Sequence[str]) -> tuple[str, ...]:
    shown: dict[str, str] = {}
    for m in _WORD_AS_WRITTEN.findall(question):
        shown.setdefault(_stem(m.lower()), m)
    return tuple(shown.get(s, s) for s in stems)


def check_terms(
    question: str | Question,
    texts: Sequence[str],
    pool: Sequence[str] | None = None,
    embedder: Embedder | None = None,
) -> TermCheck:
    """Read the question's key terms against the admitted ``texts`` (and the retrieved ``pool``); the question's
    record (:func:`admit.question.read_question`) is read, not its text again."""
    q = read_question(question)
    question = q.text
    terms = question_terms(q)
    asked_ids = sorted(q.identifiers)
    vocab, prefixes = _vocab(texts)
    lacking = [t for t in terms if not _held(t, vocab, prefixes)]
    if lacking and embedder is not None:
        near = _near(embedder, lacking, texts)
        lacking = [t for t in lacking if t not in near]
    low_text = " ".join(tx.nfc(t).lower() for t in texts)
    ids_missing = [i for i in asked_ids if i.lower() not in low_text]
    ids_missing += [c for c in compounds(q) if not _holds_compound(c, texts)]
    id_stems = {_stem(w) for i in ids_missing for w in tx.words(i)}
    lacking = [t for t in lacking if t not in id_stems]
    everything = list(texts) + [t for t in pool or () if t not in set(texts)]
    absent: list[str] = []
    absent_ids: list[str] = []
    if lacking or ids_missing:
        pvocab, pprefixes = _vocab(everything)
        absent = [t for t in lacking if not _held(t, pvocab, pprefixes)]
        absent_ids = _ids_absent(ids_missing, everything)
    answer_type, type_absent = _answer_type(q, texts, everything)
    unit = _counted(q)
    return TermCheck(
        missing=(*ids_missing, *_as_written(question, lacking)),
        absent=(*absent_ids, *_as_written(question, absent)),
        answer_type=answer_type,
        type_absent=type_absent,
        counted=_as_written(question, [unit])[0] if unit else "",
    )


def _ids_absent(ids_missing: Sequence[str], everything: Sequence[str]) -> list[str]:
    """The identifiers and compounds the admitted passages lack that no retrieved candidate holds either."""
    low_pool = " ".join(tx.nfc(t).lower() for t in everything)
    return [i for i in ids_missing if (not _holds_compound(i, everything) if "-" in i else i.lower() not in low_pool)]


def _answer_type(q: Question, texts: Sequence[str], everything: Sequence[str]) -> tuple[str, bool]:
    """The answer type the admitted ``texts`` lack, and whether it is one no retrieved candidate (``everything``)
    holds either, which says the knowledge base lacks the answer (a price, the release's section, the thing
    counted, a stated default): then that type is the reason given."""
    absent_type = answer_type_missing(q, everything, absent=True)
    if absent_type:
        return absent_type, True
    return answer_type_missing(q, texts), False


#: What a question asks for, by the answer type it asks (each read against the admitted texts by
#: :func:`answer_type_missing`).
_ASKS = _linear.table(
    "answerability",
    {
        "asks_version": (
            r"\b((which|what)\s+(\w+\s+)?(version|release)|since\s+(which|what|when)|introduced\s+in|added\s+in)\b"
        ),
        "asks_default": r"\bdefaults?\b",
        # a quantity: "how many/much/long/often ..." at the question's start (after at most two words: "After how
        # many days ..."), or "what is the maximum/minimum ...". Not "How do I print how many ...": that asks a step.
        "asks_quantity": (
            r"^\s*(?:\w+\s+){0,2}?how\s+(many|much|long|often|big|large|far|old)\b"
            r"|^\s*(what|which)\s+(is|are|was|were)\s+the\s+(maximum|minimum|max|min|largest|smallest|highest|lowest)\b"
        ),
        "asks_price": (
            r"\bhow\s+much\b[^?]*\b(cost|costs|charge|charges|pay|price|priced)\b"
            r"|\b(what|which)(\s+(is|are|was|were)|'s)\s+the\s+(price|prices|pricing|cost|costs|fee|fees)\b"
            r"|\bprice\s+of\b"
        ),
        # a release's changes: "What changed in 23.1.0?", "What's new in psycopg 3.2?", "the release notes of 1.4"
        # (the question names the release: :attr:`Question.releases`)
        "asks_release": (
            r"\b(what|which)(\s+|'s\s+|\s+is\s+|\s+are\s+|\s+was\s+|\s+were\s+)(new|changed|changes|fixed|added"
            r"|removed)\b|\b(changes|changelog|release\s+notes?)\s+(in|of|for)\b"
        ),
        # the thing a count counts: "how many days", "the maximum number of patches"
        "counted_unit": (
            r"^\s*(?:\w+\s+){0,2}?how\s+many\s+(\w+)|^\s*(?:what|which)(?:\s+(?:is|are|was|were)"
            r"|'s)\s+the\s+(?:maximum|minimum|max|min|total)\s+number\s+of\s+(\w+)"
        ),
    },
    re.IGNORECASE,
)
_VERSION_Q, _DEFAULT_Q, _QUANTITY_Q = _ASKS["asks_version"], _ASKS["asks_default"], _ASKS["asks_quantity"]
_PRICE_Q, _RELEASE_Q, _UNIT_Q = _ASKS["asks_price"], _ASKS["asks_release"], _ASKS["counted_unit"]
#: The values a text holds for those answer types.
_VALUES = _linear.table(
    "answerability",
    {
        "version_string": (r"\b\d+\.\d+(\.\d+)?", 0),
        "value": r"\d|[\"'`=]|\b(true|false|none|null|on|off|yes|no|enabled|disabled)\b",
        "step": (
            r"(^|\s)--?[a-z][\w-]*|`[^`]+`|\$ |\w+\s*=\s*\S|\b\w+\.\w{2,5}\b|\b[a-z]+_[a-z_]+\b|^\s*(\d+\.|[-*])\s"
            r"|\b(run|use|add|set|pass|call|type|enter|configure|install|create|edit|write|put|enable|disable)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        "quantity": (
            r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand|once|twice|free|unlimited"
            r"|no\s+limit|any\s+number)\b"
        ),
        "default_word": r"\bdefault(s|ed)?\b",
        "price": (
            "[$\u20ac\u00a3\u00a5]"
            r"\s?\d|\d\s?(usd|eur|gbp|dollars?|euros?|cents?)\b|\bfree\s+of\s+charge\b|\bno\s+(cost|charge)\b"
            r"|\b(is|are|for)\s+free\b|\bgratis\b|\bpric(e|es|ing)\b[^.\n]{0,40}\d"
        ),
    },
    re.IGNORECASE,
)
_VERSION, _VALUE, _STEP = _VALUES["version_string"], _VALUES["value"], _VALUES["step"]
_QUANTITY, _DEFAULT_WORD, _PRICE = _VALUES["quantity"], _VALUES["default_word"], _VALUES["price"]
_NEAR_VALUE = 60


def _beside(q: Question, text: str, value: _linear.LinearPattern, extra: tuple[str, ...] = ()) -> bool:
    """Whether ``text`` holds ``value`` within 60 characters of one of the question's content words (or ``extra``)."""
    low = tx.nfc(text).lower()
    anchors = {*extra, *(w for w in q.content_terms if len(w) >= 3 and w not in _FORM_WORDS)}
    for a in anchors:
        start = low.find(a)
        while start >= 0:
            window = low[max(0, start - _NEAR_VALUE) : start + len(a) + _NEAR_VALUE]
            if value.search(window):
                return True
            start = low.find(a, start + 1)
    return False


#: How far (characters) a stated default's value and the question's word may stand from the word "default".
_NEAR_DEFAULT = 80


def _states_default(q: Question, text: str) -> bool:
    """Whether ``text`` states a default of what the question asks about: the word "default" with a value and one of
    the question's content words (not "default") within 80 characters of it ("port (default: 8000)")."""
    low = tx.nfc(text).lower()
    anchors = [w[:_MORPH_PREFIX] for w in _relation_words(q) if not w.startswith("default")]
    for m in _DEFAULT_WORD.finditer(low):
        window = low[max(0, m.start() - _NEAR_DEFAULT) : m.end() + _NEAR_DEFAULT]
        if _VALUE.search(window) and any(a in window for a in anchors):
            return True
    return False


def _value_beside(q: Question, text: str) -> bool:
    """Whether ``text`` holds a value (a number, a quoted or code word, true/false/on/off) within 60 characters
    of the word "default" or of one of the question's content words (the option: "listens on port 7443")."""
    return _beside(q, text, _VALUE, ("default",))


#: Words of a price question that ask for the price, not what is priced.
_PRICE_WORDS = frozenset({"cost", "costs", "charge", "charges", "pay", "price", "prices", "priced", "pricing", "fee",
                          "fees", "much"})  # fmt: skip


#: How far (characters) the amount and the word for what it prices may stand apart.
_NEAR_PRICE = 200


def _price_of(q: Question, text: str) -> bool:
    """Whether ``text`` states a price (:data:`_PRICE`) within 200 characters of a word for what the question
    prices (one of its content words other than the price words, in any form): "11000 USD" raised for a sprint
    is no price of an "enterprise support contract", nor is a licence's "free of charge" beside its "CONTRACT,
    TORT" clause further down."""
    things = [w for w in _relation_words(q) if w not in _PRICE_WORDS]
    low = tx.nfc(text).lower()
    for m in _PRICE.finditer(low, limit=32):
        if not things:
            return True
        window = low[max(0, m.start() - _NEAR_PRICE) : m.end() + _NEAR_PRICE]
        if any(_holds_word([window], w) for w in things):
            return True
    return False


#: The answer types whose absence from every retrieved candidate says the knowledge base lacks the answer: no
#: price anywhere, no section of the release asked about, the counted thing nowhere, no candidate stating a default
#: of what the question names (a question asking for a default, not a how-to).
ABSENT_TYPES = frozenset({"price", "release", "unit", "default"})


def _heads(text: str) -> list[str]:
    """A passage's title (its first line) and its heading lines ("## 1.4.0", "Version 1.4.0 (2022-09-27)")."""
    lines = tx.nfc(text).splitlines()
    return lines[:1] + [ln for ln in lines[1:] if ln.lstrip().startswith("#") or len(ln.split()) <= 6]


def _names_release_section(q: Question, text: str) -> bool:
    return any(q.asked_in(releases_in(h)) is not None for h in _heads(text) if h.strip())


def _counted(q: Question) -> str:
    """The word a count question counts ("days" of "after how many days"), stemmed; ``""`` when none."""
    m = _UNIT_Q.search(q.text)
    if m is None:
        return ""
    w = (m.group(1) or m.group(2) or "").lower()
    if w in tx.STOPWORDS or w in _FORM_WORDS or w in _NOT_UNITS or len(w) < 3:
        return ""
    return _stem(w)


#: Words after "how many" that count occurrences or time, not a thing a passage names beside its number.
_NOT_UNITS = frozenset({"times", "time", "more", "fewer", "less", "ways"})


def _holds_word(texts: Sequence[str], word: str) -> bool:
    for t in texts:
        for tok in set(tx.words(t)):
            st = _stem(tok)
            if st[:_SHARED_START] == word[:_SHARED_START] and forms_of_one_word(word, st):
                return True
            if st == word:
                return True
    return False


def answer_type_missing(question: str | Question, texts: Sequence[str], *, absent: bool = False) -> str:
    """The answer type the question states and none of ``texts`` holds: ``version`` (a version string), ``default``
    (a value beside the word "default" or beside one of the question's words), ``steps`` (a command, option, setting
    or step), ``quantity`` ("how many", "what is the maximum": a number beside one of the question's words),
    ``price`` ("how much does it cost": an amount of money, or "free"), ``release`` ("what changed in 23.1.0": a
    title or heading naming that release), ``unit`` ("how many days": the counted word in no passage), or ``""``.

    ``absent``: read only the types of :data:`ABSENT_TYPES` (over a whole retrieved list); a default there is the
    word "default" with a value and one of the question's words beside it (:func:`_states_default`)."""
    q = read_question(question)
    question = q.text
    if _PRICE_Q.search(question) and not any(_price_of(q, t) for t in texts):
        return "price"
    if q.releases and _RELEASE_Q.search(question) and not any(_names_release_section(q, t) for t in texts):
        return "release"
    unit = _counted(q)
    if absent:
        if unit and not _holds_word(texts, unit):
            return "unit"
        if (
            _DEFAULT_Q.search(question)
            and not ASKS_HOWTO.search(question)
            and not any(_states_default(q, t) for t in texts)
        ):
            return "default"
        return ""
    if _VERSION_Q.search(question) and not any(_VERSION.search(t) for t in texts):
        return "version"
    if _DEFAULT_Q.search(question) and not any(_value_beside(q, t) for t in texts):
        return "default"
    if ASKS_HOWTO.search(question) and not any(_STEP.search(t) for t in texts):
        return "steps"
    if _QUANTITY_Q.search(question) and not any(_beside(q, t, _QUANTITY) for t in texts):
        return "quantity"
    if unit and not _holds_word(texts, unit):
        return "unit"
    return ""
