"""Issue 46 (quality VII, round 10): where setwise lost documentation answers.

- A heading stub (a man page's NAME line, a one-link SEE ALSO) restates the question: graded at most 2 and left out
  of the list's coverage, so the section body beside it is graded as if the stub were absent.
- The lexical floor: the list's BM25 best two, at p >= 0.01 and not unrelated, are graded at least 3.
- A grade 3 of the list's coverage needs the chunk's own p to read grade 3 (>= 0.05).
- The per-source cap spares the pruner's three most probable chunks at p >= 0.15.

The model is a stub (fixed probabilities per chunk, read off each title; the coverage stage never sure): these test
the grading logic, not the fitted model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from admit.backends.embedders.fake import FakeEmbedder
from admit.dedupe import source_cap
from admit.policy import load_policy_set
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.prune.setwise_model.scorer import (
    LEXICAL_FLOOR_GRADE,
    WEAK_THREE_P,
    lexical_floor,
    weak_three_cap,
)
from admit.prune.setwise_model.stubs import STUB_GRADE, heading_stubs, is_stub
from admit.types import Scored
from tests.helpers import chunk


class _FixedModel:
    """The shipped model's cuts and clamps; probabilities read off each chunk's title (``p=0.30``); the coverage
    stage grows with the probability mass above a chunk (a chunk at p 0.99 makes the rest look covered)."""

    def __init__(self, real: Any) -> None:
        self.cuts = real.cuts
        self.keep_bounds = real.keep_bounds

    def predict(self, prep: Any) -> list[np.ndarray]:
        return [np.array([float(str(t).split("p=")[1].split()[0]) for t in prep.labels])]

    def complete_probs(self, probs: np.ndarray, qfeat: np.ndarray) -> np.ndarray:
        s = np.sort(probs)[::-1]
        return np.clip(np.cumsum(s), 0.0, 1.0)


def _scorer() -> SetwiseScorer:
    s = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=False)
    s.model = _FixedModel(s.model)  # type: ignore[assignment]
    s.stubs = s.lexical = s.weak_three = True  # the documentation rules (setwise's doc_rules; off by default)
    return s


def test_the_documentation_rules_are_off_by_default_and_a_strategy_parameter_turns_them_on() -> None:
    from admit.prune.settings import PruneSettings
    from admit.prune.setwise import DOC_RULES, SetwisePruner

    plain = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=False)
    assert not (plain.stubs or plain.lexical or plain.weak_three)  # ../shared/data's R@68 as before
    plain.model = _FixedModel(plain.model)  # type: ignore[assignment]
    pruner = SetwisePruner(scorer=plain)
    cands = [
        Scored(chunk=chunk("g#name", NAME_LINE, source="g", title="p=0.99 git-clean(1) › NAME"), score=0.9, rank=0),
        Scored(chunk=chunk("g#opt", OPTIONS, source="g", title="p=0.06 git-clean(1) › OPTIONS"), score=0.8, rank=1),
        *[
            Scored(chunk=chunk(f"o#{i}", OPTIONS.replace("clean", "stash"), title=f"p=0.03 s {i}"), score=0.5, rank=i)
            for i in range(2, 8)
        ],
    ]
    off = pruner.prune(QUESTION, cands, PruneSettings(strategy="setwise", threshold=3, keep_top_k=0))
    on = pruner.prune(
        QUESTION, cands, PruneSettings(strategy="setwise", threshold=3, keep_top_k=0, params={DOC_RULES: 1})
    )
    assert "heading stub" not in off.graded[0].reason and off.graded[0].grade >= 3
    assert "heading stub" in on.graded[0].reason and on.graded[0].grade <= STUB_GRADE
    assert not plain.stubs  # the pruner's own scorer is left as it was


QUESTION = "How do I see which untracked files git clean would remove without deleting them?"
NAME_LINE = "git-clean - Remove untracked files from the working tree"
OPTIONS = (
    "-n, --dry-run: Don't actually remove anything, just show what would be done. -f, --force: if the configuration "
    "variable clean.requireForce is not set to false, git clean will refuse to delete files or directories unless "
    "given -f. -x: Don't use the standard ignore rules, but still use the ignore rules given with -e options."
)


def test_a_name_line_that_restates_the_question_is_a_stub_and_a_body_or_a_short_fact_is_not() -> None:
    assert is_stub(QUESTION, "git-clean(1) › NAME", NAME_LINE)
    assert is_stub(QUESTION, "git-clean(1) › SEE ALSO", "gitignore(5)")  # one link: nothing of its own
    assert not is_stub(QUESTION, "git-clean(1) › OPTIONS", OPTIONS)  # the body: long
    # a short chunk with facts of its own (a year, a kind, a name) is not a stub
    assert not is_stub("Who directed Heat?", "Heat", "Heat is a 1995 American crime film directed by Michael Mann.")
    assert not is_stub(QUESTION, "git-clean(1) › NAME", "")
    # a list of nothing but stubs has nothing better to grade: none is marked
    assert heading_stubs(QUESTION, ["a", "b"], [NAME_LINE, "gitignore(5)"]) == [False, False]


def test_a_stub_at_the_lists_best_p_no_longer_buries_the_section_body_beside_it() -> None:
    items = [
        SetwiseItem(id="name", title="p=0.99 git-clean(1) › NAME", text=NAME_LINE),
        SetwiseItem(id="options", title="p=0.06 git-clean(1) › OPTIONS", text=OPTIONS),
        *[
            SetwiseItem(id=f"o{i}", title=f"p=0.03 other section {i}", text=OPTIONS.replace("clean", "stash"))
            for i in range(6)
        ],
    ]
    out = _scorer().score(QUESTION, items)
    assert out.grades[0] <= STUB_GRADE  # the stub
    assert "heading stub" in out.reasons[0]
    assert out.grades[1] >= 3  # the body: graded as if the stub were absent
    assert out.probs[0] == 0.99  # the model's probability is reported as it was


def test_the_lexical_floor_lifts_only_the_lists_best_bm25_matches_that_the_model_gives_some_weight() -> None:
    grades = [5, 2, 2, 2, 1, 2]
    bm25_rank = [3, 1, 2, 4, 6, 5]
    probs = [0.9, 0.03, 0.01, 0.04, 0.05, 0.005]
    skip = [False] * 6
    assert lexical_floor(grades, bm25_rank, probs, skip) == [5, LEXICAL_FLOOR_GRADE, LEXICAL_FLOOR_GRADE, 2, 1, 2]
    # an unrelated chunk or a stub stays where it was
    assert lexical_floor(grades, bm25_rank, probs, [False, True, True, False, False, False])[1:3] == [2, 2]
    assert lexical_floor([1, 2], [1, 2], [0.05, 0.03], [False, False]) == [1, LEXICAL_FLOOR_GRADE]  # graded 1: no
    assert lexical_floor([2, 2, 2], [1, 1, 1], [0.03] * 3, [False] * 3) == [3, 3, 2]  # ties: the earlier two


def test_a_grade_three_needs_its_own_probability_to_read_grade_three() -> None:
    probs = np.array([0.6, WEAK_THREE_P, WEAK_THREE_P * 0.9, 0.01, 0.01])
    assert weak_three_cap([5, 3, 3, 4, 2], probs) == [5, 3, 2, 4, 2]


def test_the_scorer_cuts_a_weak_three_and_the_lexical_floor_keeps_the_option_line_that_names_the_question() -> None:
    q = "How do I build from what is staged in the index?"
    option = "--git-export=INDEX builds from what is staged in the index rather than from a commit."
    items = [
        SetwiseItem(
            id="best",
            title="p=0.90 build area options",
            text="The build area holds the exported tree; gbp removes it after a build unless told to keep it.",
        ),
        SetwiseItem(
            id="weak",
            title="p=0.03 hooks",
            text="Hooks run arbitrary commands at different points; each receives its environment in variables.",
        ),
        SetwiseItem(id="opt", title="p=0.02 export options", text=option),
        *[
            SetwiseItem(
                id=f"x{i}",
                title=f"p=0.01 changelog {i}",
                text="dch reads commit messages and writes a new changelog section with one entry per commit found.",
            )
            for i in range(5)
        ],
    ]
    out = _scorer().score(q, items)
    by = dict(zip([it.id for it in items], out.grades, strict=True))
    assert by["opt"] >= 3 and "lexical floor" in out.reasons[2]  # bm25's best: the question's own words
    assert by["weak"] < 3  # the coverage's grade 3 at p 0.03


POLICY = load_policy_set().policy("default")


def test_the_per_source_cap_spares_the_three_most_probable_only_when_they_read_as_answering() -> None:
    chunks = [chunk(f"page#{i}", f"section {i} " + "words " * 20, source="page") for i in range(4)]
    items = [Scored(chunk=c, score=1.0 - i / 10, rank=i) for i, c in enumerate(chunks)]
    grades = {"page#0": 5, "page#1": 4, "page#2": 4, "page#3": 4}
    pol = replace(POLICY, per_source_limit=2)
    probs = {"page#0": 0.5, "page#1": 0.22, "page#2": 0.16, "page#3": 0.05}
    kept, dropped = source_cap(items, pol, grades, probs=probs)
    assert [s.chunk.id for s in kept] == ["page#0", "page#1", "page#2"]  # the third most probable, at p 0.16
    assert [d.chunk_id for d in dropped] == ["page#3"]
    weak = {"page#0": 0.5, "page#1": 0.22, "page#2": 0.1, "page#3": 0.05}
    kept, _ = source_cap(items, pol, grades, probs=weak)
    assert [s.chunk.id for s in kept] == ["page#0", "page#1"]  # p 0.10 does not read as answering: capped
