"""The rules of :mod:`.rules` applied on top of the model's grades, one function per rule.

:func:`apply_rules` runs them in order on one :class:`Grading` (the grades, the reasons, which rule last moved
each grade, the unrelated floor): scripts MiniLM cannot read (the question's: bigram grades replace the model's
and nothing else runs), chunks in another language, releases, list-all tables, enumerations of the asked kind,
comparisons, a part named by its heading, a rare term a chunk lacks, then the unrelated floor (last: nothing lifts
a chunk that shares nothing with the question).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from admit.prune.setwise_model import crosslang, lists, rules
from admit.prune.setwise_model import text as tx
from admit.prune.setwise_model.features import SetwiseItem
from admit.question import Question, read_question

__all__ = ["KEEP_GRADE", "Grading", "apply_rules"]

FloatArray = npt.NDArray[np.float64]

#: The grade the enumeration and comparison rules lift a chunk to: the default threshold (kept).
KEEP_GRADE = 3


@dataclass
class Grading:
    """One list's grades while the rules run over it (each rule reads and updates it in place).

    Attributes:
        question: The question.
        items: The chunks.
        texts: Each chunk's ``title + "\\n" + text``.
        out: The grades.
        why: The reasons.
        marks: The name of the last rule that moved each grade (the scorer's ``setby``).
        floor: Whether each chunk is under the unrelated floor.
        foreign: Whether each chunk is in another language than the question.
        record: The question read once (:class:`admit.question.Question`): its script and releases.
    """

    question: str
    items: Sequence[SetwiseItem]
    texts: list[str]
    out: list[int]
    why: list[str]
    marks: list[str]
    floor: list[bool]
    foreign: list[bool] = field(default_factory=list)
    record: Question | None = None

    @property
    def read(self) -> Question:
        """The question's record (read from :attr:`question` when none was handed in)."""
        return self.record if self.record is not None else read_question(self.question)

    def mark(self, j: int, before: int, rule: str) -> None:
        """Record ``rule`` as what set chunk ``j``'s grade when it moved from ``before``."""
        if self.out[j] != before:
            self.marks[j] = rule

    def lift_reason(self, j: int, note: str) -> None:
        """Append ``note`` to chunk ``j``'s reason, which a lift makes no longer ``unrelated``."""
        self.why[j] = self.why[j].removeprefix("unrelated: ") + note

    def keep(self, j: int, rule: str, note: str) -> None:
        """Grade chunk ``j`` :data:`KEEP_GRADE` by ``rule``, its reason saying why (``note``)."""
        before = self.out[j]
        self.out[j] = KEEP_GRADE
        self.mark(j, before, rule)
        self.lift_reason(j, note)


def bigram_rule(g: Grading) -> str | None:
    """A question in a script MiniLM does not read: every grade by character bigrams; returns the script."""
    script = g.read.script
    if script is None:
        return None
    bg, shares = rules.bigram_grades(g.question, g.texts)
    for j in range(len(g.items)):
        before = g.out[j]
        g.out[j] = bg[j]
        g.mark(j, before, f"the {script}-script bigram rule")
        g.why[j] = (
            f"question in {script} script, which MiniLM does not read: graded by character bigrams "
            f"(shares {shares[j]:.0%} of the question's)"
        )
        g.floor[j] = shares[j] <= 0
    return script


def cross_language_rule(g: Grading, e5: FloatArray | None) -> None:
    """Chunks in another language than the question's English (:mod:`.crosslang`).

    MiniLM's grade of such a chunk means little (nothing in a script it does not read). What it shares with the
    question across languages (a product name, a code, a number), or English chunks that never name what is
    asked, say it may hold the answer (3, kept), else it is tangential (2); multilingual e5, when given, may lift
    it to 4 (its cosine at least the best English chunk's).
    """
    n = len(g.items)
    langs = [crosslang.language_of(t) for t in g.texts] if crosslang.language_of(g.question) is None else [None] * n
    g.foreign = [lang is not None for lang in langs]
    if not any(g.foreign):
        return
    english = [t for t, f in zip(g.texts, g.foreign, strict=True) if not f]
    missing = crosslang.asked_entity_missing(g.question, english) if english else None
    best_en = (
        max((float(e5[j]) for j in range(n) if not g.foreign[j] and not np.isnan(e5[j])), default=None)
        if e5 is not None
        else None
    )
    for j, t in enumerate(g.texts):
        lang = langs[j]
        if lang is None:
            continue
        shared = crosslang.anchors(g.question, t)
        grade = 3 if shared or missing else 2
        e5_note = ""
        if e5 is not None and best_en is not None and not np.isnan(e5[j]):
            e5_j = float(e5[j])
            if e5_j >= best_en:
                grade = max(grade, 4)
            elif e5_j >= best_en - crosslang.E5_MARGIN:
                grade = max(grade, 3)
            e5_note = f"; multilingual e5 cosine {e5_j:.3f} against the best English chunk's {best_en:.3f}"
        unreadable = rules.script_of(t)
        before = g.out[j]
        g.out[j] = grade if unreadable is not None else max(g.out[j], grade)
        held = ", ".join(shared[:3]) or "none"
        lost = f"; no English chunk names {missing!r}" if missing and not shared else ""
        g.mark(j, before, f"the cross-language rule ({lang})")
        if unreadable is not None:
            g.why[j] = (
                f"text in {unreadable} script, which MiniLM does not read: graded by the question's words it "
                f"holds ({held}){lost}{e5_note}"
            )
        elif g.out[j] != before:  # the model's grade 1 ("unrelated"), which this rule lifted
            g.lift_reason(
                j, f"; in {lang}, which MiniLM reads poorly: graded by what it shares ({held}){lost}{e5_note}"
            )


def release_rule(g: Grading) -> None:
    """A section about a release the question names: at least 4; one about other releases only: at most 2
    (:func:`.rules.version_hits`; only when some chunk names an asked release)."""
    items = g.items
    hit, other, asked = rules.version_hits(
        g.read, [it.title for it in items], [it.text for it in items], [it.version for it in items]
    )
    if not any(hit):
        return
    names = ", ".join(".".join(v) for v in sorted(asked))
    for j in range(len(items)):
        before = g.out[j]
        if hit[j]:
            g.out[j] = max(g.out[j], 4)
            g.why[j] += f"; about release {names} named in the question"
        elif other[j]:
            g.out[j] = min(g.out[j], 2)
            g.why[j] += f"; about another release than {names}"
        g.mark(j, before, "the release rule")


def list_all_rule(g: Grading) -> None:
    """A list-all question: a table or a list naming the asked kind is graded 5 (:func:`.rules.structured`)."""
    if not rules.asks_for_all(g.question):
        return
    kind = rules.list_kind(g.question)
    for j, (it, t) in enumerate(zip(g.items, g.texts, strict=True)):
        words = {rules.stem(w) for w in tx.content_tokens(t)}
        if kind and kind & words and rules.structured(it.text):
            before = g.out[j]
            g.out[j] = 5
            g.mark(j, before, "the list-all rule")
            g.why[j] += "; a table or list of the asked kind for a list-all question"


def enumeration_rule(g: Grading) -> None:
    """A chunk that enumerates things of the kind a "which/what <kind>" question asks for (the help page listing
    every compression algorithm) is kept: graded at least :data:`KEEP_GRADE` (:func:`.lists.enumerates_kind`)."""
    for j, it in enumerate(g.items):
        if g.out[j] >= KEEP_GRADE:
            continue
        kind = lists.enumerates_kind(g.question, it.title, it.text)
        if kind is None:
            continue
        g.keep(j, "the enumeration rule", f"; enumerates the {kind} the question asks for")


def comparison_rule(g: Grading) -> None:
    """A comparison ("lz4 vs zstd"): a chunk naming both sides is kept, graded at least :data:`KEEP_GRADE`
    (:func:`.lists.compared_terms`, :func:`.lists.holds_both`)."""
    terms = lists.compared_terms(g.question)
    if terms is None:
        return
    for j, it in enumerate(g.items):
        if g.out[j] >= KEEP_GRADE or not lists.holds_both(terms, it.title, it.text):
            continue
        g.keep(j, "the comparison rule", f"; names both {terms[0]!r} and {terms[1]!r}, which the question compares")


def named_heading_rule(g: Grading) -> None:
    """The one chunk whose opening heading the question names is graded at least 3 (:func:`.rules.named_headings`)."""
    for j, head in enumerate(rules.named_headings(g.question, [it.text for it in g.items])):
        if head is not None and g.out[j] < 3:
            g.mark(j, -1, "the named-heading rule")
            g.out[j] = 3
            g.why[j] += f"; the question names its heading {head!r}"


def acronym_rule(g: Grading) -> None:
    """A chunk lacking every acronym the question names that other chunks hold is not "essential" (5 -> 4)."""
    lacks, acronyms = rules.acronym_misses(g.question, g.texts)
    for j in range(len(g.items)):
        if lacks[j] and g.out[j] == 5:
            g.mark(j, -1, "the acronym rule")
            g.out[j] = 4
            g.why[j] += f"; never names {acronyms}, which the question asks about"


def unrelated_floor(g: Grading, dense: FloatArray, probs: FloatArray | None) -> None:
    """No content word of the question and a low cosine: grade 1 (:func:`.rules.unrelated`), unless the model
    believes in the chunk (a bridge paragraph) or it is in another language or script."""
    for j, it in enumerate(g.items):
        believed = probs is not None and float(probs[j]) >= rules.UNRELATED_MAX_PROB
        readable = rules.script_of(g.texts[j]) is None and not g.foreign[j]
        if not believed and readable and rules.unrelated(g.question, it.title, it.text, float(dense[j])):
            g.floor[j] = True
            g.mark(j, -1 if g.out[j] != 1 else 1, "the unrelated floor")
            g.out[j] = 1
            g.why[j] = f"unrelated: no word of the question, similarity {float(dense[j]):.2f} < {rules.UNRELATED_DENSE}"


def apply_rules(
    question: str | Question,
    items: Sequence[SetwiseItem],
    dense: FloatArray,
    grades: Sequence[int],
    reasons: Sequence[str],
    probs: FloatArray | None = None,
    setby: list[str] | None = None,
    e5: FloatArray | None = None,
) -> tuple[list[int], list[str], list[bool], str | None]:
    """The rules of :mod:`.rules` on top of the model's grades: (grades, reasons, unrelated floor, script).

    Order: scripts MiniLM cannot read (the question's: bigram grades replace the model's; a chunk's: passed
    through at 3), then releases, list-all tables, enumerations of the asked kind, comparisons, a named heading, a
    missing acronym, then the unrelated floor (last: nothing lifts a chunk that shares nothing with the question).
    The floor spares a chunk the model itself believes in (``probs`` at least :data:`.rules.UNRELATED_MAX_PROB`):
    a bridge paragraph of a multi-hop chain may share no word with the question and still be needed.

    ``e5``, when given: each chunk's multilingual-e5 cosine to the question (``nan`` where not read), for chunks in
    another language than the question (:mod:`.crosslang`).

    ``setby``, when given (one entry per item), is updated in place with the name of the last rule that changed a
    chunk's grade (``"the release rule"``, ...), so the scorer can say which rule set a grade against ``p``.
    """
    n = len(items)
    record = read_question(question)
    g = Grading(
        question=record.text,
        record=record,
        items=items,
        texts=[f"{it.title}\n{it.text}" for it in items],
        out=[int(x) for x in grades],
        why=list(reasons),
        marks=setby if setby is not None and len(setby) == n else [""] * n,
        floor=[False] * n,
    )
    script = bigram_rule(g)
    if script is not None:
        return g.out, g.why, g.floor, script
    cross_language_rule(g, e5)
    release_rule(g)
    list_all_rule(g)
    enumeration_rule(g)
    comparison_rule(g)
    named_heading_rule(g)
    acronym_rule(g)
    unrelated_floor(g, dense, probs)
    return g.out, g.why, g.floor, None
