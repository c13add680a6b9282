"""A question naming thousands of releases (issue 47 item 6): CPU time of each stage that reads its releases.

The question is read once (:func:`admit.question.read_question`); rerank, the knowledge base's release-candidate
query (SQLite, the changelog test site) and the setwise release rule then match each passage's releases against
the asked ones by set look-ups. CPU seconds per step (``time.process_time``), and the deterministic work ratio of a
4x longer question (regex characters plus Python lines, as ``tests/unit/test_question.py`` counts it).

Usage: ``python bench/bench_question.py [--releases 2000]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from admit._text import clear_caches
from admit.backends.embedders import FakeEmbedder
from admit.backends.rerankers.fake import FakeReranker
from admit.kb import KnowledgeBase, parse_principal
from admit.prune.setwise_model.rules import version_hits
from admit.question import read_question
from admit.rerank import rerank

SITE = Path(__file__).resolve().parents[1] / "tests" / "data" / "changelog_site"


def naming(n: int) -> str:
    """A question naming ``n`` distinct releases."""
    return "What changed in " + ", ".join(f"{i // 400}.{(i // 20) % 20}.{i % 20}" for i in range(n)) + "?"


def cpu(fn: object) -> float:
    """CPU seconds of one call."""
    t = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t


def main() -> None:
    """Print one line per step."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--releases", type=int, default=2000)
    n = ap.parse_args().releases
    text = naming(n)
    who = parse_principal("tenant:t")
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase(Path(tmp) / "kb.sqlite", embedder=FakeEmbedder(dim=32))
        kb.ingest(SITE, tenant="t")
        chunks = kb.retrieve("What changed?", who, k=30)
        clear_caches()
        read = cpu(lambda: read_question(text))
        hits = cpu(lambda: kb.hits(text, who, k=30))
        ranked = cpu(lambda: rerank(text, chunks, FakeReranker(), keep=len(chunks)))
        rule = cpu(lambda: version_hits(text, [c.title for c in chunks], [c.text for c in chunks]))
    print(
        f"question naming {n:,} releases ({len(text) / 1000:.1f} KB): read {read * 1000:.1f} ms, "
        f"knowledge-base hits (SQLite, release query included) {hits * 1000:.1f} ms, rerank {ranked * 1000:.1f} ms, "
        f"setwise release rule over {len(chunks)} chunks {rule * 1000:.1f} ms (CPU)"
    )


if __name__ == "__main__":
    main()
