"""The fitted answerability models: logistic models over :mod:`.features`, read from ``answerability.json``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from admit import modelfiles
from admit.answerability.features import KNOWN_FEATURES
from admit.errors import ModelFileError
from admit.types import ANSWER_STATES, AnswerState

__all__ = [
    "ABSENT_NAME_BELOW",
    "DEFAULT_PATH",
    "OFF_TOPIC_COVER",
    "OFF_TOPIC_DENSE",
    "STATES",
    "AnswerabilityModel",
    "load_models",
]

DEFAULT_PATH = modelfiles.path("answerability.json")

#: The three verdicts, worst first. Only ``not_answered`` triggers the policy's ``on_no_answer``.
STATES = ANSWER_STATES

#: Off topic: the best passage's MiniLM cosine below this and ...
OFF_TOPIC_DENSE = 0.15
#: ... less than this share of the question's content words in all passages together. Measured on the fitting
#: cases (``scripts/fit_answerability.py --dump``): at most 1% of the answerable lists of any family.
OFF_TOPIC_COVER = 0.25
#: A name the question asks about (a capitalised word past the first, a number) that no retrieved candidate holds,
#: with the probability below this: "not answered" (the documentation never mentions it: "back up to Amazon S3"
#: where no chunk names S3). Measured leave one family out on the fitting cases (docs/pruning.md): with it, "not
#: answered" is said of 0-7% of the answerable lists of every family but the API-call ones (RESTBench 60%,
#: APIBench 14%), whose answerable questions name what no chunk holds (an artist, a playlist).
ABSENT_NAME_BELOW = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerabilityModel:
    """A fitted logistic model: standardised features, coefficients, bias and the decision threshold."""

    name: str
    features: tuple[str, ...]
    """Its name, a key of :data:`~admit.answerability.features.FEATURES` (the setwise pruner's, ``lexical``,
    ``cross``), and the features it reads, in order."""
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

    @property
    def answered_from(self) -> float:
        """The probability from which the verdict is "answered" (:attr:`answered_at`, else the threshold)."""
        return self.answered_at if self.answered_at is not None else self.threshold

    def state(self, feats: Mapping[str, float]) -> AnswerState:
        """``not_answered``, ``unsure`` or ``answered`` (one of :data:`STATES`) for these features.

        Two rules come before the thresholds: a short question whose key terms a passage holds is answered; evidence
        that holds almost none of the question and is barely similar to it (a model that reads similarity: below
        :data:`OFF_TOPIC_DENSE` and :data:`OFF_TOPIC_COVER`) is not. One comes after the lower threshold: a name of
        the question that no retrieved candidate holds, below :data:`ABSENT_NAME_BELOW` (a model that reads the
        pool), is not answered either."""
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
        if self.names_absent(feats, p):
            return "not_answered"
        return "answered" if p >= self.answered_from else "unsure"

    def names_absent(self, feats: Mapping[str, float], p: float) -> bool:
        """The absent-name rule of :meth:`state`: a name of the question is in no retrieved candidate and ``p`` is
        below :data:`ABSENT_NAME_BELOW` (only for a model that reads the pool)."""
        return "pool_entity_cov" in self.features and feats.get("pool_names_absent", 0.0) > 0 and p < ABSENT_NAME_BELOW

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
        """Read a stored model; the features must be ones :func:`~admit.answerability.features.features` computes."""
        feats = tuple(str(f) for f in d["features"])
        unknown = [f for f in feats if f not in KNOWN_FEATURES]
        if unknown:
            raise ModelFileError(f"answerability model {name!r} reads unknown features {unknown}")
        vals = [tuple(float(v) for v in d[k]) for k in ("mean", "scale", "coef")]
        if any(len(v) != len(feats) for v in vals):
            raise ModelFileError(f"answerability model {name!r}: mean, scale and coef must have {len(feats)} values")
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
    """The shipped models by name (the keys of :data:`~admit.answerability.features.FEATURES`)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: AnswerabilityModel.from_json(name, d) for name, d in data["models"].items()}
