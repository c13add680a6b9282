"""The Ray Data engine on a tiny file gives the same numbers as the in-process engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ray = pytest.importorskip("ray", reason='ray is not installed (pip install "admit[ray]")')
pytest.importorskip("ray.data", reason='ray[data] is not installed (pip install "admit[ray]")')

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    rows = []
    for i in range(5):
        cands = [
            {
                "id": f"c{j}",
                "source_id": f"s{j}",
                "title": WORDS[j],
                "text": f"{WORDS[j]} {WORDS[(i + j) % 8]} " * (1 + j % 3) + "common words here",
            }
            for j in range(8)
        ]
        rows.append(
            {
                "id": f"tiny:{i}",
                "question": f"{WORDS[i]} and {WORDS[(i + 3) % 8]}?",
                "candidates": cands,
                "required": [f"c{i}", f"c{(i + 3) % 8}"],
                "source": "tiny",
                "hop_type": "multi_hop",
                "question_type": "bridge",
            }
        )
    p = tmp_path / "tiny.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _numbers(run) -> dict:
    keys = (
        "chunk_compression",
        "token_compression",
        "retained_recall",
        "chunk_recall",
        "kept",
        "candidate_tokens",
        "generator_tokens_saved",
        "diagnosis_questions",
    )
    return {name: {k: m["overall"][k] for k in keys} for name, m in run.metrics.items()}


def test_ray_engine_matches_in_process(tiny: Path, local_ray: None) -> None:
    from admit.eval.dataset import load_dataset
    from admit.eval.engine import RayEngine
    from admit.eval.sweep import EvalOptions, expand_grid, run_eval

    records = load_dataset(tiny)
    configs = [
        *expand_grid("top_n", {"n": [1, 2, 4]}),
        *expand_grid("score_threshold", {"relative": [True], "min_score": [0.5]}),
    ]
    opts = EvalOptions(reranker="bm25", generator_model="cl100k_base", cache=None)
    local = run_eval(records, configs, opts)
    distributed = run_eval(records, configs, opts, engine=RayEngine(batch_size=2))
    assert distributed.computed == local.computed == len(records) * len(configs)
    assert _numbers(distributed) == _numbers(local)
    for c in configs:
        assert [r.kept_ids for r in distributed.results[c.name]] == [r.kept_ids for r in local.results[c.name]]
    assert distributed.scores == local.scores
