"""The setwise grading rules on top of the model: short and deep lists, identifiers."""

from __future__ import annotations

import numpy as np

from admit.prune import setwise_model as sm


def test_short_lists_are_graded_like_any_other() -> None:
    """Issue 25 item 4: a list of one to three is graded, not kept whole; the coverage stage decides."""
    for n in (1, 2, 3, 4):
        probs = np.linspace(0.9, 0.1, n)
        cov = np.concatenate([[0.0], np.full(n - 1, 0.999)])  # the model believes the top chunk is enough
        g = np.array(sm.grades(probs, cov, sm.DEFAULT_CUTS))
        assert int((g >= 3).sum()) == 1
        assert int((g >= 4).sum()) == 1
    two = np.array(sm.grades(np.array([0.9, 0.8]), np.array([0.0, 0.3]), sm.DEFAULT_CUTS))
    assert list(two >= 3) == [True, True]  # a two-chunk answer: the model says the top one is not enough
    g10 = np.array(sm.grades(np.linspace(0.9, 0.1, 10), np.r_[0.0, np.full(9, 0.999)], sm.DEFAULT_CUTS))
    assert int((g10 >= 3).sum()) == 2  # ceil(0.15 * 10) = 2: a list of ten is clamped by its share as before
    g100 = np.array(sm.grades(np.linspace(0.9, 0.1, 100), np.r_[0.0, np.full(99, 0.999)], sm.DEFAULT_CUTS))
    assert int((g100 >= 3).sum()) == sm.LEAST_KEEP_CAP  # not 15: the least share is capped


def test_identifier_rule_keeps_generic_chunks_below_the_chunk_naming_the_code() -> None:
    from admit.prune.setwise_model.scorer import identifier_grades

    # errors#intro (names no asked code) 5, the E5090 section 3, a rival code's section 4, an unrelated chunk 2
    grades = identifier_grades([5, 3, 4, 2], np.array([0.0, 1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0, 0.0]))
    assert grades == [4, 4, 2, 2]


def test_dotted_releases_are_identifiers_and_rival_releases_share_a_kind() -> None:
    from admit.prune.setwise_model.text import identifier_kind, identifiers

    assert identifiers("What changed in 3.2.0?") == {"3.2.0"}
    assert identifiers("Released 3.1.0. Pi is 3.14; see v1.4.2") == {"3.1.0", "v1.4.2"}
    assert identifier_kind("3.2.0") == identifier_kind("3.1.0")
