"""Setwise with stored vectors: the cheap paths give the plain paths' answers (issue 48, item 4)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from admit import _text
from admit.prune.setwise_model import crosslang, rules
from admit.prune.setwise_model.model import load_model
from admit.prune.setwise_model.trees import TreeEnsemble

_LATIN = "The quick brown fox — “jumps” over 3 lazy dogs; café naïve Ærø ß ĳ ǅ 2²½ ©"


def _walk_2d(e: TreeEnsemble, x: np.ndarray) -> np.ndarray:
    """The ensemble walked with 2-D fancy indexing (the plain form of :meth:`TreeEnsemble.raw`)."""
    trees = np.arange(e.n_trees)[None, :]
    rows = np.arange(x.shape[0])[:, None]
    node = np.zeros((x.shape[0], e.n_trees), dtype=np.int32)
    for _ in range(e.depth):
        v = x[rows, e.feature[trees, node]]
        go_left = (v <= e.threshold[trees, node]) | (np.isnan(v) & e.missing_left[trees, node])
        node = np.where(go_left, e.left[trees, node], e.right[trees, node])
    out: np.ndarray = e.baseline + e.value[trees, node].sum(axis=1)
    return out


def test_flat_tree_walk_equals_the_2d_walk_on_the_shipped_trees() -> None:
    rng = np.random.default_rng(0)
    model = load_model()
    for e in [*model.stages, *([model.coverage] if model.coverage else [])]:
        for dtype in (np.float64, np.float32):
            for n in (1, 7, 30):
                x = rng.normal(size=(n, len(e.features))).astype(dtype)
                x[rng.random(x.shape) < 0.15] = np.nan
                assert np.array_equal(e.raw(x), _walk_2d(e, x))


def test_latin_text_skips_the_letter_by_letter_script_count(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: object, **_k: object) -> object:
        raise AssertionError("counted letter by letter")

    monkeypatch.setattr(crosslang, "letter_scripts", boom)
    monkeypatch.setattr(rules, "unreadable_script", boom)
    assert crosslang.language_of(_LATIN * 20) is None
    assert rules.script_of(_LATIN * 20) is None


@pytest.mark.parametrize("extra", ["", "ª", "µ", "º", "Ελληνικά", "Москва", "東京", "ไทย", "हिन्दी", "١٢٣", "Ꭰ"])
def test_script_answers_equal_the_full_count(extra: str) -> None:
    rng = random.Random(len(extra))
    for _ in range(50):
        words = [rng.choice(_LATIN.split()) for _ in range(rng.randint(0, 12))]
        words += [extra] * rng.randint(0, 12)
        rng.shuffle(words)
        text = " ".join(words)
        letters, counts = _text.letter_scripts(text, limit=2000)
        counts.pop("LATIN", None)
        best = max(counts, key=lambda k: counts[k]) if counts else None
        want = best if letters and best and counts[best] / letters >= crosslang.FOREIGN_SHARE else None
        assert crosslang._script(text) == want, text
        assert rules.script_of(text) == _text.unreadable_script(text), text


def test_language_counts_stop_words_as_before() -> None:
    text = "der die und ist nicht mit das den von zu " * 3 + "the of and"
    assert crosslang.language_of(text) == "German"
    assert (
        crosslang.language_of("le chat est dans la maison et les enfants sont avec une amie pour le jour") == "French"
    )
    assert crosslang.language_of("The report is on the table and the keys are in the drawer.") is None
