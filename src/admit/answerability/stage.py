"""The answerability stage: assess the admitted evidence once (:func:`admit.decide.assess_run`), then apply the policy's
``on_no_answer`` to it (:func:`on_no_answer`, :func:`no_answer_fallback`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from admit.answerability.features import SETWISE, TOGETHER, features, missing_terms
from admit.answerability.model import ABSENT_NAME_BELOW, AnswerabilityModel, load_models
from admit.answerability.pages import page_check
from admit.answerability.reader import READER, reader_features
from admit.answerability.record import Answerability
from admit.answerability.terms import KB_ABSENT_MIN, TermCheck, check_terms, kb_absent_words, words_apart
from admit.question import Question, read_question
from admit.types import AnswerState, Chunk, Decision, Fallback, Scored

if TYPE_CHECKING:
    from admit.answerability.adaptation import Adaptation
    from admit.backends.embedders.base import Embedder
    from admit.outcome import PruneOutcome

__all__ = [
    "MIN_SETWISE_LIST",
    "SCRIPT_MIN_SHARE",
    "SIMILARITY_IN_REASON",
    "NoAnswer",
    "assess",
    "assess_kept",
    "no_answer_fallback",
    "on_no_answer",
]

#: How the reason names the best admitted passage's similarity to the question (``admit adapt`` reads it back).
SIMILARITY_IN_REASON = "best similarity "

#: The setwise model reads the pruner's probabilities only for a graded list at least this long.
MIN_SETWISE_LIST = 3

#: For a question in a script MiniLM does not read, the evidence answers when its best passage holds at least this
#: share of the question's character bigrams (of that script). A rule, not a fitted model: no training list is in
#: such a script.
SCRIPT_MIN_SHARE = 0.2


def assess(
    question: str | Question,
    texts: Sequence[str],
    *,
    models: Mapping[str, AnswerabilityModel] | None = None,
    graded: int | None = None,
    dense: Sequence[float] | None = None,
    probs: Sequence[float] | None = None,
    expected_needed: float | None = None,
    cross: Sequence[float] | None = None,
    pool: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    adaptation: Adaptation | None = None,
    titles: Sequence[str] | None = None,
    pool_titles: Sequence[str] | None = None,
) -> Answerability:
    """Decide whether ``texts`` (the admitted evidence) answer ``question``.

    ``pool``: every candidate text the evidence was chosen from (the retrieved list), when known: a name or key word
    of the question that no candidate holds is one the knowledge base most likely lacks.

    Uses the ``cross`` model when the cross-encoder's scores (``cross``) are given for every text and the file has
    one; else the setwise pruner's model when its ``dense`` and ``probs`` are given for every text and it graded a
    list of at least :data:`MIN_SETWISE_LIST` (``graded``: its length); else the ``lexical`` one: the trees'
    probabilities of a list of one or two chunks are not on the scale of the lists they were fitted on.

    ``adaptation``: the knowledge base's own thresholds (:mod:`.adaptation`, ``admit adapt``), used in place of the
    shipped ones when it is current. The verdict then agrees with its reason (:func:`~.terms.check_terms`): a key
    term of the question that no admitted chunk holds (nor a close word, with ``embedder``) caps it at "unsure",
    and at "not answered" when no retrieved candidate holds it either; so does an answer type the question states
    and no admitted chunk holds ("which version", "default", "how do I"), and, with the adaptation's page names and
    the admitted chunks' ``titles`` (the candidates' ``pool_titles``), a page of the knowledge base the question
    names that no admitted chunk is from (:mod:`.pages`).

    Example:
        >>> a = assess("What port does the server listen on?", ["The server listens on port 8080."])
        >>> a.answerable
        True
        >>> assess("What port does the server listen on?", []).answerable
        False
    """
    if not texts:
        return Answerability(probability=0.0, state="not_answered", model="empty", reason="no evidence was admitted")
    question = read_question(question)  # read once: the features and the missing terms take the record
    script = question.script
    if script is not None:
        return _assess_script(question, texts, script)
    label = ""
    floors: Mapping[str, float] = {}
    unknown: tuple[str, ...] = ()
    if adaptation is not None and adaptation.current and adaptation.vocabulary:
        unknown = kb_absent_words(question, adaptation.vocabulary, adaptation.prefixes)
    if models is None:
        models, label, floors = _adapted_models(adaptation)
    use_setwise = (
        dense is not None
        and probs is not None
        and len(dense) == len(texts) == len(probs)
        and (graded is None or graded >= MIN_SETWISE_LIST)
    )
    use_cross = cross is not None and len(cross) == len(texts) and "cross" in models
    model = models["cross" if use_cross else SETWISE if use_setwise else "lexical"]
    together = any(f in model.features for f in TOGETHER)  # the shipped models read neither: not computed
    feats = features(
        question,
        texts,
        dense=dense,
        probs=probs,
        expected_needed=expected_needed,
        cross=cross,
        pool=pool,
        together=together,
    )
    if any(f in model.features for f in READER):  # the sentence reader: only for a model that reads it
        feats.update(reader_features(question, texts, probs=probs if use_setwise else None, embedder=embedder))
    p = model.probability(feats)
    state = model.state(feats)
    check = check_terms(question, texts, pool, embedder)
    state, rule = _agree(state, check, bool(feats["short_held"]))
    floor = floors.get(model.name)
    if floor is not None and use_setwise and state != "not_answered" and not feats["short_held"]:
        state, rule = _below_floor(state, rule, feats["best_dense"], floor)
    if unknown and state != "not_answered" and not feats["short_held"]:
        state, rule = _unknown_words(state, rule, unknown, question, texts)
    state, rule = _named_pages(state, rule, question.text, adaptation, titles, pool_titles)
    head = _head(p, model, state, rule, feats)
    parts = [
        head,
        f"best passage holds {feats['best_q_cov']:.0%} of the question's content words, "
        f"all passages {feats['union_q_cov']:.0%}",
    ]
    if use_setwise:
        parts.append(f"{SIMILARITY_IN_REASON}{feats['best_dense']:.2f}")
    missing = _missing(question, texts, check)
    if missing:
        parts.append(f"no passage names {', '.join(missing)}")
    if label:
        parts.append(label)
    return Answerability(
        probability=round(p, 4),
        model=model.name,
        reason="; ".join(parts),
        state=state,
        missing=missing,
        adaptation=label,
    )


def _adapted_models(
    adaptation: Adaptation | None,
) -> tuple[Mapping[str, AnswerabilityModel], str, Mapping[str, float]]:
    """The shipped models, under the knowledge base's adaptation when it is current: (models, the trace's label,
    the similarity floors)."""
    models = load_models()
    if adaptation is not None and adaptation.current:
        return adaptation.models_over(models), adaptation.label(), adaptation.similarity_floor
    if adaptation is not None:
        return models, f"shipped thresholds: the adaptation of {adaptation.made[:10]} is stale ({adaptation.stale})", {}
    return models, "", {}


def _head(p: float, model: AnswerabilityModel, state: AnswerState, rule: str, feats: Mapping[str, Any]) -> str:
    """The reason's first part: the probability, the band or rule that set the state, and the state."""
    if rule:
        head = f"p={p:.2f} ({model.name}): {rule}: {state.replace('_', ' ')}"
    elif feats["short_held"]:
        head = f"short question whose key terms a passage holds: answered (p={p:.2f}, {model.name})"
    else:
        band = "<" if state == "not_answered" else (">=" if state == "answered" else "between")
        span = f"[{model.threshold:.2f}, {model.answered_from:.2f}]"
        head = f"p={p:.2f} {band} {span} ({model.name}): {state.replace('_', ' ')}"
        if state == "not_answered" and p >= model.threshold and model.names_absent(feats, p):
            head = (
                f"p={p:.2f} < {ABSENT_NAME_BELOW} and a name the question asks about is in no retrieved candidate "
                f"({model.name}): not answered"
            )
    return head


