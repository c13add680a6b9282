"""Answerability: whether the admitted evidence answers the question, as a calibrated probability.

A pruner grades chunks *within* a list: its top chunk is "essential" even when the list is about something
else. Answerability is the absolute check on top: a logistic model over what the admitted set holds of the
question (the share of the question's words the best passage and the union of passages hold, its capitalised
entities, an exact identifier the question names and no passage carries) and, when the setwise pruner ran, its
absolute dense similarity and probabilities.

Two small models ship in ``modelfiles/answerability.json`` (written by ``scripts/fit_answerability.py``): one
for evidence the setwise pruner graded (``setwise``), one for evidence no pruner scored (``lexical``: strategy
``none`` or another pruner). They are fitted on public labelled training lists with their gold chunks removed
to make unanswerable cases, and validated on held-out lists the same way; the file holds the coefficients,
the feature scalings and the measured figures, never a label.

Text in a script MiniLM does not read (CJK, Thai, ...; see :func:`unreadable_script`) is matched by character
bigrams instead of words.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from admit import _linear, modelfiles
from admit.prune.base import PruneOutcome
from admit.prune.setwise_model import text as tx
from admit.prune.setwise_model.text import char_bigrams, unreadable_script
from admit.types import Chunk

__all__ = [
    "DEFAULT_PATH",
    "FEATURES",
    "MIN_SETWISE_LIST",
    "STATES",
    "Answerability",
    "AnswerabilityModel",
    "assess",
    "assess_kept",
    "char_bigrams",
    "features",
    "load_models",
    "unreadable_script",
]

DEFAULT_PATH = modelfiles.path("answerability.json")

#: What the evidence holds of the question: every model reads these.
_LEXICAL = ("best_q_cov", "union_q_cov", "best_entity_cov", "union_entity_cov", "ident_missing", "best_bigram_cov")

#: Feature names per model.
FEATURES: dict[str, tuple[str, ...]] = {
    "lexical": _LEXICAL,
    "setwise": (*_LEXICAL, "best_dense", "mean_dense_top2", "best_prob"),
    # with the cross model's scores of the kept chunks (setwise with ``cross`` on)
    "cross": (*_LEXICAL, "cross_best", "cross_second", "cross_margin"),
}
_KNOWN_FEATURES = frozenset(f for names in FEATURES.values() for f in names)


def _stem(w: str) -> str:
    """A light stem: "files" and "file", "restores" and "restore" are one word here."""
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def _entities(question: str) -> set[str]:
    """The question's capitalised words and numbers, its first word excluded (a sentence start, not a name)."""
    first = tx.words(question)[:1]
    return {_stem(w) for w in tx.capitalised_tokens(question) if w not in first}


def _q_units(question: str, script: str | None) -> list[str]:
    if script is not None:
        qb = char_bigrams(question)
        own = sorted(b for b in qb if any(unreadable_script(ch) for ch in b))
        return own or sorted(qb)
    return list(dict.fromkeys(_stem(w) for w in tx.content_tokens(question)))


def _units(text: str, script: str | None) -> set[str]:
    if script is not None:
        return char_bigrams(text)
    return {_stem(w) for w in tx.content_tokens(text)} | {_stem(w) for w in tx.capitalised_tokens(text)}


#: The three verdicts, worst first. Only ``not_answered`` triggers the policy's ``on_no_answer``.
STATES = ("not_answered", "unsure", "answered")

#: Words of a short question that name no content ("What does E4012 mean?" asks about E4012 alone).
_GENERIC = frozenset(
    [
        "mean",
        "means",
        "meaning",
        "meant",
        "many",
        "much",
        "number",
        "numbers",
        "count",
        "stand",
        "stands",
        "define",
        "definition",
        "defined",
        "refer",
        "refers",
        "called",
        "call",
        "used",
        "use",
        "uses",
        "work",
        "works",
        "happen",
        "happens",
    ]
)
_SHORT_FORM = _linear.compile(
    r"^\s*(what\s+(does|do|is|are)\b.*\b(mean|stand\s+for)\b|how\s+(many|much)\b|define\b)",
    re.IGNORECASE,
    name="answerability.short_form",
)
_WORD_AS_WRITTEN = _linear.compile(r"\w+", name="answerability.word")


