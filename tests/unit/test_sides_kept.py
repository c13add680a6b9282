"""Issue 34 item 1 on the invented product ``tests/data/ferrule``: a comparison keeps both sides and a
multi-part question every part, although one page holds them all (``per_source_limit = 2``), and "how many X
can / does ..." asks for one number (point lookup), not a list."""

from __future__ import annotations

from pathlib import Path

import pytest

from admit.kb.chunking import slugify
from admit.kb.parse import parse_markdown
from admit.pipeline import PackRequest, Pipeline
from admit.prune.fake import FakeGrader
from admit.types import Chunk, Principal
from tests.helpers import chunk

FERRULE = Path(__file__).resolve().parents[1] / "data" / "ferrule"


def _page(name: str) -> list[Chunk]:
    """The page's sections as chunks, ranked in page order (the intro first, as a retriever often does)."""
    doc = parse_markdown((FERRULE / f"{name}.md").read_text(encoding="utf-8"), fallback_title=name)
    out = []
    for i, sec in enumerate(doc.sections):
        slug = slugify(sec.headings[-1]) if sec.headings else "intro"
        title = " › ".join((doc.title, *sec.headings))
        out.append(chunk(f"{name}#{slug}", " ".join(sec.paragraphs), source=name, title=title, score=1.0 - i / 10))
    return out


def _pack(question: str, chunks: list[Chunk], grades: dict[str, int]) -> tuple[list[str], str]:
    res = Pipeline(pruner=FakeGrader(grades=grades, default=2)).pack(
        PackRequest(
            question=question,
            principal=Principal(tenant="acme"),
            candidates=chunks,
            prune="setwise",
            input_limit=8000,
        )
    )
    return list(res.admitted_ids), str(res.trace["query_class"])


def test_a_comparison_keeps_both_sides_of_one_page() -> None:
    chunks = _page("storage-backends")
    ids = [c.id for c in chunks]
    assert ids == [
        "storage-backends#intro",
        "storage-backends#s3-compatible-stores",
        "storage-backends#local-disks",
        "storage-backends#sftp-servers",
    ]
    grades = {ids[0]: 4, ids[1]: 4, ids[2]: 2, ids[3]: 5}
    admitted, cls = _pack("How does the S3 backend compare with SFTP?", chunks, grades)
    assert cls == "comparison"
    assert {"storage-backends#s3-compatible-stores", "storage-backends#sftp-servers"} <= set(admitted)


def test_a_multi_part_question_keeps_every_part_of_one_page() -> None:
    chunks = _page("snapshots")
    grades = {
        "snapshots#intro": 4,
        "snapshots#snapshot-limits": 2,
        "snapshots#retention-period": 5,
        "snapshots#encryption-keys": 4,
    }
    question = "What is the default retention period and how is the encryption key rotated?"
    admitted, _ = _pack(question, chunks, grades)
    assert {"snapshots#retention-period", "snapshots#encryption-keys"} <= set(admitted)


@pytest.mark.parametrize(
    "question",
    [
        "How many snapshots can one repository hold?",
        "How many agents does one Ferrule server accept?",
        "how many snapshots does Ferrule keep by default?",
    ],
)
def test_how_many_x_can_or_does_is_a_point_lookup(question: str) -> None:
    assert Pipeline().resolve(question, request_id="r").route.query_class == "point_lookup"


@pytest.mark.parametrize(
    "question",
    [
        "How many error codes are there?",
        "How many kinds of storage backend exist?",
        "How many regions are affected?",
        "List all error codes",
    ],
)
def test_counting_the_items_of_a_kind_is_still_list_all(question: str) -> None:
    assert Pipeline().resolve(question, request_id="r").route.query_class == "list_all"


def test_how_many_snapshots_admits_the_limit_not_the_whole_page() -> None:
    chunks = _page("snapshots")
    grades = {"snapshots#snapshot-limits": 5}
    admitted, cls = _pack("How many snapshots can one repository hold?", chunks, grades)
    assert cls == "point_lookup"
    assert "snapshots#snapshot-limits" in admitted
    assert len(admitted) <= 2  # the limit (and the page's top-ranked intro, keep_top_k = 1), not the whole page