def _below_floor(state: AnswerState, rule: str, best: float, floor: float) -> tuple[AnswerState, str]:
    """The knowledge base's similarity floor (``admit adapt``): evidence whose best passage is less similar to the
    question than this knowledge base's own answers are to theirs is "not answered" (another product's question)."""
    if best >= floor:
        return state, rule
    return "not_answered", f"{SIMILARITY_IN_REASON}{best:.2f} below this knowledge base's floor {floor:.2f}"


def _unknown_words(
    state: AnswerState, rule: str, unknown: Sequence[str], question: Question, texts: Sequence[str]
) -> tuple[AnswerState, str]:
    """The knowledge base's vocabulary (``admit adapt``): two or more of the question's words it holds in no form
    say "not answered"; one does when the admitted passages also hold no two of the question's words together
    (:func:`~.terms.words_apart`): the word is missing and what is held is its words one at a time, not the
    relation asked about."""
    if len(unknown) >= KB_ABSENT_MIN:
        return "not_answered", f"{', '.join(unknown)} nowhere in this knowledge base"
    if words_apart(question, texts):
        return "not_answered", (
            f"{', '.join(unknown)} nowhere in this knowledge base, and no admitted passage holds two of the "
            "question's words together"
        )
    return state, rule


def _named_pages(
    state: AnswerState,
    rule: str,
    question: str,
    adaptation: Adaptation | None,
    titles: Sequence[str] | None,
    pool_titles: Sequence[str] | None,
) -> tuple[AnswerState, str]:
    """The knowledge base's page names (``admit adapt``, :mod:`.pages`; read with a current adaptation and the
    admitted chunks' ``titles``): a page the question names that no admitted chunk is from caps the verdict at
    "unsure"; no retrieved candidate from it either: "not answered"."""
    if state == "not_answered" or adaptation is None or not adaptation.current or not adaptation.pages:
        return state, rule
    if titles is None:
        return state, rule
    check = page_check(question, adaptation.pages, titles, pool_titles)
    if check.absent:
        return (
            "not_answered",
            f"the question names the page {', '.join(check.absent)} and no retrieved candidate is from it",
        )
    if check.missing and state == "answered":
        return "unsure", f"the question names the page {', '.join(check.missing)} and no admitted passage is from it"
    return state, rule