def key_terms(question: str) -> list[str]:
    """The question's content words less the generic ones of a short question's form (stemmed)."""
    return [w for w in dict.fromkeys(_stem(w) for w in tx.content_tokens(question)) if w not in _GENERIC]


def is_short(question: str) -> bool:
    """A short question: "What does X mean?", "how many ...", "define X", or at most three content words."""
    return bool(_SHORT_FORM.match(question)) or len(key_terms(question)) <= 2 or len(tx.words(question)) <= 3


def features(
    question: str,
    texts: Sequence[str],
    *,
    dense: Sequence[float] | None = None,
    probs: Sequence[float] | None = None,
    expected_needed: float | None = None,
    cross: Sequence[float] | None = None,
) -> dict[str, float]:
    """The answerability features of an evidence set (``texts``: the admitted passages, title included).

    ``dense`` and ``probs`` (one per text) and ``expected_needed`` are the setwise pruner's absolute cosine,
    probability and expected number of needed chunks; without them only the lexical features are meaningful.
    """
    script = unreadable_script(question)
    q_units = _q_units(question, script)
    q_ents = _entities(question) if script is None else set()
    q_pairs = set(itertools.pairwise(q_units)) if script is None else set()
    asked = tx.identifiers(question)
    best_cov = union = best_ent = best_pair = 0.0
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
        if q_pairs:
            toks = [_stem(w) for w in tx.content_tokens(t)]
            best_pair = max(best_pair, len(set(itertools.pairwise(toks)) & q_pairs) / len(q_pairs))
        if asked and not found_ident and asked & tx.identifiers(t):
            found_ident = True
    union = len(hit_any) / max(1, len(q_units))
    short_held = 0.0
    if script is None and texts and is_short(question):
        # an identifier the question names ("What does E4012 mean?") is its key alone; else its key words
        keys = {w.lower() for w in asked} if asked else set(key_terms(question))
        if keys and any(keys <= (_units(t, None) | {w.lower() for w in tx.identifiers(t)}) for t in texts):
            short_held = 1.0
    d = sorted((float(x) for x in dense or ()), reverse=True)
    p = [float(x) for x in probs or ()]
    c = sorted((float(x) for x in cross or ()), reverse=True)
    return {
        "best_q_cov": best_cov,
        "union_q_cov": union,
        "best_entity_cov": best_ent if q_ents else best_cov,
        # a name the question asks about (Kerberos, MongoDB) that no passage holds
        "union_entity_cov": len(ent_any) / len(q_ents) if q_ents else union,
        "ident_missing": 1.0 if asked and texts and not found_ident else 0.0,
        "best_bigram_cov": best_pair if q_pairs else best_cov,
        "log_n": math.log1p(len(texts)),
        "best_dense": d[0] if d else 0.0,
        "mean_dense_top2": sum(d[:2]) / len(d[:2]) if d else 0.0,
        "best_prob": max(p) if p else 0.0,
        "log_expected": math.log(max(expected_needed or 0.0, 1e-3)),
        # a short question ("What does X mean?") whose every key term one passage holds: answered by rule
        "short_held": short_held,
        # the cross model's scores of the kept chunks: the best, the second (the best again for one chunk), margin
        "cross_best": c[0] if c else 0.0,
        "cross_second": c[1] if len(c) > 1 else (c[0] if c else 0.0),
        "cross_margin": c[0] - c[1] if len(c) > 1 else 0.0,
    }


#: Off topic: the best passage's MiniLM cosine below this and ...
OFF_TOPIC_DENSE = 0.15
#: ... less than this share of the question's content words in all passages together. Measured on the fitting
#: cases (``scripts/fit_answerability.py --dump``): at most 1% of the answerable lists of any family.
OFF_TOPIC_COVER = 0.25

