"""Issue 46, per-corpus calibration without labels: the answerability thresholds adapted to an evaluated set's own
passages (:func:`admit.eval.adapt.adapt_to_passages`, ``bench_answer_lists.py --adapt``)."""

from __future__ import annotations

import random

import pytest

from admit import Chunk, Pipeline
from admit.backends.embedders import FakeEmbedder
from admit.errors import ConfigError
from admit.eval.adapt import ListAdaptOptions, adapt_to_passages, guarded_thresholds, separation
from admit.kb.adapt import AdaptCase, Neighbours, pseudo_questions
from admit.prune import PrunerResources

TOPICS = [
    "Backup schedule",
    "Retention policy",
    "Encryption keys",
    "Mount options",
    "Repository check",
    "Prune command",
    "Compression level",
    "Remote server",
    "Archive names",
    "Exclude patterns",
    "Lock files",
    "Cache directory",
    "Key export",
    "Passphrase prompts",
    "Append only mode",
    "Quota limits",
]


def _passages() -> list[Chunk]:
    """Two lists' worth of passages whose ids repeat across the lists (c0, c1, ... as an evaluation file has)."""
    out = []
    for i, t in enumerate(TOPICS):
        body = (
            f"The {t.lower()} of a repository is set in the configuration file. "
            f"Set the {t.lower()} with the option --{t.lower().replace(' ', '-')} when the archive is created."
        )
        out.append(Chunk(id=f"c{i % 8}", source_id=f"s{i}", title=t, text=body))
    return out


def _pipe() -> Pipeline:
    return Pipeline(resources=PrunerResources(embedder=FakeEmbedder()))


def test_passages_with_repeated_ids_are_all_used_and_no_label_is_needed() -> None:
    ad, cases = adapt_to_passages(_passages(), _pipe(), ListAdaptOptions(questions=14, list_len=6))
    # 16 distinct passages, though their ids repeat: the lists are built from all of them
    assert ad.chunks == 16
    assert ad.figures["questions"] == {"answerable": 14, "near_miss": 14}
    assert {c.kind for c in cases} == {"answerable", "near_miss"}
    # lists of 6 are graded by the setwise pruner's model (a near miss whose list it keeps nothing of: "empty")
    assert {c.model for c in cases if c.kind == "answerable"} == {"setwise"}
    assert {c.model for c in cases if c.kind == "near_miss"} <= {"setwise", "empty"}
    assert set(ad.thresholds) >= {"setwise", "lexical"}
    lo, hi = ad.thresholds["setwise"]
    assert 0.0 <= lo <= hi <= 1.0
    # fitted (MIN_CASES answerable and near misses reached it): at most 3% of the answerable ones fall below it
    below = [c for c in cases if c.kind == "answerable" and c.state != "not_answered" and c.p < lo]
    assert len(below) <= 0.03 * 14


def test_too_few_passages_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="too few"):
        adapt_to_passages(_passages()[:5], _pipe(), ListAdaptOptions(list_len=6))


def test_pseudo_questions_of_a_passage_and_the_neighbours_of_any_texts() -> None:
    qs = pseudo_questions("Retention policy", "The retention policy keeps seven daily archives.", "x", random.Random(1))
    assert [k for k, _ in qs] == ["heading", "lead"]
    assert "Retention policy" in qs[0][1]
    nb = Neighbours(FakeEmbedder(), [c.text for c in _passages()])
    assert "repository" in nb.words  # words of two or more texts, from plain texts (no knowledge base needed)


def _case(kind: str, p: float) -> AdaptCase:
    return AdaptCase(question="q", kind=kind, model="setwise", p=p, state="answered", extra={"gold_retrieved": True})


def test_the_thresholds_are_fitted_only_where_the_model_separates_the_sets_own_near_misses() -> None:
    shipped = {"setwise": (0.06, 0.17)}
    apart = [_case("answerable", 0.5 + i / 100) for i in range(20)] + [_case("near_miss", i / 100) for i in range(20)]
    assert separation(apart) == 1.0
    lo, _ = guarded_thresholds(apart, shipped)["setwise"]
    assert 0.5 <= lo < 0.52  # fitted: the 3% quantile of the answerable ones
    # the same answerable ones, near misses as likely as they are (RHDH's documentation lists: 0.53): shipped
    mixed = [_case("answerable", 0.5 + i / 100) for i in range(20)] + [
        _case("near_miss", 0.5 + i / 100) for i in range(20)
    ]
    assert separation(mixed) == 0.5
    assert guarded_thresholds(mixed, shipped) == shipped
    assert separation([]) == 0.5
