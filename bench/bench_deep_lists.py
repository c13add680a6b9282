"""Deep on-topic lists: how many chunks ``setwise`` keeps of a 50- and a 500-chunk list of one product's pages,
beside LangChain's ``EmbeddingsFilter(similarity_threshold=0.4)`` on the same MiniLM vectors.

The lists are built from ``../shared/data/rhdh_docs_raw`` (Red Hat Developer Hub documentation, 28 pages): the pages
are chunked as ``admit ingest`` chunks them, and for each question (the first ``--questions`` of
``rhdh_docs.jsonl``) the chunks are ranked by MiniLM cosine to the question, as a dense retriever would. The
50-chunk list is the top 50, the 500-chunk list the top 500: every chunk is about the same product.

    PYTHONPATH=$PWD/src python bench/bench_deep_lists.py --shared ../shared --questions 3

Vectors are cached in ``--cache`` (an ``.npz``), so a second run embeds nothing. Prints one row per question and
list length: setwise kept (grade >= 3, the default threshold) and its tokens, EmbeddingsFilter's kept and tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from admit.backends.embedders import CachedEmbedder, resolve_embedder
from admit.backends.tokenizers import resolve_tokenizer
from admit.kb.chunking import chunk_document
from admit.kb.parse import parse_markdown
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, question_text


class NpzCache(CachedEmbedder):
    """A :class:`CachedEmbedder` whose vectors persist in one ``.npz`` file."""

    def __init__(self, path: Path) -> None:
        super().__init__(resolve_embedder("minilm"), max_items=1_000_000)
        self.path = path
        self._loaded = 0
        if path.is_file():
            with np.load(path, allow_pickle=False) as z:
                self.seed(zip((str(k) for k in z["keys"]), z["vectors"], strict=True), keys_are_hashes=True)
                self._loaded = len(z["keys"])

    def save(self) -> None:
        items = self.export()
        if len(items) == self._loaded:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(self.path, keys=np.array(list(items)), vectors=np.stack(list(items.values())).astype(np.float32))
        self._loaded = len(items)


def pool(shared: Path) -> list[SetwiseItem]:
    out: list[SetwiseItem] = []
    for page in sorted((shared / "data" / "rhdh_docs_raw").glob("*.md")):
        doc = parse_markdown(page.read_text(encoding="utf-8"), fallback_title=page.stem)
        for c in chunk_document(doc):
            title = " › ".join((doc.title, *c.headings))
            out.append(SetwiseItem(id=f"{page.stem}#{c.section_path}", title=title, text=c.text))
    return out


def _grams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))}


def gold_items(row: dict[str, Any], items: list[SetwiseItem]) -> set[int]:
    """The pool chunks that hold a required chunk of ``row``: at least half of the pool chunk's 8-grams are in it
    (the dataset chunked the same pages another way)."""
    req = set(row.get("required") or [])
    gold = [_grams(c["text"]) for c in row["candidates"] if c["id"] in req]
    out: set[int] = set()
    for i, it in enumerate(items):
        g = _grams(it.text)
        if g and any(len(g & gg) >= 0.5 * len(g) for gg in gold):
            out.add(i)
    return out


def langchain_kept(emb: CachedEmbedder, question: str, items: list[SetwiseItem]) -> list[int]:
    from langchain_classic.retrievers.document_compressors import EmbeddingsFilter
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    class AdmitMiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in emb.embed(list(texts))]

        def embed_query(self, text: str) -> list[float]:
            return list(map(float, emb.embed([text])[0]))

    comp = EmbeddingsFilter(embeddings=AdmitMiniLM(), similarity_threshold=0.4, k=None)
    docs = [Document(page_content=f"{it.title}\n{it.text}", metadata={"i": i}) for i, it in enumerate(items)]
    return [int(d.metadata["i"]) for d in comp.compress_documents(docs, question)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--lengths", default="50,100,500")
    ap.add_argument("--no-langchain", action="store_true", help="skip EmbeddingsFilter (its columns read 0)")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/admit-bench-deep/minilm.npz"))
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    lengths = [int(x) for x in args.lengths.split(",")]
    emb = NpzCache(args.cache)
    tok = resolve_tokenizer("cl100k_base")
    items = pool(args.shared)
    if len(items) < max(lengths):
        print(f"only {len(items)} chunks in the pool; lengths cut to it", file=sys.stderr)
    rows = [json.loads(ln) for ln in (args.shared / "data" / "rhdh_docs.jsonl").open(encoding="utf-8")]
    picked = rows[: args.questions]
    qs = [r["question"] for r in picked]
    scorer = SetwiseScorer(embedder=emb, cross=False)
    vecs = emb.embed([f"{it.title}\n{it.text}" for it in items])
    out: list[dict[str, Any]] = []
    print(f"pool: {len(items)} chunks of rhdh_docs_raw")
    golds = [gold_items(r, items) for r in picked]
    print(
        "| question | list | setwise kept | setwise tokens | EmbeddingsFilter(0.4) kept | its tokens | setwise s | "
        "answer in list | answer kept |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for qi, q in enumerate(qs):
        qv = emb.embed([question_text(q)])[0]
        order = np.argsort(-(vecs @ qv), kind="stable")
        for n in lengths:
            idx = [int(i) for i in order[:n]]
            lst = [items[i] for i in idx]
            gold_at = [j for j, i in enumerate(idx) if i in golds[qi]]
            t0 = time.perf_counter()
            sc = scorer.score(q, lst)
            secs = time.perf_counter() - t0
            kept = [j for j, g in enumerate(sc.grades) if g >= 3]
            lc = [] if args.no_langchain else langchain_kept(emb, q, lst)
            toks = sum(tok.count(f"{lst[j].title}\n{lst[j].text}") for j in kept)
            lct = sum(tok.count(f"{lst[j].title}\n{lst[j].text}") for j in lc)
            row = {
                "q": qi,
                "n": len(lst),
                "setwise": len(kept),
                "setwise_tokens": toks,
                "lc": len(lc),
                "lc_tokens": lct,
                "answer_in_list": bool(gold_at),
                "answer_kept": any(sc.grades[j] >= 3 for j in gold_at),
            }
            out.append(row)
            print(
                f"| {qi} | {len(lst)} | {len(kept)} | {toks:,} | {len(lc)} | {lct:,} | {secs:.1f} | "
                f"{'yes' if gold_at else 'no'} | {'yes' if row['answer_kept'] else 'no'} |",
                flush=True,
            )
        emb.save()
    emb.save()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
