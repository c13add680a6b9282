"""The note beside a grade set by the list says what its probability is: the chunks above, together."""

from __future__ import annotations

import numpy as np

from admit.prune.setwise_model.scorer import agreement_notes


def test_the_list_note_says_the_probability_is_of_the_chunks_above_together() -> None:
    probs = np.array([0.30, 0.70, 0.03])
    coverage = np.array([0.70, 0.0, 0.79])
    notes = agreement_notes(probs, coverage, [4, 5, 4], ["", "", ""], ["", "", ""])
    assert "rank 3 of 3; the 2 ranked above it together hold the answer with p=0.79" in notes[2]
    assert "one minus the product" in notes[2]