def _agree(state: AnswerState, check: TermCheck, short_held: bool) -> tuple[AnswerState, str]:
    """The verdict that agrees with its reason, and the rule that changed it (``""``: none did)."""
    if state == "not_answered":
        return state, ""
    if check.absent:
        return "not_answered", f"{', '.join(check.absent)} in no retrieved candidate"
    if check.answer_type and check.type_absent:
        if check.answer_type == "unit":
            return "not_answered", f"the question counts {check.counted} and no retrieved candidate names them"
        return (
            "not_answered",
            f"the question asks for {_TYPE_WORDS[check.answer_type]} and no retrieved candidate holds one",
        )
    if state != "answered":
        return state, ""
    if check.missing and not short_held:
        return "unsure", f"no admitted passage holds {', '.join(check.missing)} nor a close word"
    if check.answer_type:
        return "unsure", f"the question asks for {_TYPE_WORDS[check.answer_type]} and no admitted passage holds one"
    return state, ""


_TYPE_WORDS = {
    "version": "a version",
    "default": "a default value",
    "steps": "a step, command or setting",
    "quantity": "a number",
    "price": "a price",
    "release": "a section of the release it names",
    "unit": "a count of a thing",
}


def _missing(question: Question, texts: Sequence[str], check: TermCheck) -> tuple[str, ...]:
    """What the note and the reason say no passage holds: the names and identifiers no passage holds as written
    (:func:`.missing_terms`) that the term check also misses, and the key terms it misses."""
    found = {m.lower() for m in check.missing}
    out = [m for m in missing_terms(question, texts) if m.lower() in found]
    out += [m for m in check.missing if m.lower() not in {o.lower() for o in out}]
    return tuple(out[:6])


