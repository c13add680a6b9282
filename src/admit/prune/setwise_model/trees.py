"""Gradient-boosted decision trees evaluated with numpy (no runtime beyond numpy).

The ensembles are fitted offline with scikit-learn's ``HistGradientBoostingClassifier`` (see
``scripts/fit_setwise.py``) and exported to plain arrays: one row per tree, one column per node.
Evaluation walks every tree at once, one level per step, so scoring 20 chunks through 300 trees
of depth 8 is a handful of vectorised numpy operations (well under a millisecond).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.errors import InvalidValue, ModelFileError

__all__ = ["TreeEnsemble"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]


def _blank(n_trees: int, width: int) -> tuple[IntArray, FloatArray, IntArray, IntArray, BoolArray, FloatArray]:
    """Empty node arrays (feature, threshold, left, right, missing_left, value); every node starts as a leaf."""
    shape = (n_trees, width)
    left = np.tile(np.arange(width, dtype=np.int32), (n_trees, 1))
    return (
        np.zeros(shape, dtype=np.int32),
        np.zeros(shape, dtype=np.float64),
        left,
        left.copy(),
        np.zeros(shape, dtype=np.bool_),
        np.zeros(shape, dtype=np.float64),
    )


@dataclass(frozen=True, slots=True)
class TreeEnsemble:
    """A binary-logistic tree ensemble: ``sigmoid(baseline + sum of leaf values)``.

    Attributes:
        features: The feature names, in the column order the ensemble expects.
        feature: Split feature index per (tree, node); leaves point at feature 0.
        threshold: Split threshold per (tree, node): ``x <= threshold`` goes left.
        left: Left child per (tree, node); a leaf points at itself.
        right: Right child per (tree, node); a leaf points at itself.
        missing_left: Whether a NaN goes left at that node.
        value: Leaf value per (tree, node) (0 for inner nodes).
        baseline: The raw score every tree adds to.
        depth: The maximum depth over all trees (the number of walking steps).
    """

    features: tuple[str, ...]
    feature: IntArray
    threshold: FloatArray
    left: IntArray
    right: IntArray
    missing_left: BoolArray
    value: FloatArray
    baseline: float
    depth: int
    children: IntArray = field(init=False, repr=False, compare=False)
    """Each (tree, node)'s left and right child side by side (flat: ``2 * node`` left, ``2 * node + 1`` right)."""

    def __post_init__(self) -> None:
        pairs = np.stack([self.left.ravel(), self.right.ravel()], axis=1).ravel()
        object.__setattr__(self, "children", pairs.astype(np.intp))

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return int(self.feature.shape[0])

    def raw(self, x: FloatArray) -> FloatArray:
        """Raw scores (log-odds) of a feature matrix.

        Args:
            x: Features, shape (n, len(features)).

        Returns:
            Log-odds, shape (n,).
        """
        n = x.shape[0]
        if n == 0:
            return np.zeros(0)
        if x.shape[1] != len(self.features):
            raise InvalidValue(f"expected {len(self.features)} features, got {x.shape[1]}")
        # flat gathers (np.take on raveled arrays): the same lookups as [trees, node], without 2-D fancy indexing
        width = self.feature.shape[1]
        base = (np.arange(self.n_trees, dtype=np.intp) * width)[None, :]
        xs = np.ascontiguousarray(x, dtype=np.float64).ravel()
        rows = (np.arange(n, dtype=np.intp) * x.shape[1])[:, None]
        feature, threshold = self.feature.ravel(), self.threshold.ravel()
        missing_left, children = self.missing_left.ravel(), self.children
        at = np.broadcast_to(base, (n, self.n_trees)).copy()  # flat index of each (row, tree)'s node
        nan = bool(np.isnan(xs).any())  # without a missing value, no node's missing direction is read
        for _ in range(self.depth):
            v = np.take(xs, rows + np.take(feature, at))
            go_left = v <= np.take(threshold, at)
            if nan:
                go_left |= np.isnan(v) & np.take(missing_left, at)
            step = base + np.take(children, 2 * at + ~go_left)  # the left child, or the right one beside it
            if np.array_equal(step, at):
                break  # every walk is at its leaf (a leaf is its own child): the rest of the levels change nothing
            at = step
        out: FloatArray = self.baseline + np.take(self.value.ravel(), at).sum(axis=1)
        return out

    def predict(self, x: FloatArray) -> FloatArray:
        """Probabilities of a feature matrix.

        Args:
            x: Features, shape (n, len(features)).

        Returns:
            Probabilities, shape (n,).
        """
        r = self.raw(x)
        out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(r, -40.0, 40.0)))
        return out

    def to_json(self) -> dict[str, Any]:
        """Serialises the ensemble (trees as lists of node arrays, padding dropped).

        Returns:
            A JSON-able dict.
        """
        trees = []
        for t in range(self.n_trees):
            used = int(np.max(np.concatenate([self.left[t], self.right[t]]))) + 1
            used = max(used, 1)
            trees.append(
                {
                    "f": self.feature[t, :used].tolist(),
                    "t": [float(v) for v in self.threshold[t, :used]],
                    "l": self.left[t, :used].tolist(),
                    "r": self.right[t, :used].tolist(),
                    "m": [int(b) for b in self.missing_left[t, :used]],
                    "v": [float(v) for v in self.value[t, :used]],
                }
            )
        return {
            "kind": "trees",
            "features": list(self.features),
            "baseline": self.baseline,
            "depth": self.depth,
            "trees": trees,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TreeEnsemble:
        """Loads an ensemble written by :meth:`to_json`.

        Args:
            d: The dict.

        Returns:
            The ensemble.

        Raises:
            ValueError: If the arrays are inconsistent.
        """
        trees = d["trees"]
        if not trees:
            raise ModelFileError("a tree ensemble needs at least one tree")
        feature, threshold, left, right, missing, value = _blank(len(trees), max(len(t["f"]) for t in trees))
        n_feat = len(d["features"])
        for i, t in enumerate(trees):
            k = len(t["f"])
            if not all(len(t[key]) == k for key in ("t", "l", "r", "m", "v")):
                raise ModelFileError(f"tree {i}: node arrays of different lengths")
            feature[i, :k] = t["f"]
            threshold[i, :k] = t["t"]
            left[i, :k] = t["l"]
            right[i, :k] = t["r"]
            missing[i, :k] = t["m"]
            value[i, :k] = t["v"]
            if (
                feature[i, :k].max(initial=0) >= n_feat
                or left[i, :k].max(initial=0) >= k
                or right[i, :k].max(initial=0) >= k
            ):
                raise ModelFileError(f"tree {i}: index out of range")
        return cls(
            features=tuple(d["features"]),
            feature=feature,
            threshold=threshold,
            left=left,
            right=right,
            missing_left=missing,
            value=value,
            baseline=float(d["baseline"]),
            depth=int(d["depth"]),
        )

    @classmethod
    def from_sklearn(cls, clf: Any, features: tuple[str, ...]) -> TreeEnsemble:
        """Exports a fitted binary ``HistGradientBoostingClassifier`` (fitting-time helper).

        Args:
            clf: The fitted classifier (numerical features only).
            features: Names of its input columns.

        Returns:
            The ensemble.
        """
        preds = [p[0] for p in clf._predictors]
        feature, threshold, left, right, missing, value = _blank(len(preds), max(len(p.nodes) for p in preds))
        depth = 0
        for i, p in enumerate(preds):
            nd = p.nodes
            k = len(nd)
            leaf = nd["is_leaf"].astype(bool)
            feature[i, :k] = np.where(leaf, 0, nd["feature_idx"])
            threshold[i, :k] = np.where(leaf, 0.0, nd["num_threshold"])
            left[i, :k] = np.where(leaf, np.arange(k), nd["left"])
            right[i, :k] = np.where(leaf, np.arange(k), nd["right"])
            missing[i, :k] = nd["missing_go_to_left"].astype(bool)
            value[i, :k] = np.where(leaf, nd["value"], 0.0)
            depth = max(depth, int(nd["depth"].max()))
        baseline = float(np.asarray(clf._baseline_prediction).ravel()[0])
        return cls(features, feature, threshold, left, right, missing, value, baseline, depth)
