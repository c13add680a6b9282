"""Answerability: whether the admitted evidence answers the question, as a calibrated probability.

A stage of its own, after prune (and the source cap) and before pack: it changes what is admitted (the policy's
``on_no_answer``). A pruner grades chunks *within* a list: its top chunk is "essential" even when the list is
about something else. Answerability is the absolute check on top: a logistic model over what the admitted set
holds of the question (:mod:`.features`: the share of the question's words the best passage and the union of
passages hold, its capitalised entities, an exact identifier the question names and no passage carries) and, when
the setwise pruner ran, its absolute dense similarity and probabilities.

It is computed once per request, on the :class:`~admit.decide.PruneRun` (:func:`admit.decide.assess_run`), as an
:class:`Answerability` record that every face reads: the pack result, ``/v1/prune``, the MCP tools, the adapters,
the evaluation harness, the trace and the inspector. Its verdict is ``answered``, ``unsure`` or ``not_answered``;
``answerable`` says the same on every face: ``True``, ``None`` (unsure) or ``False`` (:data:`ANSWERABLE`).

The small models ship in ``modelfiles/answerability.json`` (written by ``scripts/fit_answerability.py``; see
:mod:`.model`): one for evidence the setwise pruner graded, one for evidence no pruner scored (``lexical``:
strategy ``none`` or another pruner), one with the cross-encoder's scores (``cross``). They are fitted on the
project's labelled training lists with their gold chunks removed to make unanswerable cases, and validated on
its evaluation lists the same way; the file holds the coefficients, the feature scalings and the measured figures,
never a label.

Text in a script MiniLM does not read (CJK, Thai, ...; :func:`~admit._text.unreadable_script`) is matched by
character bigrams instead of words.
"""

from __future__ import annotations

from admit.answerability.features import FEATURES, SETWISE, features, is_short, key_terms, missing_terms
from admit.answerability.model import (
    DEFAULT_PATH,
    OFF_TOPIC_COVER,
    OFF_TOPIC_DENSE,
    STATES,
    AnswerabilityModel,
    load_models,
)
from admit.answerability.record import ANSWERABLE, Answerability, answerable_for
from admit.answerability.stage import (
    MIN_SETWISE_LIST,
    SCRIPT_MIN_SHARE,
    NoAnswer,
    assess,
    assess_kept,
    no_answer_fallback,
    on_no_answer,
)

__all__ = [
    "ANSWERABLE",
    "DEFAULT_PATH",
    "FEATURES",
    "MIN_SETWISE_LIST",
    "OFF_TOPIC_COVER",
    "OFF_TOPIC_DENSE",
    "SCRIPT_MIN_SHARE",
    "SETWISE",
    "STATES",
    "Answerability",
    "AnswerabilityModel",
    "NoAnswer",
    "answerable_for",
    "assess",
    "assess_kept",
    "features",
    "is_short",
    "key_terms",
    "load_models",
    "missing_terms",
    "no_answer_fallback",
    "on_no_answer",
]
