"""``admit adapt``: fit the answerability thresholds to one knowledge base, without labels.

From the user's own ingested chunks it builds questions whose answer the knowledge base holds, and questions it
does not answer, asks them through the real search path (retrieval, rerank, the setwise pruner, the verdict) and
sets each answerability model's thresholds where they separate the two *on these docs*
(:class:`~admit.answerability.adaptation.Adaptation`, stored in the knowledge base).

**Answerable** (the section is the gold): a section's heading ("Configuration file"), its lead sentence where it
shares the heading's words, a definition-list term or an option line ("--check"). Each is **paraphrased** before it
is asked: words dropped, words replaced by the knowledge base's own near neighbours (by the encoder, among its
frequent words), the rest reordered. Unparaphrased, every such question holds all its words in one chunk, and a fit
on them learns word coverage (real questions hold about three quarters of theirs).

**Unanswerable**: the same questions with their own section and its near copies (same heading, or a vector cosine
of 0.95 or more to a gold chunk) removed from the candidates (near misses: the docs' neighbourhood without the
answer), and questions about other products (``foreign_questions.txt``, written for this; a question whose product
the knowledge base names is skipped).

**The fit**: ``threshold`` is set so that at most :data:`MAX_NA_ANSWERABLE` of the paraphrased answerable questions
that the rules leave to the probability fall below it ("not answered"; a rule's verdict stands whatever the
threshold); ``answered_at`` so that at most :data:`MAX_UNSURE` of them fall between the two ("unsure"). Models with
too few questions keep the shipped thresholds. The figures (before and after, and a two-fold estimate on questions
the fit did not see) are stored with it.

**The pruner's cut** (:func:`fit_keep_most`, setwise's ``keep_most``): the smallest count of most probable admitted
chunks that still holds the section of :data:`CUT_GOLD_SHARE` of the answerable questions. Once one is fitted, every
question is asked again with it and the thresholds are fitted on those answers (the verdict reads what is admitted).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from admit import _linear
from admit import _text as tx
from admit._cuts import cross_cut, short_cut
from admit.answerability import features as answer_features
from admit.answerability import load_models
from admit.answerability.adaptation import Adaptation
from admit.answerability.model import ABSENT_NAME_BELOW
from admit.answerability.pages import kb_page_names
from admit.answerability.stage import SIMILARITY_IN_REASON
from admit.answerability.terms import KB_ABSENT_MIN, kb_absent_words, kb_vocabulary, vocabulary_prefixes
from admit.errors import ConfigError
from admit.kb.store import ChunkRecord
from admit.types import AnswerState, Principal

if TYPE_CHECKING:
    from admit.backends.embedders import Embedder
    from admit.kb.knowledge_base import KnowledgeBase

__all__ = [
    "CROSS_MARGIN_DEFAULT",
    "CUT_GOLD_SHARE",
    "FLOOR_SHARE",
    "MAX_NA_ANSWERABLE",
    "MAX_UNSURE",
    "AdaptCase",
    "AdaptOptions",
    "Neighbours",
    "SampleOptions",
    "adapt",
    "build_cases",
    "final_state",
    "fit_cross_margin",
    "fit_keep_most",
    "fit_short_below",
    "fit_similarity_floor",
    "fit_thresholds",
    "paraphrase",
    "pseudo_questions",
]

_Setting = TypeVar("_Setting", int, float)
"""A cut's setting on its grid (a word count, a margin)."""

#: The share of the answerable pseudo-questions the fitted threshold may say "not answered" of (below the 5%
#: target on real questions: the pseudo-questions are easier than a user's, even paraphrased).
MAX_NA_ANSWERABLE = 0.03
#: The share of the answerable pseudo-questions the fitted band may leave "unsure" (0: the adapted thresholds say
#: yes or no; "unsure" stays the rules' word, a key term no admitted chunk holds. A band of 5% left real answerable
#: questions of the docs sites unsure and caught no unanswerable one).
MAX_UNSURE = 0.0
#: A model is fitted only with at least this many answerable and unanswerable questions that reached it.
MIN_CASES = 12
#: The share of the answerable pseudo-questions (of those the thresholds leave answered) the similarity floor may
#: say "not answered" of: their best passage is less similar to them than this knowledge base's answers are to theirs.
FLOOR_SHARE = 0.02
#: The fitted cut (setwise's ``keep_most``) keeps at least this share of the answerable pseudo-questions whose
#: section the uncut pruner admitted: the smallest count that does is the knowledge base's cut.
CUT_GOLD_SHARE = 0.99
#: The largest cut tried; a knowledge base that needs more keeps the shipped (uncut) behaviour.
CUT_MAX = 8
#: The short-chunk cut (setwise's ``short_below``) keeps at least this share of the answerable pseudo-questions whose
#: section the uncut pruner admitted: the largest word count of :data:`SHORT_GRID` that does is the knowledge base's.
#: At 0.99 (``keep_most``'s share) the six docs sites' useful share went 41% -> 42%, at 0.97 41% -> 44% (held-out
#: 37% -> 38% and 40%), no answer lost either way: the pseudo-questions' own sections are often short headings'
#: sections, which real questions' answers seldom are (docs/results.md, issue 46, the short-chunk cut).
SHORT_GOLD_SHARE = 0.97
#: The word counts tried for the short-chunk cut, the largest first.
SHORT_GRID = (150, 100, 80, 60, 40, 20)
#: The cross-encoder cut (setwise's ``cross_margin``) keeps at least this share of the answerable pseudo-questions whose
#: section the pruner admitted (after the short-chunk cut): the smallest margin of :data:`CROSS_GRID` that does is the
#: knowledge base's (the short-chunk cut's share, not tuned apart).
CROSS_GOLD_SHARE = 0.97
#: The cross-encoder cut's margin (hundredths of the cross score) ``admit adapt`` sets without fitting it: 2.0.
#: Chosen on the six docs sites (in sample; the held-out sites are the check): 2.5 then 2.0 measured, both keeping 121
#: of the uncut lists' 123 answers; useful 49% at 2.5, 51% at 2.0 (held-out: 43% and 44%, 56 and 55 of 68 answers;
#: docs/results.md, issue 46, the cross-encoder cut).
CROSS_MARGIN_DEFAULT = 200
#: The margins tried for the cross-encoder cut (cross score units), the smallest (the most that is cut) first.
CROSS_GRID = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
#: Near copies of a gold chunk: at least this cosine between stored vectors.
NEAR_COPY = 0.95

