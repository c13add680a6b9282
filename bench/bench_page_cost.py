"""What one big page costs to ingest (issue 47, item 6): CPU seconds and peak memory against its size.

Writes one Markdown page of ``--mb`` megabytes, either a run of letters without a space (``--kind run``) or
words (``--kind words``), ingests it into a fresh embedded knowledge base with the hashing embedder
(``fake:64``: the chunker, features and store, not the model), and prints the chunks, their largest token count,
the process's CPU seconds for the ingest and its peak resident memory. Run it once per size, each in its own
process (peak memory is per process):

    python bench/bench_page_cost.py --mb 5 --kind run
    python bench/bench_page_cost.py --mb 20 --kind run
"""

from __future__ import annotations

import argparse
import random
import resource
import string
import tempfile
import time
from pathlib import Path

from admit.backends.tokenizers import resolve_tokenizer
from admit.kb import IngestOptions, KnowledgeBase


def page(mb: float, kind: str) -> str:
    rng = random.Random(0)
    n = int(mb * 1_000_000)
    if kind == "run":
        body = "".join(rng.choices(string.ascii_letters + string.digits, k=n))
    else:
        words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 9))) for _ in range(5000)]
        body = " ".join(rng.choices(words, k=n // 6))
    return f"# Big page\n\n{body}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--kind", choices=["run", "words"], default="run")
    a = ap.parse_args()
    tok = resolve_tokenizer("cl100k_base")
    with tempfile.TemporaryDirectory() as d:
        docs = Path(d) / "docs"
        docs.mkdir()
        (docs / "big.md").write_text(page(a.mb, a.kind), "utf-8")
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        with KnowledgeBase(str(Path(d) / "kb.sqlite"), embedder="fake:64") as kb:
            t0 = time.process_time()
            kb.ingest([docs], IngestOptions(tenant="t"))
            cpu = time.process_time() - t0
            chunks = kb.store.get_source_chunks("big", "t")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    largest = max(tok.count(c.text) for c in chunks)
    print(
        f"{a.mb:g} MB page ({a.kind}): {len(chunks):,} chunks, largest {largest} tokens; ingest {cpu:.1f} CPU-s; "
        f"peak RSS {peak:.0f} MiB (before the ingest {base:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
