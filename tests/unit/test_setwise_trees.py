"""The numpy tree ensemble reproduces scikit-learn's predictions and survives a JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from admit.prune.setwise_model import TreeEnsemble


def test_numpy_trees_match_sklearn_including_missing_values() -> None:
    sk = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 8))
    x[rng.random(x.shape) < 0.03] = np.nan
    y = (np.nansum(x[:, :3], axis=1) + rng.normal(size=2000) > 0).astype(int)
    clf = sk.HistGradientBoostingClassifier(max_iter=40, max_leaf_nodes=15, early_stopping=False).fit(x, y)
    ens = TreeEnsemble.from_sklearn(clf, tuple(f"f{i}" for i in range(8)))
    again = TreeEnsemble.from_json(json.loads(json.dumps(ens.to_json())))
    assert np.abs(again.predict(x) - clf.predict_proba(x)[:, 1]).max() < 1e-9
    assert again.predict(np.zeros((0, 8))).shape == (0,)
    with pytest.raises(ValueError):
        again.predict(np.zeros((3, 7)))


def test_inconsistent_tree_files_are_rejected() -> None:
    good = {"f": [0, 0, 0], "t": [0.5, 0.0, 0.0], "l": [1, 1, 2], "r": [2, 1, 2], "m": [0, 0, 0], "v": [0.0, -1.0, 1.0]}
    ens = TreeEnsemble.from_json({"features": ["a"], "baseline": 0.0, "depth": 1, "trees": [good]})
    assert ens.predict(np.array([[0.0], [1.0]]))[0] < 0.5 < ens.predict(np.array([[1.0]]))[0]
    with pytest.raises(ValueError):
        TreeEnsemble.from_json({"features": ["a"], "baseline": 0.0, "depth": 1, "trees": [{**good, "l": [5, 1, 2]}]})
    with pytest.raises(ValueError):
        TreeEnsemble.from_json({"features": ["a"], "baseline": 0.0, "depth": 1, "trees": [{**good, "v": [0.0]}]})
    with pytest.raises(ValueError):
        TreeEnsemble.from_json({"features": ["a"], "baseline": 0.0, "depth": 1, "trees": []})
