"""Metric functions against hand-computed small cases."""

from __future__ import annotations

import json

import pytest

from admit.errors import ConfigError
from admit.eval import report
from admit.eval.metrics import (
    CostRates,
    QuestionResult,
    breakdowns,
    diagnose,
    percentile,
    question_diagnosis,
    recall_at,
    summarize,
)
from admit.eval.report import pareto_front
from admit.prune.savings import net_saving_usd
from admit.types import Usage


def _q(rid: str, cands: dict[str, int], kept: list[str], required: list[str], **kw: object) -> QuestionResult:
    return QuestionResult(
        record_id=rid,
        candidate_ids=tuple(cands),
        kept_ids=tuple(kept),
        required=tuple(required),
        candidate_tokens=cands,
        **kw,  # type: ignore[arg-type]
    )


def test_diagnose_every_state() -> None:
    assert diagnose(["a", "b", "z"], ["a", "b", "c"], ["a"]) == {"a": "admitted", "b": "dropped", "z": "missing"}
    got = diagnose(["a", "b", "c"], ["a", "b", "c"], ["a", "b", "c"], cited=["a", "b"], supported=["a"])
    assert got == {"a": "supported", "b": "cited", "c": "admitted"}
    assert question_diagnosis({"a": "admitted", "b": "dropped", "z": "missing"}) == "missing"
    assert question_diagnosis({"a": "admitted", "b": "dropped"}) == "dropped"
    assert question_diagnosis({}) == "admitted"


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([5.0], 95) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    # numpy.percentile([10, 20, 30, 40, 50], 95) == 48.0
    assert percentile([50, 10, 40, 20, 30], 95) == pytest.approx(48.0)


def test_summarize_hand_computed() -> None:
    # q1: 4 candidates (10, 20, 30, 40 tokens), keeps a, b; requires a, b -> retained
    # q2: 2 candidates (50, 50), keeps x; requires x, y -> not retained; y dropped
    # q3: 3 candidates (10 each), keeps p; requires p and "gone" (not a candidate) -> missing
    q1 = _q("q1", {"a": 10, "b": 20, "c": 30, "d": 40}, ["a", "b"], ["a", "b"], latency_s=0.010, source="s1")
    q2 = _q(
        "q2",
        {"x": 50, "y": 50},
        ["x"],
        ["x", "y"],
        latency_s=0.020,
        source="s1",
        usage=Usage(prompt_tokens=1000, completion_tokens=100, calls=1),
    )
    q3 = _q(
        "q3",
        {"p": 10, "q": 10, "r": 10},
        ["p"],
        ["p", "gone"],
        latency_s=0.030,
        source="s2",
        usage=Usage(cost_usd=0.01),
    )
    prices = CostRates(generator_input_per_mtok=2.0, pruner_input_per_mtok=1.0, pruner_output_per_mtok=4.0)
    m = summarize([q1, q2, q3], prices)
    assert m["questions"] == 3
    assert m["chunk_compression"] == pytest.approx(1 - 4 / 9)
    assert m["token_compression"] == pytest.approx(1 - (30 + 50 + 10) / (100 + 100 + 30))
    assert m["retained_recall"] == pytest.approx(1 / 3)
    assert m["chunk_recall"] == pytest.approx(4 / 6)
    assert m["diagnosis_questions"] == {"missing": 1, "dropped": 1, "admitted": 1}
    assert m["diagnosis_chunks"] == {"missing": 1, "dropped": 1, "admitted": 4}
    assert m["latency_ms_p50"] == pytest.approx(20.0)
    assert m["latency_ms_p95"] == pytest.approx(29.0)
    # pruner cost: q1 0; q2 1000 * 1/1e6 + 100 * 4/1e6 = 0.0014; q3 reports 0.01 itself
    assert m["pruner_cost_usd"] == pytest.approx(0.0114)
    assert m["pruner_cost_per_query_usd"] == pytest.approx(0.0114 / 3)
    saved = (70 + 50 + 20) / 3
    assert m["generator_tokens_saved_per_query"] == pytest.approx(saved)
    assert m["net_cost_change_per_query_usd"] == pytest.approx(0.0114 / 3 - saved * 2.0 / 1e6)
    assert "cited" not in m["diagnosis_questions"]


