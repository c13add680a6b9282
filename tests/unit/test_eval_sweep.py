"""Sweep driver: grids, the threshold re-application, caching, and label-free work units."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from admit.backends.rerankers.lexical import BM25Reranker
from admit.errors import ConfigError
from admit.eval.dataset import load_dataset
from admit.eval.engine import RunSpec, Task, run_tasks
from admit.eval.sweep import Config, EvalOptions, configs_for, expand_grid, parse_sweep, run_eval
from admit.prune import resolve_pruner, run_pruner
from admit.rerank import rerank

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    rows = []
    for i in range(6):
        q = f"what does {WORDS[i]} say about {WORDS[(i + 1) % 10]}"
        cands = [
            {
                "id": f"c{j}",
                "source_id": f"s{j}",
                "title": WORDS[j].title(),
                "text": f"{WORDS[j]} " * (j % 3 + 1) + f"{WORDS[(j + i) % 10]} filler text number {j}",
            }
            for j in range(8)
        ]
        rows.append(
            {
                "id": f"toy:{i}",
                "question": q,
                "candidates": cands,
                "required": [f"c{i}", f"c{(i + 1) % 8}"],
                "source": "toy" if i % 2 else "toy2",
                "hop_type": "multi_hop",
                "question_type": "bridge",
            }
        )
    p = tmp_path / "toy.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_parse_and_expand() -> None:
    sw = parse_sweep(["threshold=2,3", "keep_top_k=0,1", "relative=true"])
    assert sw == {"threshold": [2, 3], "keep_top_k": [0, 1], "relative": [True]}
    cfgs = expand_grid("setwise", sw, {"on_error": "keep_all"})
    assert len(cfgs) == 4 and cfgs[0].params == {
        "on_error": "keep_all",
        "threshold": 2,
        "keep_top_k": 0,
        "relative": True,
    }
    assert cfgs[0].name == "setwise keep_top_k=0 on_error=keep_all relative=true threshold=2"
    with pytest.raises(ConfigError, match="key=v1,v2"):
        parse_sweep(["threshold"])
    with pytest.raises(ConfigError, match="Unknown strategy"):
        expand_grid("nope", {})


def test_all_skips_llm_strategies_without_endpoint() -> None:
    cfgs, notes = configs_for(["all"], {}, {}, llm_available=False)
    strategies = {c.strategy for c in cfgs}
    assert {"top_n", "score_threshold"} <= strategies
    assert not strategies & {"graded", "select", "budget_select", "anchors"}
    assert any("LLM strategies skipped" in n for n in notes)
    with pytest.raises(ConfigError, match="--llm-base-url"):
        configs_for(["graded"], {}, {}, llm_available=False)
    cfgs, _ = configs_for(["top_n"], {"n": [1, 2]}, {}, llm_available=False)
    assert [c.params for c in cfgs] == [{"n": 1}, {"n": 2}]


HAS_SETWISE = importlib.util.find_spec("admit.prune.setwise") is not None


def test_rethreshold_matches_running_the_pruner(toy: Path, tmp_path: Path) -> None:
    """For grade-only strategies the harness grades once and applies threshold/keep_top_k itself: the kept sets
    must equal what the pruner decides when run with each full setting."""
    records = load_dataset(toy)
    configs = [
        *expand_grid("top_n", {"n": [1, 3], "keep_top_k": [0, 2], "threshold": [3, 5]}),
        *expand_grid("score_threshold", {"relative": [True], "min_score": [0.3, 0.8], "keep_top_k": [0, 1]}),
    ]
    if HAS_SETWISE:
        configs += expand_grid("setwise", {"threshold": [2, 3, 4, 5], "keep_top_k": [0, 1, 2]})
    opts = EvalOptions(reranker="bm25", embedder="fake", generator_model="cl100k_base", cache=None)
    run = run_eval(records, configs, opts)
    for c in configs:
        if c.strategy == "setwise":
            from admit.backends.embedders import resolve_embedder

            pruner = resolve_pruner("setwise", embedder=resolve_embedder("fake"))
        else:
            pruner = resolve_pruner(c.strategy)
        for rec, res in zip(records, run.results[c.name], strict=True):
            ranked, _ = rerank(rec.question, list(rec.candidates), BM25Reranker(), keep=100)
            direct = run_pruner(pruner, rec.question, ranked, c.settings())
            assert sorted(res.kept_ids) == sorted(direct.kept_ids), (c.name, rec.id)


def test_cache_second_run_computes_nothing_and_widening_computes_only_new(toy: Path, tmp_path: Path) -> None:
    records = load_dataset(toy)
    opts = EvalOptions(reranker="bm25", generator_model="cl100k_base", cache=tmp_path / "cache")
    first = run_eval(records, expand_grid("top_n", {"n": [1, 2]}), opts)
    assert (first.computed, first.cached, first.scores_computed) == (12, 0, 6)
    second = run_eval(records, expand_grid("top_n", {"n": [1, 2]}), opts)
    assert (second.computed, second.cached, second.scores_computed) == (0, 12, 0)
    assert second.entries() == first.entries()
    wider = run_eval(records, expand_grid("top_n", {"n": [1, 2, 3]}), opts)
    assert (wider.computed, wider.cached, wider.scores_computed) == (6, 12, 0)
    # threshold / keep_top_k of a grade-only strategy reuse the grading: nothing new to compute
    thr = run_eval(records, expand_grid("top_n", {"n": [2], "keep_top_k": [0, 3]}), opts)
    assert thr.computed == 0
    assert [r.kept_ids for r in thr.results["top_n keep_top_k=0 n=2"]] == [
        r.kept_ids for r in first.results["top_n n=2"]
    ]


def test_work_units_carry_no_labels(toy: Path) -> None:
    rec = load_dataset(toy)[0]
    task = Task(input=rec.prune_input(), jobs=(("k", "top_n", {"n": 2}),))
    blob = json.dumps(task.to_json())
    assert "required" not in blob and "answers" not in blob
    out = run_tasks([Task.from_json(json.loads(blob))], RunSpec(reranker="bm25"))
    assert len(out[0]["scores"]) == 8 and len(out[0]["outcomes"]["k"]["kept"]) == 2


def test_config_name_and_grading_params() -> None:
    c = Config(strategy="setwise", params={"threshold": 3, "keep_top_k": 1, "x": 2})
    assert c.grading_params() == {"x": 2}
    assert Config(strategy="graded", params={"threshold": 3}).grading_params() == {"threshold": 3}
    with pytest.raises(ConfigError, match="unknown prune parameter `x`"):
        c.settings()  # setwise reads no parameter called x: an error, not silently ignored
    ok = Config(strategy="top_n", params={"threshold": 3, "n": 2})
    assert ok.settings().threshold == 3 and dict(ok.settings().params) == {"n": 2}


def test_cache_identity_follows_the_code(tmp_path: Path) -> None:
    from admit.eval.sweep import pruner_identity, reranker_identity, source_digest

    f = tmp_path / "model.json"
    f.write_text("{}")
    before = source_digest(["admit.prune.top_n"], [f])
    f.write_text('{"w": 1}')
    assert source_digest(["admit.prune.top_n"], [f]) != before
    opts = EvalOptions()
    assert pruner_identity("top_n", opts) != pruner_identity("score_threshold", opts)
    assert reranker_identity("dense", "minilm") != reranker_identity("dense", "fake")
