"""Benchmark: the non-LLM admission pipeline on 100 candidates of ~300 tokens, beside the guide's naive pack.

Real text from ../shared/data (MuSiQue/HotpotQA paragraphs joined to ~300 tokens). Reports median and p95
over repeated runs of ``Pipeline.pack`` (route, budget, authorize, rerank, dedupe, pack, render, trace; no
pruner) and of the seed's ``pack_context`` (a plain sort + greedy fit), in the same process.

    python bench/bench_pack.py [--data ../shared/data] [--runs 200] [--clock wall|cpu] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import random
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from admit import Access, Chunk, PackRequest, Pipeline, Principal
from admit.backends.tokenizers import resolve_tokenizer
from admit.features import chunk_features, clear_caches, seed_features
from admit.policy import load_policy_set


@dataclass
class NaiveChunk:
    id: str
    source_id: str
    tokens: int
    relevance: float
    novelty: float
    authority: float
    text: str


def pack_context(candidates, evidence_budget, per_source_limit=2):
    """The guide's naive baseline, verbatim in behaviour."""
    accepted, used, source_counts = [], 0, {}
    ranked = sorted(candidates, key=lambda c: 0.60 * c.relevance + 0.25 * c.novelty + 0.15 * c.authority, reverse=True)
    for chunk in ranked:
        if chunk.novelty < 0.20:
            continue
        if source_counts.get(chunk.source_id, 0) >= per_source_limit:
            continue
        if used + chunk.tokens > evidence_budget:
            continue
        accepted.append(chunk)
        used += chunk.tokens
        source_counts[chunk.source_id] = source_counts.get(chunk.source_id, 0) + 1
    return accepted, used


def load_texts(data: Path, n: int, tok) -> list[tuple[str, str]]:
    paras: list[tuple[str, str]] = []
    for name in ("musique.jsonl", "hotpotqa_distractor.jsonl"):
        for line in (data / name).read_text().splitlines():
            for c in json.loads(line)["candidates"]:
                paras.append((c["title"], c["text"]))
    rng = random.Random(7)
    rng.shuffle(paras)
    out, buf, title = [], [], ""
    for t, text in paras:
        buf.append(text)
        title = title or t
        if tok.count(" ".join(buf)) >= 280:
            out.append((title, " ".join(buf)))
            buf, title = [], ""
            if len(out) == n:
                break
    return out


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: this thread's CPU time, which other jobs on a shared machine inflate less than wall time",
    )
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the cold packs to FILE")
    args = ap.parse_args()
    prof = cProfile.Profile() if args.profile else None
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    tok = resolve_tokenizer("gpt-4o")
    texts = load_texts(Path(args.data), 100, tok)
    rng = random.Random(1)
    acc = Access(tenant="acme")
    cands = [
        Chunk(
            id=f"c{i}", source_id=f"s{i % 40}", title=t, text=x, access=acc, authority=rng.random(), score=rng.random()
        )
        for i, (t, x) in enumerate(texts)
    ]
    ps = load_policy_set()
    wide = {k: replace(v, rerank_count=100, candidate_count=100) for k, v in ps.classes.items()}
    pipe = Pipeline(policies=replace(ps, classes=wide))
    req = PackRequest(
        question="Which film directed by the author of the novel won the award?",
        principal=Principal(tenant="acme"),
        candidates=cands,
        model="gpt-4o",
        input_limit=16_000,
        instructions="Answer from the evidence.",
    )
    mean_tok = statistics.mean(tok.count(c.text) for c in cands)
    pipe.pack(req)  # warm: tokenizer tables, nupunkt model
    naive_in = [
        NaiveChunk(c.id, c.source_id, tok.count(c.text), c.score or 0, 1.0, c.authority or 0, c.text) for c in cands
    ]
    # what a knowledge base stores with each chunk at ingest (admit.features), handed back on retrieval
    stored = {c.id: chunk_features(c.title, c.text) for c in cands}
    t_admit, t_cold, t_stored, t_naive, t_naive_tok = [], [], [], [], []
    for _ in range(args.runs):
        t0 = clock()
        res = pipe.pack(req)
        t_admit.append((clock() - t0) * 1000)
        # cold: no shingles, signatures, hashes, token counts or flags remembered from earlier requests
        clear_caches()
        if prof is not None:
            prof.enable()
        t0 = clock()
        pipe.pack(req)
        t_cold.append((clock() - t0) * 1000)
        if prof is not None:
            prof.disable()
        # cold again, but with the features stored at ingest seeded first (as KnowledgeBase.search does)
        clear_caches()
        t0 = clock()
        for c in cands:
            seed_features(c.title, c.text, stored[c.id])
        pipe.pack(req)
        t_stored.append((clock() - t0) * 1000)
        t0 = clock()
        pack_context(naive_in, 16_000 - 1000)
        t_naive.append((clock() - t0) * 1000)
        t0 = clock()  # the naive pack with the token counting it takes for granted
        pack_context([replace(n, tokens=tok.count(n.text)) for n in naive_in], 16_000 - 1000)
        t_naive_tok.append((clock() - t0) * 1000)
    print(f"candidates: {len(cands)}, mean tokens/candidate: {mean_tok:.0f}, runs: {args.runs}")
    print(
        f"admitted: {len(res.admitted)}, evidence tokens: {res.trace['evidence_tokens']}, "
        f"dropped: {res.trace['dropped']}"
    )
    print(f"{'pipeline':<38}{'median ms':>10}{'p95 ms':>10}")
    print(f"{'admit Pipeline.pack, warm caches':<38}{statistics.median(t_admit):>10.2f}{pct(t_admit, 0.95):>10.2f}")
    print(f"{'admit Pipeline.pack, cold caches':<38}{statistics.median(t_cold):>10.2f}{pct(t_cold, 0.95):>10.2f}")
    label = "admit, cold, features stored at ingest"
    print(f"{label:<38}{statistics.median(t_stored):>10.2f}{pct(t_stored, 0.95):>10.2f}")
    print(f"{'naive pack_context (pre-counted)':<38}{statistics.median(t_naive):>10.2f}{pct(t_naive, 0.95):>10.2f}")
    print(
        f"{'naive pack_context + token counting':<38}{statistics.median(t_naive_tok):>10.2f}"
        f"{pct(t_naive_tok, 0.95):>10.2f}"
    )
    print(
        f"cold / naive with token counting: {statistics.median(t_cold) / statistics.median(t_naive_tok):.2f}x "
        f"(budget 2x); stored features / naive: {statistics.median(t_stored) / statistics.median(t_naive_tok):.2f}x"
    )
    if prof is not None:
        prof.dump_stats(args.profile)
    stages = dict(res.trace["latency_ms"].items())
    print("last run by stage (ms):", json.dumps(stages))


if __name__ == "__main__":
    main()
