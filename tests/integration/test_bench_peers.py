"""bench/bench_peers.py runs the frameworks' own filters beside admit and writes its figures as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

for mod in ("langchain_classic", "langchain_community", "llama_index.core", "haystack", "openai"):
    pytest.importorskip(mod)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _record(i: int, source: str) -> dict[str, object]:
    cands = [
        {"id": f"c{k}", "source_id": f"s{k}", "title": f"Title {k}", "text": f"Sentence about topic {k}. Another {k}."}
        for k in range(6)
    ]
    cands[2]["text"] = f"The answer to question {i} is port 8080. It is the default."
    return {
        "id": f"{source}:{i}",
        "question": f"Which port answers question {i}?",
        "candidates": cands,
        "required": ["c2"],
        "source": source,
    }


def test_bench_peers_writes_every_figure(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for source in ("alpha", "beta"):
        lines = [json.dumps(_record(i, source)) for i in range(2)]
        (data / f"{source}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    out = tmp_path / "peers.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "bench_peers.py"),
        "--data",
        str(data),
        "--limit",
        "2",
        "--llm-limit",
        "1",
        "--embedder",
        "fake",
        "--cache",
        "",
        "--json",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text("utf-8"))
    assert res["questions"] == 4 and res["datasets"] == ["alpha", "beta"]

    classes = {(r["library"], r["class"]) for r in res["configs"]}
    assert {
        ("admit", "setwise"),
        ("admit", "top_n"),
        ("langchain", "EmbeddingsFilter"),
        ("langchain", "EmbeddingsRedundantFilter"),
        ("llamaindex", "SimilarityPostprocessor"),
        ("llamaindex", "SentenceEmbeddingOptimizer"),
        ("haystack", "LostInTheMiddleRanker"),
        ("haystack", "TopPSampler"),
    } <= classes
    for row in res["configs"]:
        overall = row["metrics"]["overall"]
        assert overall["questions"] == 4
        for key in ("chunk_compression", "retained_recall", "latency_ms_p50", "latency_ms_p95"):
            assert 0.0 <= overall[key] <= (1.0 if "latency" not in key else 60_000.0), (row["class"], key)
        # below zero when a filter hands back more text than it got (SentenceEmbeddingOptimizer's overlapping
        # context windows repeat sentences of short chunks)
        assert overall["token_compression"] <= 1.0
        assert set(row["metrics"]["by_source"]) == {"alpha", "beta"}
    # keeping one chunk of six is 5/6 chunk compression; keeping all is none
    top1 = next(r for r in res["configs"] if r["class"] == "top_n" and r["params"]["n"] == 1)
    assert top1["metrics"]["overall"]["chunk_compression"] == pytest.approx(5 / 6)
    assert set(res["recall_at_68"]) == {f"{lib}.{cls}" for lib, cls in classes}
    assert set(res["recall_at_68"]["admit.top_n"]) == {"all", "alpha", "beta", "all_tokens"}

    llm = {(r["library"], r["class"]): r["llm"] for r in res["llm"]}
    assert {
        ("langchain", "LLMChainFilter"),
        ("langchain", "LLMListwiseRerank"),
        ("llamaindex", "LLMRerank"),
        ("admit", "graded"),
        ("admit", "select"),
    } <= set(llm)
    # LLMChainFilter asks once per document (6), the listwise ones once per question
    assert llm[("langchain", "LLMChainFilter")]["calls_per_question"] == 6
    assert llm[("langchain", "LLMListwiseRerank")]["calls_per_question"] == 1
    assert llm[("admit", "graded")]["calls_per_question"] == 1
    for x in llm.values():
        assert x["questions"] == 2 and x["prompt_tokens_per_question"] > 0
        assert x["overhead_ms_p50"] >= 0
    assert all(r["errors"] == 0 for r in res["llm"])
    assert "| library | class |" in proc.stdout