#: The setwise model reads the pruner's probabilities only for a graded list at least this long.
MIN_SETWISE_LIST = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerabilityModel:
    """A fitted logistic model: standardised features, coefficients, bias and the decision threshold."""

    name: str
    """``setwise`` or ``lexical``."""
    features: tuple[str, ...]
    """The features it reads, in order."""
    mean: tuple[float, ...]
    """Feature means on the training set."""
    scale: tuple[float, ...]
    """Feature standard deviations on the training set."""
    coef: tuple[float, ...]
    """Coefficients of the standardised features."""
    bias: float
    """Intercept."""
    threshold: float = 0.5
    """Below it: "not answered" (``answerable`` is ``False``)."""
    answered_at: float | None = None
    """At or above it: "answered"; between the two: "unsure" (``None``: the threshold, so there is no band)."""

    def state(self, feats: Mapping[str, float]) -> str:
        """``not_answered``, ``unsure`` or ``answered`` (one of :data:`STATES`) for these features.

        Two rules come before the thresholds: a short question whose key terms a passage holds is answered; evidence
        that holds almost none of the question and is barely similar to it (a model that reads similarity: below
        :data:`OFF_TOPIC_DENSE` and :data:`OFF_TOPIC_COVER`) is not."""
        if feats.get("short_held"):
            return "answered"
        if (
            "best_dense" in self.features
            and feats["best_dense"] < OFF_TOPIC_DENSE
            and feats["union_q_cov"] < OFF_TOPIC_COVER
        ):
            return "not_answered"
        p = self.probability(feats)
        if p < self.threshold:
            return "not_answered"
        return "answered" if p >= (self.answered_at if self.answered_at is not None else self.threshold) else "unsure"

    def probability(self, feats: Mapping[str, float]) -> float:
        """P(the evidence answers the question)."""
        z = self.bias
        for name, m, s, c in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            z += c * (float(feats[name]) - m) / (s or 1.0)
        z = max(-30.0, min(30.0, z))
        return 1.0 / (1.0 + math.exp(-z))

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "bias": self.bias,
            "threshold": self.threshold,
            "answered_at": self.answered_at,
        }

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> AnswerabilityModel:
        """Read a stored model; the features must be ones :func:`features` computes."""
        feats = tuple(str(f) for f in d["features"])
        unknown = [f for f in feats if f not in _KNOWN_FEATURES]
        if unknown:
            raise ValueError(f"answerability model {name!r} reads unknown features {unknown}")
        vals = [tuple(float(v) for v in d[k]) for k in ("mean", "scale", "coef")]
        if any(len(v) != len(feats) for v in vals):
            raise ValueError(f"answerability model {name!r}: mean, scale and coef must have {len(feats)} values")
        return cls(
            name=name,
            features=feats,
            mean=vals[0],
            scale=vals[1],
            coef=vals[2],
            bias=float(d["bias"]),
            threshold=float(d.get("threshold", 0.5)),
            answered_at=float(d["answered_at"]) if d.get("answered_at") is not None else None,
        )