def test_breakdowns_group_by_source_and_classes() -> None:
    q1 = _q("q1", {"a": 1, "b": 1}, ["a"], ["a"], source="s1", hop_type="single_hop", query_class="point_lookup")
    q2 = _q("q2", {"a": 1, "b": 1}, ["a"], ["b"], source="s2", hop_type="single_hop", query_class="default")
    b = breakdowns([q1, q2])
    assert b["overall"]["retained_recall"] == 0.5
    assert b["by_source"]["s1"]["retained_recall"] == 1.0
    assert b["by_source"]["s2"]["retained_recall"] == 0.0
    assert set(b["by_query_class"]) == {"point_lookup", "default"}
    assert b["by_hop_type"]["single_hop"]["questions"] == 2


def test_price_table_load_nested_and_flat(tmp_path) -> None:
    p = tmp_path / "prices.toml"
    p.write_text("[generator]\ninput_per_mtok = 3.0\n[pruner]\ninput_per_mtok = 0.5\nper_call = 0.001\n")
    t = CostRates.load(p)
    assert (t.generator_input_per_mtok, t.pruner_input_per_mtok, t.pruner_per_call) == (3.0, 0.5, 0.001)
    j = tmp_path / "prices.json"
    j.write_text(json.dumps({"generator_input_per_mtok": 1.25}))
    assert CostRates.load(j).generator_input_per_mtok == 1.25
    bad = tmp_path / "bad.toml"
    bad.write_text("[generator]\nprice = 1\n")
    with pytest.raises(ConfigError, match="generator_price"):
        CostRates.load(bad)
    neg = tmp_path / "neg.toml"
    neg.write_text("generator_input_per_mtok = -1\n")
    with pytest.raises(ConfigError, match="non-negative"):
        CostRates.load(neg)


def test_pareto_front_and_recall_at() -> None:
    pts = [(0.1, 0.9, "a"), (0.5, 0.8, "b"), (0.4, 0.7, "c"), (0.7, 0.5, "d"), (0.2, 0.95, "e")]
    front = pareto_front(pts)
    assert [p[2] for p in front] == ["e", "b", "d"]
    # between b (0.5, 0.8) and d (0.7, 0.5): at 0.6 -> 0.65
    assert recall_at(front, 0.6) == pytest.approx(0.65)
    assert recall_at(front, 0.8) is None
    assert recall_at(front, 0.1) == pytest.approx(0.95)


def test_recall_at_reads_unnamed_curves_as_the_report_reads_fronts() -> None:
    curve = [(0.0, 1.0), (0.5, 0.8), (0.7, 0.5)]
    assert recall_at(curve, 0.6) == pytest.approx(0.65)
    assert recall_at(curve, 0.6) == recall_at([(c, r, "") for c, r in curve], 0.6)
    assert recall_at(curve, 0.75) is None
    assert report.recall_at is recall_at  # one implementation, re-exported by the report


def test_the_net_cost_change_is_the_one_saving_with_its_sign_turned() -> None:
    prices = CostRates(generator_input_per_mtok=2.0)
    costly = _q("q1", {"a": 100, "b": 100}, ["a"], ["a"], usage=Usage(cost_usd=0.01))  # saves 100 tokens, costs 0.01
    m = summarize([costly], prices)
    saving = net_saving_usd(m["generator_cost_saved_per_query_usd"], m["pruner_cost_per_query_usd"])
    assert saving == pytest.approx(100 * 2.0 / 1e6 - 0.01) and saving < 0  # a loss
    assert m["net_cost_change_per_query_usd"] == -saving > 0
    nothing = summarize([_q("q2", {"a": 10}, ["a"], ["a"])], prices)  # keeps all, costs nothing
    assert str(nothing["net_cost_change_per_query_usd"]) == "0.0"  # never -0.0 (shown as "+0.000000")
