"""Issue 34 items 9 and 11: deep on-topic lists graded by the set, and grades that agree with ``p`` or say why."""

from __future__ import annotations

import numpy as np

from admit.backends.embedders.fake import FakeEmbedder
from admit.prune import setwise_model as sm
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.prune.setwise_model.coverage import DEEP_LIST, grade_of_prob
from admit.prune.setwise_model.scorer import agreement_notes, apply_rules


def _kept(n: int, *, deep: bool = True) -> int:
    # an on-topic list: every chunk a little likely, the coverage model never sure the top r are complete
    probs = np.linspace(0.3, 0.2, n)
    cov = np.r_[0.0, np.full(n - 1, 0.5)]
    return int((np.array(sm.grades(probs, cov, sm.DEFAULT_CUTS, deep=deep)) >= 3).sum())


def test_a_deep_list_keeps_what_a_list_of_fifty_would_not_a_share_of_its_length() -> None:
    """500 on-topic chunks kept 225 at threshold 3 (45% of the list); now what 50 would keep."""
    fifty = _kept(DEEP_LIST)
    assert fifty == 22  # floor(0.45 * 50), as before
    assert _kept(500, deep=False) == 225  # the old share clamp (what main does)
    for n in (51, 100, 500, 2000):
        assert _kept(n) == fifty
    # lists of at most DEEP_LIST are graded exactly as before
    for n in (1, 4, 10, 30, 50):
        probs, cov = np.linspace(0.3, 0.2, n), np.r_[0.0, np.full(n - 1, 0.5)]
        assert sm.grades(probs, cov, sm.DEFAULT_CUTS) == sm.grades(probs, cov, sm.DEFAULT_CUTS, deep=False)


def test_a_deep_list_through_the_scorer_keeps_a_bounded_count_and_says_why() -> None:
    """The whole scorer on 300 near-identical on-topic chunks (fake embeddings): a bounded count, with a reason."""
    scorer = SetwiseScorer(embedder=FakeEmbedder(), cross=False)
    q = "How do I configure the Ferrule replication queue?"
    items = [
        SetwiseItem(
            id=f"c{i}",
            title=f"Ferrule guide › Replication {i}",
            text=f"The Ferrule replication queue is configured in section {i}. Replication queue settings {i % 7}.",
        )
        for i in range(300)
    ]
    s = scorer.score(q, items)
    kept = sum(g >= 3 for g in s.grades)
    assert 1 <= kept <= 22, kept  # floor(0.45 * DEEP_LIST); main keeps a share of 300
    cut = [r for r in s.reasons if "deep list of 300" in r]
    assert cut, "the chunks the deep-list cut-off graded down say so"
    assert any("set by the deep-list cut-off" in r for r in cut)


def test_grade_of_prob_is_monotone() -> None:
    ps = np.linspace(0.0, 1.0, 101)
    gs = [grade_of_prob(float(p)) for p in ps]
    assert gs == sorted(gs) and gs[0] == 1 and gs[-1] == 5


def test_a_grade_against_its_probability_names_what_set_it() -> None:
    """Item 11: "grade 5 ... p=0.03" said nothing; the reason now names the list's coverage or the rule."""
    probs = np.array([0.03, 0.01, 0.6])
    cov = np.array([0.0, 0.4, 0.0])
    out = agreement_notes(probs, cov, [5, 3, 5], ["a", "b", "c"], ["the list's coverage", "", "the release rule"])
    assert "grade 5 against p=0.03 (p alone: grade 2): set by the list's coverage" in out[0]
    assert "rank 2 of 3" in out[0]
    assert "grade 3 against p=0.01 (p alone: grade 1)" in out[1]
    assert out[2] == "c"  # p=0.6 reads as 5: nothing to explain


def test_apply_rules_names_the_rule_that_moved_a_grade() -> None:
    q = "What changed in Ferrule 4.2?"
    items = [
        SetwiseItem(id="a", title="Changelog › 4.2.0", text="Faster pushes."),
        SetwiseItem(id="b", title="Changelog › 4.1.0", text="Quota fixes."),
    ]
    setby = ["the list's coverage", "the list's coverage"]
    out, why, _, _ = apply_rules(q, items, np.array([0.5, 0.5]), [2, 5], ["", ""], np.array([0.1, 0.6]), setby)
    assert out == [4, 2]
    assert setby == ["the release rule", "the release rule"]
    notes = agreement_notes(np.array([0.1, 0.6]), np.array([0.0, 0.0]), out, why, setby)
    assert "grade 4 against p=0.10 (p alone: grade 3): set by the release rule" in notes[0]
    assert "grade 2 against p=0.60 (p alone: grade 5): set by the release rule" in notes[1]


def test_every_scored_reason_agrees_with_p_or_says_why() -> None:
    scorer = SetwiseScorer(embedder=FakeEmbedder(), cross=False)
    q = "What does error E4012 mean?"
    items = [
        SetwiseItem(id="a", title="Errors › E4012", text="E4012 means the quota is exceeded."),
        SetwiseItem(id="b", title="Errors › E4031", text="E4031 means the token expired."),
        SetwiseItem(id="c", title="Recipes", text="Bananas are yellow."),
        SetwiseItem(id="d", title="Errors", text="Error codes are listed below."),
    ]
    s = scorer.score(q, items)
    for p, g, r in zip(s.probs, s.grades, s.reasons, strict=True):
        assert g == grade_of_prob(p) or f"grade {g} against p={p:.2f}" in r, (p, g, r)