def _assess_script(question: Question, texts: Sequence[str], script: str) -> Answerability:
    feats = features(question, texts)
    share = feats["best_q_cov"]
    ok = share >= SCRIPT_MIN_SHARE
    reason = (
        f"question in {script} script, which MiniLM does not read: the best passage holds {share:.0%} of its "
        f"character bigrams ({'>=' if ok else '<'} {SCRIPT_MIN_SHARE:.0%}; a rule, not a calibrated probability)"
    )
    return Answerability(
        probability=round(share, 4), state="answered" if ok else "not_answered", model="script", reason=reason
    )


def _text_of(c: Chunk) -> str:
    return f"{c.title}\n{c.text}" if c.title else c.text


def assess_kept(
    question: str | Question,
    kept: Sequence[Chunk],
    outcome: PruneOutcome | None,
    pool: Sequence[Chunk] | None = None,
    *,
    embedder: Embedder | None = None,
    adaptation: Adaptation | None = None,
) -> Answerability:
    """Whether the chunks a pruner kept answer the question, with its similarities and probabilities when it gave
    them (the setwise pruner's); ``pool``: the chunks they were chosen from."""
    texts = [_text_of(c) for c in kept]
    pool_texts = [_text_of(c) for c in pool] if pool is not None else None
    signals = outcome.signals if outcome is not None else {}
    if kept and signals and all(c.id in signals for c in kept):
        cross = outcome.cross if outcome is not None else {}
        return assess(
            question,
            texts,
            dense=[signals[c.id][0] for c in kept],
            probs=[signals[c.id][1] for c in kept],
            expected_needed=outcome.expected_needed if outcome is not None else None,
            graded=len(outcome.graded) if outcome is not None else None,
            cross=[cross[c.id] for c in kept] if cross and all(c.id in cross for c in kept) else None,
            pool=pool_texts,
            embedder=embedder,
            adaptation=adaptation,
            titles=[c.title for c in kept],
            pool_titles=[c.title for c in pool] if pool is not None else None,
        )
    return assess(
        question,
        texts,
        pool=pool_texts,
        embedder=embedder,
        adaptation=adaptation,
        titles=[c.title for c in kept],
        pool_titles=[c.title for c in pool] if pool is not None else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NoAnswer:
    """What the policy's ``on_no_answer`` leaves of the survivors (:func:`on_no_answer`)."""

    survivors: Sequence[Scored]
    """What is packed (none for ``admit_nothing``)."""
    notes: tuple[str, ...] = ()
    """The note sent first in the evidence block (``note``, ``ask_to_narrow``)."""
    withheld: tuple[Decision, ...] = ()
    """The survivors ``admit_nothing`` drops, as decisions."""


def on_no_answer(verdict: Answerability, survivors: Sequence[Scored], action: str) -> NoAnswer:
    """Apply the policy's ``on_no_answer`` (``action``) to the survivors when ``verdict`` says "not answered":
    ``admit_nothing`` withholds them all, ``note`` and ``ask_to_narrow`` add the verdict's :meth:`~Answerability.note`.
    """
    if not verdict.not_answered or not survivors:
        return NoAnswer(survivors=survivors)
    if action != "admit_nothing":
        return NoAnswer(survivors=survivors, notes=(verdict.note(action),))
    why = f"on_no_answer = admit_nothing ({verdict.reason})"
    return NoAnswer(
        survivors=[],
        withheld=tuple(
            Decision(chunk_id=s.chunk.id, state="dropped", stage="pack", reason="no_answer", score=s.score, detail=why)
            for s in survivors
        ),
    )


def no_answer_fallback(verdict: Answerability, survivor_ids: Sequence[str], action: str, noted: bool) -> list[Fallback]:
    """The ``no_answer`` fallback of a "not answered" verdict (none for ``answered`` or ``unsure``), saying what
    ``action`` did."""
    if not verdict.not_answered:
        return []
    ids = tuple(survivor_ids)
    detail = f"the admitted evidence does not answer the question ({verdict.reason})"
    if action == "admit_nothing" and ids:
        detail += "; admitted nothing (on_no_answer = admit_nothing)"
    elif noted:
        detail += f"; noted in the evidence block (on_no_answer = {action})"
    return [Fallback(kind="no_answer", detail=detail, chunk_ids=ids)]