@lru_cache(maxsize=4)
def load_models(path: str = str(DEFAULT_PATH)) -> dict[str, AnswerabilityModel]:
    """The shipped models by name (``setwise``, ``lexical``)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: AnswerabilityModel.from_json(name, d) for name, d in data["models"].items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answerability:
    """The verdict on one evidence set."""

    probability: float
    """P(the admitted evidence answers the question)."""
    answerable: bool
    """``False`` only when the verdict is ``not_answered`` (which triggers the policy's ``on_no_answer``)."""
    model: str
    """The model that decided (``setwise``, ``lexical``; ``empty`` when nothing was admitted)."""
    reason: str
    """Why, in words (for the trace, the ``no_answer`` fallback and the human output)."""
    state: str = ""
    """``answered``, ``unsure`` or ``not_answered`` (:data:`STATES`); "unsure" changes nothing admitted."""
    missing: tuple[str, ...] = ()
    """The question's names, identifiers and key words that no admitted passage holds (what the note says)."""

    def __post_init__(self) -> None:
        if not self.state:
            object.__setattr__(self, "state", "answered" if self.answerable else "not_answered")
        if self.state not in STATES:
            raise ValueError(f"state must be one of {STATES}, got {self.state!r}")


def assess(
    question: str,
    texts: Sequence[str],
    *,
    dense: Sequence[float] | None = None,
    probs: Sequence[float] | None = None,
    expected_needed: float | None = None,
    graded: int | None = None,
    models: Mapping[str, AnswerabilityModel] | None = None,
    cross: Sequence[float] | None = None,
) -> Answerability:
    """Decide whether ``texts`` (the admitted evidence) answer ``question``.

    Uses the ``cross`` model when the cross-encoder's scores (``cross``) are given for every text and the file has
    one; else the ``setwise`` model when the setwise pruner's ``dense`` and ``probs`` are given for every text and
    it graded a list of at least :data:`MIN_SETWISE_LIST` (``graded``: its length); else the ``lexical`` one: the
    trees' probabilities of a list of one or two chunks are not on the scale of the lists they were fitted on.

    Example:
        >>> a = assess("What port does the server listen on?", ["The server listens on port 8080."])
        >>> a.answerable
        True
        >>> assess("What port does the server listen on?", []).answerable
        False
    """
    if not texts:
        return Answerability(probability=0.0, answerable=False, model="empty", reason="no evidence was admitted")
    script = unreadable_script(question)
    if script is not None:
        return _assess_script(question, texts, script)
    models = models if models is not None else load_models()
    use_setwise = (
        dense is not None
        and probs is not None
        and len(dense) == len(texts) == len(probs)
        and (graded is None or graded >= MIN_SETWISE_LIST)
    )
    use_cross = cross is not None and len(cross) == len(texts) and "cross" in models
    model = models["cross" if use_cross else "setwise" if use_setwise else "lexical"]
    feats = features(question, texts, dense=dense, probs=probs, expected_needed=expected_needed, cross=cross)
    p = model.probability(feats)
    state = model.state(feats)
    hi = model.answered_at if model.answered_at is not None else model.threshold
    if feats["short_held"]:
        head = f"short question whose key terms a passage holds: answered (p={p:.2f}, {model.name})"
    else:
        band = "<" if state == "not_answered" else (">=" if state == "answered" else "between")
        head = f"p={p:.2f} {band} [{model.threshold:.2f}, {hi:.2f}] ({model.name}): {state.replace('_', ' ')}"
    parts = [
        head,
        f"best passage holds {feats['best_q_cov']:.0%} of the question's content words, "
        f"all passages {feats['union_q_cov']:.0%}",
    ]
    if use_setwise:
        parts.append(f"best similarity {feats['best_dense']:.2f}")
    missing = missing_terms(question, texts)
    if missing:
        parts.append(f"no passage names {', '.join(missing)}")
    return Answerability(
        probability=round(p, 4),
        answerable=state != "not_answered",
        model=model.name,
        reason="; ".join(parts),
        state=state,
        missing=missing,
    )


def missing_terms(question: str, texts: Sequence[str], limit: int = 6) -> tuple[str, ...]:
    """The question's identifiers, names and key words that no passage holds, in the question's order."""
    if unreadable_script(question) is not None:
        return ()
    held: set[str] = set()
    idents: set[str] = set()
    for t in texts:
        held |= _units(t, None)
        idents |= {i.lower() for i in tx.identifiers(t)}
    out: list[str] = [i for i in sorted(tx.identifiers(question)) if i.lower() not in idents]
    seen = {i.lower() for i in out}
    content = set(tx.content_tokens(question))
    for w in dict.fromkeys(tx.words(question)):
        st = _stem(w)
        if w in content and st not in _GENERIC and st not in held and w not in seen and st not in seen:
            out.append(w)
            seen |= {w, st}
    shown = {m.lower(): m for m in reversed(_WORD_AS_WRITTEN.findall(question))}
    return tuple(shown.get(w, w) for w in out[:limit])


#: For a question in a script MiniLM does not read, the evidence answers when its best passage holds at least this
#: share of the question's character bigrams (of that script). A rule, not a fitted model: no training list is in
#: such a script.
SCRIPT_MIN_SHARE = 0.2


def _assess_script(question: str, texts: Sequence[str], script: str) -> Answerability:
    feats = features(question, texts)
    share = feats["best_q_cov"]
    ok = share >= SCRIPT_MIN_SHARE
    reason = (
        f"question in {script} script, which MiniLM does not read: the best passage holds {share:.0%} of its "
        f"character bigrams ({'>=' if ok else '<'} {SCRIPT_MIN_SHARE:.0%}; a rule, not a calibrated probability)"
    )
    return Answerability(probability=round(share, 4), answerable=ok, model="script", reason=reason)


def assess_kept(question: str, kept: Sequence[Chunk], outcome: PruneOutcome | None) -> Answerability:
    """Whether the chunks a pruner kept answer the question, with its similarities and probabilities when it gave
    them (``setwise``): the one call behind the pipeline, ``/v1/prune``, the MCP tools, the adapters and eval."""
    texts = [f"{c.title}\n{c.text}" if c.title else c.text for c in kept]
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
        )
    return assess(question, texts)