_BORING_HEADINGS = frozenset({"index", "intro", "introduction", "section", "contents", "overview", "readme", "toc"})
_OPTION_LINE = _linear.compile(r"(?m)(?:^|\s)(--?[A-Za-z][\w-]{1,30})(?:[ =]|$)", name="adapt.option_line")
_MARKUP = _linear.compile(r"[#>*_`{}\[\]()|]", name="adapt.markup")
_SENTENCE_END = _linear.compile(r"[.!?]\s+|\n+", name="adapt.sentence_end")
_TERM_LINE = _linear.compile(r"(?m)^\s*([A-Za-z][\w .-]{2,40}?)\s*(?::|\n\s{2,})\s*\S", name="adapt.term_line")
_TEMPLATES = {
    "heading": ("What is {x}?", "How does {x} work?", "Tell me about {x}.", "How do I use {x}?"),
    "lead": ("{x}?", "Is it true that {x}?", "Why {x}?"),
    "term": ("What does {x} mean?", "What is {x} used for?"),
    "option": ("What does the {x} option do?", "When should I pass {x}?"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleOptions:
    """How pseudo-questions are sampled, for a knowledge base (:class:`AdaptOptions`) and for an evaluated set's
    passages (:class:`admit.eval.adapt.ListAdaptOptions`)."""

    seed: int = 13
    """The sampling and paraphrase seed (the same passages and seed give the same questions)."""
    paraphrase: bool = True
    """Paraphrase the answerable questions (off only to measure what it changes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptOptions(SampleOptions):
    """What ``admit adapt`` asks and how it fits (the sampling: :class:`SampleOptions`)."""

    sections: int = 150
    """The most sections questions are built from (a seeded sample of a bigger knowledge base)."""
    foreign: int = 60
    """The most questions about other products (as many as the answerable ones, at least 12, up to this)."""
    cut: bool = False
    """Fit the setwise pruner's cut (``keep_most``; off: the verdict only, the pruner keeps its shipped cut)."""
    short: bool = True
    """Fit the setwise pruner's short-chunk cut (``short_below``, :func:`fit_short_below`; off: no such cut)."""
    cross: bool = True
    """Turn on the setwise pruner's cross-encoder cut (``cross_margin``: :data:`CROSS_MARGIN_DEFAULT`, or fitted with
    ``cross_fit``; off: no such cut; without the cross model the pruner notes it and cuts nothing)."""
    cross_fit: bool = False
    """Fit the cross-encoder cut's margin on the pseudo-questions (:func:`fit_cross_margin`: it reads the cross-encoder
    on every answerable pseudo-question's admitted chunks and asks again with the cut, several times the CPU) instead
    of setting :data:`CROSS_MARGIN_DEFAULT`; the thresholds are then fitted on the cut lists."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptCase:
    """One pseudo-question asked of the knowledge base, and what the verdict's probe said."""

    question: str
    kind: str
    """``answerable``, ``near_miss`` or ``foreign``."""
    source: str = ""
    """How the question was built (``heading``, ``lead``, ``term``, ``option``; ``foreign``)."""
    model: str = ""
    """The answerability model that decided."""
    p: float = 0.0
    state: AnswerState | None = None
    """The state with every threshold at 0: ``not_answered`` or ``unsure`` only where a rule said so; ``None``
    where the probe assessed nothing (the thresholds alone decide, :func:`final_state`)."""
    short_held: bool = False
    fold: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Section:
    key: tuple[str, tuple[str, ...]]
    heading: str
    records: tuple[ChunkRecord, ...]


def _sections(records: Sequence[ChunkRecord]) -> list[_Section]:
    by: dict[tuple[str, tuple[str, ...]], list[ChunkRecord]] = {}
    for r in records:
        by.setdefault((r.source_id, tuple(r.heading_path)), []).append(r)
    out = []
    for key, recs in by.items():
        heading = (key[1][-1] if key[1] else recs[0].title).strip()
        out.append(_Section(key=key, heading=heading, records=tuple(sorted(recs, key=lambda r: r.ordinal))))
    return out


def _good_heading(h: str) -> bool:
    words = [w for w in tx.content_tokens(h) if w.isalpha() and len(w) >= 3]
    return bool(words) and not set(words) <= _BORING_HEADINGS and len(tx.words(h)) <= 12


def _lead_sentence(text: str) -> str:
    body = _MARKUP.sub(" ", text)
    for s in _SENTENCE_END.split(body):
        n = len(tx.words(s))
        if 5 <= n <= 22:
            return " ".join(s.split()).rstrip(".!?:;,")
    return ""


def _pseudo_questions(sec: _Section, rng: random.Random) -> list[tuple[str, str]]:
    """``(how it was built, question)`` pairs of one section."""
    return pseudo_questions(sec.heading, sec.records[0].text, "\n".join(r.text for r in sec.records), rng)


def pseudo_questions(heading: str, first: str, text: str, rng: random.Random) -> list[tuple[str, str]]:
    """``(how it was built, question)`` pairs of a section with this ``heading``, first chunk's text and whole
    ``text`` (a passage alone: its title, its text twice)."""
    out: list[tuple[str, str]] = []
    if _good_heading(heading):
        out.append(("heading", rng.choice(_TEMPLATES["heading"]).format(x=heading.strip(" :."))))
        lead = _lead_sentence(first)
        head_words = {tx.stem(w) for w in tx.content_tokens(heading)}
        if lead and head_words & {tx.stem(w) for w in tx.content_tokens(lead)}:
            out.append(("lead", rng.choice(_TEMPLATES["lead"]).format(x=lead[0].lower() + lead[1:])))
    options = list(dict.fromkeys(m.group(1) for m in _OPTION_LINE.finditer(text)))
    if options:
        out.append(("option", rng.choice(_TEMPLATES["option"]).format(x=rng.choice(options[:8]))))
    terms = _TERM_LINE.findall(text)
    terms = [t for t in terms if _good_heading(t) and len(tx.words(t)) <= 4]
    if terms:
        out.append(("term", rng.choice(_TEMPLATES["term"]).format(x=rng.choice(terms[:8]).strip())))
    return out


class Neighbours:
    """The knowledge base's (or a passage set's) frequent words and their near neighbours by the encoder."""

    def __init__(self, embedder: Embedder, texts: Iterable[str], size: int = 2500) -> None:
        df: dict[str, int] = {}
        for t in texts:
            for w in set(tx.content_tokens(t)):
                if w.isalpha() and 4 <= len(w) <= 20:
                    df[w] = df.get(w, 0) + 1
        self.words = [w for w, n in sorted(df.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][:size]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.vocab = set(df)
        if self.words:
            from admit.answerability.terms import word_vectors

            self.vecs = word_vectors(embedder, self.words)
        else:
            self.vecs = np.zeros((0, embedder.dim), dtype=np.float32)

    def near(self, word: str, k: int = 5) -> list[str]:
        i = self.index.get(word)
        if i is None or not len(self.words):
            return []
        sims = self.vecs @ self.vecs[i]
        order = np.argsort(-sims)[: k + 8]
        return [
            self.words[j] for j in order if j != i and 0.45 <= float(sims[j]) < 0.95 and self.words[j][:5] != word[:5]
        ][:k]


def paraphrase(question: str, rng: random.Random, near: Callable[[str], list[str]]) -> str:
    """``question`` with about a third of its content words dropped, a third of the rest replaced by a near
    neighbour (``near``), and its content words reordered in part; the form words ("what", "how do I") stay."""
    toks = question.rstrip("?.").split()
    content = set(tx.content_tokens(question))
    idx = [i for i, t in enumerate(toks) if t.lower().strip(",:;") in content]
    keep_min = max(2, math.ceil(len(idx) * 0.5))
    drop = set(rng.sample(idx, max(0, min(len(idx) - keep_min, round(len(idx) * 0.35)))))
    out = list(toks)
    for i in idx:
        if i in drop:
            out[i] = ""
            continue
        cands = near(toks[i].lower().strip(",:;"))
        if cands and rng.random() < 0.35:
            out[i] = rng.choice(cands[:3])
    kept = [i for i in idx if i not in drop]
    if len(kept) >= 3 and rng.random() < 0.6:
        a, b = rng.sample(kept, 2)
        out[a], out[b] = out[b], out[a]
    text = " ".join(t for t in out if t)
    return text + ("?" if question.rstrip().endswith("?") else "")


def _foreign(vocab: set[str]) -> list[str]:
    text = resources.files("admit.kb").joinpath("foreign_questions.txt").read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#") or "|" not in line:
            continue
        product, q = (x.strip() for x in line.split("|", 1))
        if any(w in vocab for w in tx.words(product)):
            continue
        out.append(q)
    return out


@dataclass(frozen=True, slots=True)
class _Plan:
    question: str
    kind: str
    source: str
    principal: Principal
    gold: frozenset[str]
    fold: int
    drop: frozenset[str] = frozenset()


def build_cases(
    kb: KnowledgeBase, records: Sequence[ChunkRecord], options: AdaptOptions
) -> tuple[list[_Plan], dict[str, int]]:
    """The pseudo-questions to ask, with who asks, their gold chunks and what a near miss removes."""
    rng = random.Random(options.seed)
    secs = [s for s in _sections(records) if any(r.access is not None and r.access.tenant for r in s.records)]
    rng.shuffle(secs)
    nb = Neighbours(kb.embedder, (f"{r.title}\n{r.text}" for r in records))
    vec_of = {r.id: r.embedding for r in records}
    by_heading: dict[str, set[str]] = {}
    for s in secs:
        by_heading.setdefault(s.heading.strip().lower(), set()).update(r.id for r in s.records)
    ids = [r.id for r in records]
    mat = np.vstack([np.asarray(vec_of[i], dtype=np.float32) for i in ids]) if ids else np.zeros((0, 1))
    plans: list[_Plan] = []
    built: dict[str, int] = {}
    for n, sec in enumerate(secs):
        if sum(1 for p in plans if p.kind == "answerable") >= options.sections:
            break
        qs = _pseudo_questions(sec, rng)
        if not qs:
            continue
        source, q = rng.choice(qs)
        if options.paraphrase:
            q = paraphrase(q, rng, nb.near)
        if len(tx.content_tokens(q)) < 1:
            continue
        acc = sec.records[0].access
        assert acc is not None
        principal = Principal(tenant=acc.tenant, groups=tuple(acc.groups))
        gold = frozenset(r.id for r in sec.records)
        near: set[str] = (
            set(by_heading.get(sec.heading.strip().lower(), set())) if _good_heading(sec.heading) else set()
        )
        if len(ids):
            gv = np.vstack([np.asarray(vec_of[i], dtype=np.float32) for i in gold])
            sims = (mat @ gv.T).max(axis=1)
            near |= {ids[j] for j in np.nonzero(sims >= NEAR_COPY)[0]}
        fold = n % 2
        plans.append(_Plan(q, "answerable", source, principal, gold, fold))
        plans.append(_Plan(q, "near_miss", source, principal, gold, fold, frozenset(near | gold)))
        built[source] = built.get(source, 0) + 1
    _add_foreign(records, nb, rng, options, plans, built)
    return plans, built


def _add_foreign(
    records: Sequence[ChunkRecord],
    nb: Neighbours,
    rng: random.Random,
    options: AdaptOptions,
    plans: list[_Plan],
    built: dict[str, int],
) -> None:
    """Other products' questions, asked by the tenant with the most chunks (none when no chunk has a tenant)."""
    tenants: dict[str, int] = {}
    for r in records:
        if r.access is not None and r.access.tenant:
            tenants[r.access.tenant] = tenants.get(r.access.tenant, 0) + 1
    if not tenants:
        return
    tenant = max(tenants, key=lambda t: tenants[t])
    foreign = _foreign(nb.vocab)
    rng.shuffle(foreign)
    # as many as the answerable ones, at least 12: a small knowledge base is not fitted on other products alone
    n_foreign = min(options.foreign, max(12, sum(1 for p in plans if p.kind == "answerable")))
    for i, q in enumerate(foreign[:n_foreign]):
        plans.append(_Plan(q, "foreign", "foreign", Principal(tenant=tenant), frozenset(), i % 2))
    built["foreign"] = min(len(foreign), n_foreign)


def _probe(kb: KnowledgeBase) -> Adaptation:
    shipped = load_models()
    return Adaptation(thresholds=dict.fromkeys(shipped, (0.0, 0.0)), made="probe", chunks=0)


class _Recorder:
    """Records the setwise pruner's probabilities of the last list it graded (``admit adapt`` fits its cut on them);
    :meth:`attach` wraps the pipeline's pruner instance for the run and :meth:`detach` restores it."""

    def __init__(self) -> None:
        self.probs: dict[str, float] = {}
        self.shape: dict[str, tuple[int, int]] = {}
        """Per chunk id of the last list: (its rank after the rerank, 0-based; its words)."""
        self._pruner: Any = None
        self.cross: Callable[[str, Sequence[Any]], list[float]] | None = None
        """The pruner's cross-encoder scores (``SetwisePruner.cross_scores``) when the cross cut is fitted."""

    def attach(self, pipe: Any, cross: bool = False) -> None:
        try:
            pruner = pipe.pruner_for("setwise")
        except Exception:  # no setwise pruner: no cut to fit
            return
        inner = pruner.prune

        def prune(question: Any, candidates: Any, settings: Any) -> Any:
            out = inner(question, candidates, settings)
            self.probs = {cid: float(sig[1]) for cid, sig in dict(out.signals).items()}
            self.shape = {c.chunk.id: (int(c.rank), len(c.chunk.text.split())) for c in candidates}
            return out

        pruner.prune = prune
        self._pruner = pruner
        self.cross = getattr(pruner, "cross_scores", None) if cross else None

    def detach(self) -> None:
        if self._pruner is not None:
            del self._pruner.prune  # the class's method again
            self._pruner = None
        self.cross = None


def _ask(kb: KnowledgeBase, pipe: Any, plan: _Plan, probe: Adaptation, recorder: _Recorder | None = None) -> AdaptCase:
    resolved = kb.resolve(pipe, plan.question, prune=True)
    req = kb.search_request(plan.question, plan.principal, resolved=resolved, prune=kb.forced_strategy(True))
    cands = list(req.candidates)
    found = bool(plan.gold & {c.id for c in cands})
    if recorder is not None:
        recorder.probs, recorder.shape = {}, {}
    if plan.drop:
        cands = [c for c in cands if c.id not in plan.drop]
    res = pipe.pack(replace(req, candidates=cands, adaptation=probe), resolved=resolved)
    rec = res.trace.get("answer") or {}
    texts = [f"{p.chunk.title}\n{p.chunk.text}" if p.chunk.title else p.chunk.text for p in res.admitted]
    short = bool(texts) and bool(answer_features(plan.question, texts)["short_held"])
    reason = str(rec.get("reason", ""))
    names_absent = "in no retrieved candidate" in reason
    extra: dict[str, Any] = {"gold_retrieved": found, "names_absent": names_absent}
    if recorder is not None and recorder.probs and plan.kind == "answerable":
        # the admitted chunks' probabilities, gold or not: what the fitted cut would keep of them
        extra["admitted_p"] = [
            (recorder.probs[p.chunk.id], p.chunk.id in plan.gold) for p in res.admitted if p.chunk.id in recorder.probs
        ]
        # what the short-chunk cut reads of each admitted chunk: (p, gold, rank, words), and the list's best p
        extra["admitted_shape"] = [
            (recorder.probs[p.chunk.id], p.chunk.id in plan.gold, *recorder.shape[p.chunk.id])
            for p in res.admitted
            if p.chunk.id in recorder.probs and p.chunk.id in recorder.shape
        ]
        extra["best_p"] = max(recorder.probs.values())
        if recorder.cross is not None:
            shaped = [p.chunk for p in res.admitted if p.chunk.id in recorder.probs and p.chunk.id in recorder.shape]
            try:
                extra["admitted_cross"] = recorder.cross(plan.question, shaped)
            except ConfigError:  # no cross model: no cross cut to fit
                recorder.cross = None
    at = reason.find(SIMILARITY_IN_REASON)
    if at >= 0:
        extra["similarity"] = float(reason[at + len(SIMILARITY_IN_REASON) :].split(";")[0].split()[0])
    return AdaptCase(
        question=plan.question,
        kind=plan.kind,
        source=plan.source,
        model=str(rec.get("model", "")),
        p=float(res.answerability or 0.0),
        state=res.answer_state,
        short_held=short,
        fold=plan.fold,
        extra=extra,
    )


def _ask_all(
    kb: KnowledgeBase,
    pipe: Any,
    plans: Sequence[_Plan],
    probe: Adaptation,
    progress: Callable[[int, int], None] | None,
    cross: bool = False,
) -> list[AdaptCase]:
    """Ask every plan under ``probe`` (thresholds at 0; its pruner parameters), recording the setwise pruner's
    probabilities of what each answerable question admitted (``cross``: and their cross-encoder scores)."""
    cases: list[AdaptCase] = []
    rec = _Recorder()
    rec.attach(pipe, cross)
    try:
        for i, plan in enumerate(plans):
            cases.append(_ask(kb, pipe, plan, probe, rec))
            if progress is not None:
                progress(i + 1, len(plans))
    finally:
        rec.detach()
    return cases


def final_state(case: AdaptCase, threshold: float, answered_at: float, floor: float | None = None) -> AnswerState:
    """The verdict ``case`` gets under these thresholds and similarity floor (its probe ran with both thresholds
    at 0 and no floor: ``not_answered`` and ``unsure`` there are the rules')."""
    if case.state == "not_answered":
        return "not_answered"
    if case.short_held and case.state is not None:
        return case.state
    if case.p < threshold:
        return "not_answered"
    if floor is not None and float(case.extra.get("similarity", 1.0)) < floor:
        return "not_answered"
    if case.state == "unsure":
        return "unsure"
    return "answered" if case.p >= max(threshold, answered_at) else "unsure"


def _rates(
    cases: Sequence[AdaptCase], th: Mapping[str, tuple[float, float]], floors: Mapping[str, float] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("answerable", "near_miss", "foreign"):
        got = [
            final_state(c, *th.get(c.model, (0.0, 0.0)), (floors or {}).get(c.model)) for c in cases if c.kind == kind
        ]
        out[kind] = {
            "n": len(got),
            "not_answered": round(sum(s == "not_answered" for s in got) / max(1, len(got)), 3),
            "unsure": round(sum(s == "unsure" for s in got) / max(1, len(got)), 3),
        }
    return out


def fit_thresholds(
    cases: Sequence[AdaptCase], shipped: Mapping[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """Per model, ``(threshold, answered_at)`` fitted on ``cases`` (see the module); a model with fewer than
    :data:`MIN_CASES` answerable or unanswerable cases keeps ``shipped``."""
    out: dict[str, tuple[float, float]] = {}
    for name, ship in shipped.items():
        mine = [c for c in cases if c.model == name]
        pos = [c for c in mine if c.kind == "answerable" and c.extra.get("gold_retrieved", True)]
        neg = [c for c in mine if c.kind != "answerable"]
        if len(pos) < MIN_CASES or len(neg) < MIN_CASES:
            out[name] = ship
            continue
        free = sorted(c.p for c in pos if c.state != "not_answered" and not c.short_held)
        if not free:
            out[name] = ship
            continue
        # threshold: at most MAX_NA_ANSWERABLE of the answerable ones the rules leave to the probability below it.
        # The rules' own "not answered" stands whatever the threshold: counted against the threshold's share, they
        # set it at the lowest probability of all once they pass that share (0.018 on gettext's docs), and the
        # adapted model then said "answered" where the shipped one did not.
        t = free[min(math.floor(MAX_NA_ANSWERABLE * len(free)), len(free) - 1)]
        t = min(t, ABSENT_NAME_BELOW * 2)  # never a threshold the fit's extremes alone would set
        # answered_at: at most MAX_UNSURE of the answerable ones between the two
        above = [x for x in free if x >= t]
        a = above[min(math.floor(MAX_UNSURE * len(pos)), len(above) - 1)] if above else t
        lo = math.floor(float(t) * 10_000) / 10_000  # rounded down: the case at the threshold stays above it
        out[name] = (lo, max(lo, math.floor(float(a) * 10_000) / 10_000))
    return out


def fit_similarity_floor(cases: Sequence[AdaptCase], thresholds: Mapping[str, tuple[float, float]]) -> dict[str, float]:
    """Per model that reads similarity (``setwise``): the floor below which at most :data:`FLOOR_SHARE` of the
    answerable pseudo-questions fall, of those the rules and ``thresholds`` leave "answered" (none with fewer
    than :data:`MIN_CASES`)."""
    out: dict[str, float] = {}
    for name in sorted({c.model for c in cases if "similarity" in c.extra}):
        th = thresholds.get(name, (0.0, 0.0))
        pos = sorted(
            float(c.extra["similarity"])
            for c in cases
            if c.model == name
            and c.kind == "answerable"
            and "similarity" in c.extra
            and c.extra.get("gold_retrieved", True)
            and not c.short_held
            and final_state(c, *th) != "not_answered"
        )
        if len(pos) < MIN_CASES:
            continue
        out[name] = math.floor(pos[math.floor(FLOOR_SHARE * len(pos))] * 100) / 100  # rounded down, as shown
    return out


def adapt(
    kb: KnowledgeBase,
    options: AdaptOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    save: bool = True,
) -> tuple[Adaptation, list[AdaptCase]]:
    """Fit ``kb``'s own answerability thresholds (see the module) and store them in it (``save``); return the
    adaptation and every case asked.

    Raises:
        ConfigError: The knowledge base holds no chunk anyone can read.
    """
    options = options or AdaptOptions()
    records = list(kb.records())
    if not any(r.access is not None and r.access.tenant for r in records):
        raise ConfigError(f"Knowledge base {kb.location!r} holds no readable chunk to adapt to; ingest first.")
    fp = kb.fingerprint()
    plans, built = build_cases(kb, records, options)
    pipe = kb._pipeline(None)
    # the documentation rules are on for the adapted knowledge base: its thresholds are fitted on what they admit
    rules = {"doc_rules": 1}
    probe = replace(_probe(kb), prune_params={"setwise": rules})
    cases = _ask_all(kb, pipe, plans, probe, progress, options.cross and options.cross_fit)
    most, cut_figures = fit_keep_most(cases) if options.cut else (0, {"fitted": False})
    short, short_figures = fit_short_below(cases) if options.short else (0, {"fitted": False})
    margin, cross_figures = _cross_margin(cases, short, options)
    # the fitted cross margin is asked with; the default one is not (the thresholds are fitted on the lists without it)
    cuts = _cut_params(most, short, margin * options.cross_fit)
    if cuts:
        # the verdict reads what the pruner admits: its thresholds are fitted on the lists the cuts leave
        cases = _ask_all(kb, pipe, plans, replace(probe, prune_params={"setwise": {**rules, **cuts}}), progress)
    shipped = {n: (m.threshold, m.answered_from) for n, m in load_models().items()}
    fitted = fit_thresholds(cases, shipped)
    floors = fit_similarity_floor(cases, fitted)
    vocabulary = kb_vocabulary(f"{r.title}\n{r.text}" for r in records)
    prefixes = vocabulary_prefixes(vocabulary)
    pages = kb_page_names((r.title, r.text) for r in records)
    fold_th = [fit_thresholds([c for c in cases if c.fold != f], shipped) for f in (0, 1)]
    fold_fl = [fit_similarity_floor([c for c in cases if c.fold != f], fold_th[f]) for f in (0, 1)]
    figures = {
        "questions": {k: sum(1 for c in cases if c.kind == k) for k in ("answerable", "near_miss", "foreign")},
        "built_from": built,
        "answer_retrieved": round(
            sum(1 for c in cases if c.kind == "answerable" and c.extra.get("gold_retrieved"))
            / max(1, sum(1 for c in cases if c.kind == "answerable")),
            3,
        ),
        "models": sorted({c.model for c in cases}),
        "shipped": _rates(cases, shipped),
        "fitted": _rates(cases, fitted, floors),
        "two_fold": _two_fold(cases, fold_th, fold_fl),
        "paraphrased": options.paraphrase,
        "words_nowhere": _words_nowhere(cases, vocabulary, prefixes),
        "vocabulary": len(vocabulary),
        "pages": len(pages),
        "cut": cut_figures,
        "short_cut": short_figures,
        "cross_cut": cross_figures,
    }
    ad = Adaptation(
        thresholds=fitted,
        made=datetime.now(UTC).isoformat(timespec="seconds"),
        chunks=fp.count,
        figures=figures,
        similarity_floor=floors,
        vocabulary=vocabulary,
        prune_params={"setwise": {**rules, **_cut_params(most, short, margin)}},
        pages=pages,
    )
    if save:
        kb.save_adaptation(ad, fp)
    return ad, cases


def fit_keep_most(cases: Sequence[AdaptCase]) -> tuple[int, dict[str, Any]]:
    """setwise's ``keep_most`` for this knowledge base, and the figures it was chosen by: the smallest count whose
    most probable admitted chunks still hold the section of at least :data:`CUT_GOLD_SHARE` of the answerable
    pseudo-questions the uncut pruner admitted it for (0, no cut: fewer than :data:`MIN_CASES` such questions, or
    no count up to :data:`CUT_MAX` keeps that share while admitting fewer chunks)."""
    lists = [
        sorted(c.extra["admitted_p"], key=lambda t: -t[0])
        for c in cases
        if c.kind == "answerable" and c.extra.get("admitted_p") and any(g for _, g in c.extra["admitted_p"])
    ]
    figures: dict[str, Any] = {"questions": len(lists), "share": CUT_GOLD_SHARE}
    if len(lists) < MIN_CASES:
        return 0, figures
    uncut = sum(len(xs) for xs in lists) / len(lists)
    figures["chunks_uncut"] = round(uncut, 2)
    curve = [
        (
            sum(1 for xs in lists if any(g for _, g in xs[:k])) / len(lists),
            sum(min(k, len(xs)) for xs in lists) / len(lists),
        )
        for k in range(1, CUT_MAX + 1)
    ]
    # the sections kept and the chunks a question at each count, for `admit adapt --json`
    figures["by_count"] = {str(k): [round(h, 3), round(c, 2)] for k, (h, c) in enumerate(curve, start=1)}
    for k, (held, chunks) in enumerate(curve, start=1):
        if held >= CUT_GOLD_SHARE:
            if chunks >= uncut:
                break  # the cut would keep everything anyway
            figures.update(keep_most=k, gold_kept=round(held, 3), chunks=round(chunks, 2))
            return k, figures
    return 0, figures


def fit_short_below(cases: Sequence[AdaptCase]) -> tuple[int, dict[str, Any]]:
    """setwise's ``short_below`` for this knowledge base, and the figures it was chosen by: the largest word count of
    :data:`SHORT_GRID` under which :func:`admit._cuts.short_cut` still leaves the section of at least
    :data:`SHORT_GOLD_SHARE` of the answerable pseudo-questions the uncut pruner admitted it for (0, no cut: fewer
    than :data:`MIN_CASES` such questions, or no count keeps that share while leaving out a chunk)."""
    lists = [
        (c.extra["admitted_shape"], float(c.extra.get("best_p", 0.0)))
        for c in cases
        if c.kind == "answerable" and c.extra.get("admitted_shape") and any(s[1] for s in c.extra["admitted_shape"])
    ]
    figures: dict[str, Any] = {"questions": len(lists), "share": SHORT_GOLD_SHARE}
    if len(lists) < MIN_CASES:
        return 0, figures

    def replay(below: int) -> tuple[int, int]:
        held = chunks = 0
        for xs, best in lists:
            # the list's best (best_p) stands in as a chunk graded 5, so the cut reads the same best probability
            probs = [best, *(x[0] for x in xs)]
            kept = short_cut(
                [5] * len(probs),
                probs,
                [0, *(x[2] for x in xs)],
                [below, *(x[3] for x in xs)],
                [False] * len(probs),
                3,
                below,
            )[1:]
            left = [x for x, g in zip(xs, kept, strict=True) if g >= 3]
            held += any(x[1] for x in left)
            chunks += len(left)
        return held, chunks

    by_words, below = _sweep(SHORT_GRID, [len(xs) for xs, _ in lists], SHORT_GOLD_SHARE, figures, replay)
    if below is not None:
        figures.update(short_below=below, gold_kept=by_words[str(below)][0], chunks=by_words[str(below)][1])
    figures["by_words"] = by_words
    return int(figures.get("short_below", 0)), figures


def _sweep(
    grid: Sequence[_Setting],
    sizes: Sequence[int],
    share: float,
    figures: dict[str, Any],
    replay: Callable[[_Setting], tuple[int, int]],
) -> tuple[dict[str, list[float]], _Setting | None]:
    """A cut replayed over its grid on lists of ``sizes`` chunks: the curve, keyed by each setting as ``{:g}`` writes
    it, of the share of lists that keep their section and the chunks a list keeps (``replay``: that setting's count
    of lists holding their section, and of chunks kept); and the first setting that keeps ``share`` of them while
    leaving out a chunk (``None``: none does). The uncut chunks a list go in ``figures["chunks_uncut"]``."""
    n, uncut = len(sizes), sum(sizes)
    figures["chunks_uncut"] = round(uncut / n, 2)
    curve: dict[str, list[float]] = {}
    chosen: _Setting | None = None
    for setting in grid:
        held, chunks = replay(setting)
        curve[f"{setting:g}"] = [round(held / n, 3), round(chunks / n, 2)]
        if chosen is None and held >= share * n and chunks < uncut:
            chosen = setting
    return curve, chosen


def _cut_params(most: int, short: int, margin: int) -> dict[str, int]:
    """setwise's parameters of the cuts that are set (0: none)."""
    return {k: v for k, v in (("keep_most", most), ("short_below", short), ("cross_margin", margin)) if v}


def _cross_margin(cases: Sequence[AdaptCase], short_below: int, options: AdaptOptions) -> tuple[int, dict[str, Any]]:
    """The cross-encoder cut's margin and its figures: none (``cross`` off), fitted (``cross_fit``) or
    :data:`CROSS_MARGIN_DEFAULT`."""
    if not options.cross:
        return 0, {"fitted": False}
    if options.cross_fit:
        return fit_cross_margin(cases, short_below)
    return CROSS_MARGIN_DEFAULT, {"fitted": False, "cross_margin": CROSS_MARGIN_DEFAULT}


def _cross_lists(cases: Sequence[AdaptCase]) -> list[tuple[list[Any], list[float], float]]:
    """The answerable cases whose section was admitted, with their admitted chunks' shapes, cross scores and best p."""
    out = []
    for c in cases:
        shape, cross = c.extra.get("admitted_shape") or [], c.extra.get("admitted_cross") or []
        if c.kind == "answerable" and shape and len(cross) == len(shape) and any(s[1] for s in shape):
            out.append((list(shape), [float(v) for v in cross], float(c.extra.get("best_p", 0.0))))
    return out


def _after_short(
    lists: Sequence[tuple[list[Any], list[float], float]], short_below: int
) -> list[tuple[list[Any], list[float]]]:
    """Each list after the short-chunk cut as the pruner runs it (its best p standing in as a chunk graded 5), those
    that still hold their section."""
    left: list[tuple[list[Any], list[float]]] = []
    for xs, cross, best in lists:
        probs = [best, *(x[0] for x in xs)]
        ranks = [0, *(x[2] for x in xs)]
        sizes = [short_below or 1, *(x[3] for x in xs)]
        kept = short_cut([5] * len(probs), probs, ranks, sizes, [False] * len(probs), 3, short_below)[1:]
        pairs = [(x, v) for x, v, g in zip(xs, cross, kept, strict=True) if g >= 3]
        if any(x[1] for x, _ in pairs):
            left.append(([x for x, _ in pairs], [v for _, v in pairs]))
    return left


def fit_cross_margin(cases: Sequence[AdaptCase], short_below: int = 0) -> tuple[int, dict[str, Any]]:
    """setwise's ``cross_margin`` (hundredths) for this knowledge base, and the figures it was chosen by: the smallest
    margin of :data:`CROSS_GRID` under which :func:`admit._cuts.cross_cut`, replayed after the short-chunk cut
    (``short_below``), still leaves the section of at least :data:`CROSS_GOLD_SHARE` of the answerable
    pseudo-questions the pruner admitted it for (0, no cut: fewer than :data:`MIN_CASES` such questions with their
    cross scores, or no margin keeps that share while leaving out a chunk)."""
    lists = _cross_lists(cases)
    figures: dict[str, Any] = {"questions": len(lists), "share": CROSS_GOLD_SHARE, "short_below": short_below}
    if len(lists) < MIN_CASES:
        return 0, figures
    left = _after_short(lists, short_below)
    figures["questions_after_short"] = len(left)
    if len(left) < MIN_CASES:
        return 0, figures

    def replay(m: float) -> tuple[int, int]:
        held = chunks = 0
        for xs, cross in left:
            n = len(xs)
            kept = cross_cut([5] * n, cross, [x[0] for x in xs], [x[2] for x in xs], [False] * n, 3, m)
            held += any(x[1] for x, g in zip(xs, kept, strict=True) if g >= 3)
            chunks += sum(1 for g in kept if g >= 3)
        return held, chunks

    by_margin, m = _sweep(CROSS_GRID, [len(xs) for xs, _ in left], CROSS_GOLD_SHARE, figures, replay)
    if m is not None:
        figures.update(cross_margin=round(m * 100), gold_kept=by_margin[f"{m:g}"][0], chunks=by_margin[f"{m:g}"][1])
    figures["by_margin"] = by_margin
    return int(figures.get("cross_margin", 0)), figures


def _words_nowhere(
    cases: Sequence[AdaptCase], vocabulary: AbstractSet[str], prefixes: AbstractSet[str]
) -> dict[str, float]:
    """The share of each kind with :data:`KB_ABSENT_MIN` or more words the knowledge base holds nowhere (the cases
    the rule says "not answered" to)."""
    out: dict[str, float] = {}
    for kind in ("answerable", "near_miss", "foreign"):
        asked = [c for c in cases if c.kind == kind]
        nowhere = sum(1 for c in asked if len(kb_absent_words(c.question, vocabulary, prefixes)) >= KB_ABSENT_MIN)
        out[kind] = round(nowhere / max(1, len(asked)), 3)
    return out


def _two_fold(
    cases: Sequence[AdaptCase],
    fold_th: Sequence[Mapping[str, tuple[float, float]]],
    fold_fl: Sequence[Mapping[str, float]] = ({}, {}),
) -> dict[str, Any]:
    """Each fold scored with the thresholds fitted on the other: the rates on questions the fit did not see."""
    out: dict[str, Any] = {}
    for kind in ("answerable", "near_miss", "foreign"):
        got = [
            final_state(c, *fold_th[c.fold].get(c.model, (0.0, 0.0)), fold_fl[c.fold].get(c.model))
            for c in cases
            if c.kind == kind
        ]
        out[kind] = {
            "n": len(got),
            "not_answered": round(sum(s == "not_answered" for s in got) / max(1, len(got)), 3),
            "unsure": round(sum(s == "unsure" for s in got) / max(1, len(got)), 3),
        }
    return out
