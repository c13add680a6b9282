"""What the retrieved list holds of the question (the ``pool_*`` features): a name or key word that no candidate
holds is one the knowledge base most likely lacks, and the verdict says "not answered" for it."""

from __future__ import annotations

from admit.answerability import assess
from admit.answerability.features import features

ADMITTED = [
    "Backups\nborg create writes a new archive of the given paths to the repository.",
    "Repositories\nA repository is a folder on a local disk or on a server reached over SSH.",
]
POOL = [
    *ADMITTED,
    "Compression\nborg supports lz4, zstd, zlib and lzma compression; lz4 is the default.",
    "Pruning\nborg prune deletes archives that a retention policy no longer keeps.",
]


def test_a_name_no_candidate_holds_lowers_the_pool_cover() -> None:
    lacking = features("How do I back up a repository to Amazon S3?", ADMITTED, pool=POOL)
    assert lacking["pool_entity_cov"] < 1.0  # Amazon, S3: in no candidate at all
    held = features("How do I create an archive in the repository with lz4 compression?", ADMITTED, pool=POOL)
    assert held["pool_q_cov"] == 1.0  # every key word is in some candidate, though not in the admitted ones
    assert held["union_q_cov"] < 1.0


def test_without_a_pool_the_admitted_texts_are_the_pool() -> None:
    q = "How do I back up a repository to Amazon S3?"
    assert features(q, ADMITTED)["pool_q_cov"] == features(q, ADMITTED)["union_q_cov"]
    assert features(q, ADMITTED, pool=ADMITTED)["pool_entity_cov"] == features(q, ADMITTED)["union_entity_cov"]


def test_a_question_about_an_integration_the_docs_never_name_is_not_answered() -> None:
    got = assess("How do I upload the backup report to SonarQube?", ADMITTED, pool=POOL)
    assert got.state == "not_answered"
    assert got.answerable is False
    assert "SonarQube" in got.missing


def test_a_question_the_admitted_text_answers_is_answered() -> None:
    got = assess("Which command creates a new archive of paths in the repository?", ADMITTED, pool=POOL)
    assert got.state == "answered"
    assert got.answerable is True
