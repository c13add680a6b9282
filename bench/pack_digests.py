"""Digests of what a pack, a setwise score and the injection scan give on every list of ``../shared/data``.

Run it with two trees on ``PYTHONPATH`` and compare the printed digests: a change that only makes these faster
must leave every one of them equal. Per list: a cold ``Pipeline.pack`` (nothing remembered), the same pack with
the features a knowledge base stores at ingest seeded (it must equal the cold one), a ``SetwiseScorer.score``
with a fixed fake embedder (the feature code, not the encoder) and each candidate's injection flag kinds.

    PYTHONPATH=src python bench/pack_digests.py [DATA_DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from pathlib import Path

from admit import Access, Chunk, PackRequest, Pipeline, Principal
from admit.backends.embedders import FakeEmbedder
from admit.features import chunk_features, clear_caches, seed_features
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.security.scan import chunk_kinds

_NONCE = re.compile(r"(evidence|passage)-\d+")
WHO = Principal(tenant="acme")


def _pack_digest(pipe: Pipeline, question: str, chunks: list[Chunk]) -> str:
    r = pipe.pack(PackRequest(question=question, principal=WHO, candidates=chunks, model="gpt-4o", input_limit=6000))
    trace = {k: v for k, v in r.trace.items() if k not in ("latency_ms", "request_id", "ts")}
    seen = [[(a.chunk.id, a.text, a.tokens, a.excerpt) for a in r.admitted], r.prompt, r.decisions, r.fallbacks]
    return _NONCE.sub("N", json.dumps([seen, r.answer_state, r.answerability, trace], sort_keys=True, default=str))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--limit", type=int, default=0, help="lists per file (0: all)")
    args = ap.parse_args()
    pipe = Pipeline()
    scorer = SetwiseScorer(embedder=FakeEmbedder(dim=64), cross=False, multilingual=False)
    total = {"pack": hashlib.sha256(), "setwise": hashlib.sha256(), "scan": hashlib.sha256()}
    lists = mismatched = 0
    for path in sorted(Path(args.data_dir).glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        per = {k: hashlib.sha256() for k in total}
        for row in rows[: args.limit or None]:
            rng = random.Random(row["id"])
            chunks = [
                Chunk(id=f"c{i}", source_id=str(c.get("source_id") or f"s{i}"), title=str(c.get("title") or ""),
                      text=str(c["text"]), access=Access(tenant="acme"), score=rng.random(), authority=rng.random())
                for i, c in enumerate(row["candidates"])
            ]  # fmt: skip
            q = str(row["question"])
            clear_caches()
            cold = _pack_digest(pipe, q, chunks)
            clear_caches()
            for c in chunks:
                seed_features(c.title, c.text, json.loads(json.dumps(chunk_features(c.title, c.text))))
            mismatched += _pack_digest(pipe, q, chunks) != cold
            clear_caches()
            items = [SetwiseItem(id=c.id, title=c.title, text=c.text) for c in chunks]
            score = json.dumps(scorer.score(q, items), sort_keys=True, default=repr)
            kinds = json.dumps([chunk_kinds(c.title, c.text) for c in chunks])
            for name, text in (("pack", cold), ("setwise", score), ("scan", kinds)):
                per[name].update(text.encode("utf-8", "surrogatepass"))
                total[name].update(text.encode("utf-8", "surrogatepass"))
            lists += 1
        print(path.name, {k: h.hexdigest()[:16] for k, h in per.items()})
    print(f"{lists} lists; seeded pack != cold pack in {mismatched}")
    print("all", {k: h.hexdigest()[:16] for k, h in total.items()})


if __name__ == "__main__":
    main()
