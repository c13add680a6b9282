"""The fitted setwise model: staged tree ensembles, a coverage ensemble and the grade cut points.

Stored as one JSON file (``data/setwise.json``, written by ``scripts/fit_setwise.py``): the trees as plain
arrays, evaluated with numpy (:mod:`admit.prune.setwise_model.trees`), and a ``meta`` block with what it was
fitted on and its out-of-sample figures. No labels or answers are stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit import modelfiles
from admit.backends.embedders.defaults import INT8_NAME
from admit.errors import ModelFileError
from admit.prune.setwise_model.coverage import COVERAGE_FEATURES, DEFAULT_KEEP_BOUNDS, coverage_features
from admit.prune.setwise_model.features import Prepared
from admit.prune.setwise_model.stages import stage_feature_names, stage_features
from admit.prune.setwise_model.trees import TreeEnsemble

__all__ = [
    "DEFAULT_CUTS",
    "DEFAULT_MODEL_PATH",
    "INT8_MODEL_PATH",
    "MODEL_VERSION",
    "SetwiseModel",
    "load_model",
    "model_path_for",
]

FloatArray = npt.NDArray[np.float64]

MODEL_VERSION = 2
DEFAULT_MODEL_PATH = modelfiles.path("setwise.json")
"""The trees fitted on float32 MiniLM vectors (``all-MiniLM-L6-v2``: the ``numpy`` and ``onnx-fp32`` encoders, and
every embedder not named below)."""
INT8_MODEL_PATH = modelfiles.path("setwise_int8.json")
"""The trees fitted on the int8 encoder's vectors (``all-MiniLM-L6-v2-int8-sq``, ``onnx-int8``): the same fit on
the same lists (``scripts/fit_setwise.py --encoder onnx-int8``), read wherever the vectors are int8 ones."""
DEFAULT_CUTS: tuple[float, float, float, float] = (0.95, 0.8, 0.6, 0.3)


def _columns(x: FloatArray, have: tuple[str, ...], want: tuple[str, ...]) -> FloatArray:
    if have == want:
        return x
    missing = [f for f in want if f not in have]
    if missing:
        raise ModelFileError(f"the model reads features this code does not compute: {missing[:5]}")
    return x[:, [have.index(f) for f in want]]


@dataclass(frozen=True, slots=True)
class SetwiseModel:
    """The fitted stages, the coverage stage and the grade cut points."""

    stages: tuple[TreeEnsemble, ...]
    coverage: TreeEnsemble | None = None
    cuts: tuple[float, float, float, float] = DEFAULT_CUTS
    meta: dict[str, Any] = field(default_factory=dict)
    keep_bounds: tuple[tuple[float, float], ...] = DEFAULT_KEEP_BOUNDS

    def predict(self, prep: Prepared) -> list[FloatArray]:
        """Runs all stages; returns the probabilities after each (the last one is the model's output)."""
        out: list[FloatArray] = []
        prev: FloatArray | None = None
        for idx, stage in enumerate(self.stages):
            x = _columns(stage_features(prep, prev), stage_feature_names(0 if idx == 0 else 1), stage.features)
            prev = stage.predict(x)
            out.append(prev)
        return out

    def complete_probs(self, probs: FloatArray, qfeat: FloatArray) -> FloatArray:
        """P(top-r set complete), r = 1..n, non-decreasing (a mass heuristic without a coverage stage)."""
        if probs.size == 0:
            return np.zeros(0)
        if self.coverage is None:
            s = np.sort(probs)[::-1]
            tail = float(s.sum()) - np.cumsum(s)
            return np.maximum.accumulate(np.exp(-np.maximum(tail, 0.0) * 3.0))
        x = _columns(coverage_features(probs, qfeat), COVERAGE_FEATURES, self.coverage.features)
        return np.maximum.accumulate(self.coverage.predict(x))

    def to_json(self) -> dict[str, Any]:
        """Serialises the model."""
        return {
            "version": MODEL_VERSION,
            "kind": "setwise-staged-trees",
            "cuts": [float(c) for c in self.cuts],
            "keep_bounds": [[float(lo), float(hi)] for lo, hi in self.keep_bounds],
            "stages": [s.to_json() for s in self.stages],
            "coverage": self.coverage.to_json() if self.coverage is not None else None,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SetwiseModel:
        """Loads a model written by :meth:`to_json`.

        Raises:
            ValueError: If the version is unsupported or the cut points are not 4 decreasing levels.
        """
        if int(d.get("version", 0)) != MODEL_VERSION:
            raise ModelFileError(
                f"unsupported setwise model version {d.get('version')!r} (this code reads {MODEL_VERSION})"
            )
        cuts = tuple(float(c) for c in d["cuts"])
        if len(cuts) != 4 or list(cuts) != sorted(cuts, reverse=True):
            raise ModelFileError("cuts must be 4 decreasing coverage levels (grades 2, 3, 4, 5)")
        cov = d.get("coverage")
        bounds = tuple((float(lo), float(hi)) for lo, hi in d.get("keep_bounds", DEFAULT_KEEP_BOUNDS))
        if len(bounds) != 4 or not all(0.0 <= lo <= hi <= 1.0 for lo, hi in bounds):
            raise ModelFileError("keep_bounds must be 4 (least, most) shares in [0, 1]")
        return cls(
            stages=tuple(TreeEnsemble.from_json(s) for s in d["stages"]),
            coverage=TreeEnsemble.from_json(cov) if cov else None,
            cuts=(cuts[0], cuts[1], cuts[2], cuts[3]),
            meta=dict(d.get("meta", {})),
            keep_bounds=bounds,
        )


def model_path_for(vectors: str | None) -> Path:
    """The shipped model file for vectors called ``vectors`` (an embedder's ``name``): :data:`INT8_MODEL_PATH` for
    the int8 encoder's, :data:`DEFAULT_MODEL_PATH` for any other (float32 MiniLM, or an embedder of its own).

    Example:
        >>> model_path_for("all-MiniLM-L6-v2-int8-sq").name, model_path_for("all-MiniLM-L6-v2").name
        ('setwise_int8.json', 'setwise.json')
    """
    return INT8_MODEL_PATH if vectors == INT8_NAME else DEFAULT_MODEL_PATH


@lru_cache(maxsize=8)
def load_model(path: str | Path = DEFAULT_MODEL_PATH) -> SetwiseModel:
    """Loads (and caches) a model file."""
    with open(path, encoding="utf-8") as fh:
        return SetwiseModel.from_json(json.load(fh))
