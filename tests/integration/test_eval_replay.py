"""Shadow replay on recorded traces: the diff, the kill switch and the rollout share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from admit.cli import main
from admit.errors import ConfigError
from admit.eval.replay import ReplayLog, iter_replay_lines, replay_file
from admit.pipeline import PackRequest, Pipeline
from admit.policy import load_policy_set
from admit.types import Access, Chunk, Principal

pytestmark = pytest.mark.integration

ACL = Access(tenant="acme")
TOPICS = ["port", "timeout", "tls", "cache", "retry", "logging", "quota", "backup"]


def _policy(tmp_path: Path, name: str, *, strategy: str, n: int = 1, kill: bool = False, rollout: float = 1.0) -> Path:
    """The shipped policy with every class pruning by ``strategy`` (keep_top_k 0, params ``n``)."""
    from importlib import resources

    text = resources.files("admit.policies").joinpath("default.toml").read_text("utf-8")
    text = text.replace('strategy = "none"', f'strategy = "{strategy}"\nn = {n}', 1)
    text = text.replace("keep_top_k = 1", "keep_top_k = 0", 1)
    text = text.replace("kill_switch = false", f"kill_switch = {str(kill).lower()}", 1)
    text = text.replace("rollout = 1.0", f"rollout = {rollout}", 1)
    p = tmp_path / name
    p.write_text(text)
    return p


def _requests() -> list[PackRequest]:
    out = []
    for i, topic in enumerate(TOPICS):
        cands = [
            Chunk(
                id=f"r{i}-c{j}",
                source_id=f"doc{j}",
                title=f"{TOPICS[j]} guide",
                text=f"The {TOPICS[j]} setting controls {TOPICS[j]} behaviour. " * (1 + j % 2),
                access=ACL,
            )
            for j in range(len(TOPICS))
        ]
        out.append(
            PackRequest(
                question=f"How do I configure the {topic} setting?",
                principal=Principal(tenant="acme"),
                candidates=cands,
                request_id=f"req-{i}",
            )
        )
    return out


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """Production ran with pruning off and logged every request for replay."""
    log = ReplayLog(tmp_path / "replay.jsonl")
    pipe = Pipeline(reranker="bm25")
    for req in _requests():
        log.write(req, pipe.pack(req))
    return log.path


def test_replay_reports_the_diff_of_a_stricter_policy(recorded: Path, tmp_path: Path) -> None:
    old = [json.loads(line) for line in recorded.read_text().splitlines()]
    assert all(len(o["trace"]["accepted_chunk_ids"]) > 1 for o in old)
    new_policy = _policy(tmp_path, "new.toml", strategy="top_n")
    rep = replay_file(recorded, new_policy, reranker="bm25")
    s = rep.summary
    assert s["requests"] == len(TOPICS) == s["in_rollout"]
    assert s["changed"] == len(TOPICS) and s["lost_evidence"] == len(TOPICS)
    for d, o in zip(rep.diffs, old, strict=True):
        assert d["request_id"] == o["trace"]["request_id"]
        assert d["old_admitted"] == o["trace"]["accepted_chunk_ids"]
        assert len(d["new_admitted"]) == 1 and d["new_admitted"][0] in d["old_admitted"]
        assert set(d["removed"]) == set(d["old_admitted"]) - set(d["new_admitted"])
        assert d["token_delta"] < 0 and d["est_cost_change_usd"] < 0
    # the best chunk of "port" question is the port guide
    assert rep.diffs[0]["new_admitted"] == ["r0-c0"]
    assert s["new_evidence_tokens"] < s["old_evidence_tokens"]

    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["replay", str(recorded), "--policy", str(new_policy), "--out", str(out), "--reranker", "bm25"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lost_evidence"] == len(TOPICS)
    assert len((out / "diff.jsonl").read_text().splitlines()) == len(TOPICS)


def test_rollout_share_keeps_the_old_decision_outside(recorded: Path, tmp_path: Path) -> None:
    pol = _policy(tmp_path, "half.toml", strategy="top_n", rollout=0.5)
    ps = load_policy_set(pol)
    inside = {f"req-{i}" for i in range(len(TOPICS)) if ps.in_rollout(f"req-{i}")}
    assert 0 < len(inside) < len(TOPICS)  # the hash splits these ids
    rep = replay_file(recorded, pol, reranker="bm25")
    for d in rep.diffs:
        assert d["in_rollout"] == (d["request_id"] in inside)
        if not d["in_rollout"]:
            assert d["new_admitted"] == d["old_admitted"] and not d["changed"]
        else:
            assert len(d["new_admitted"]) == 1
    assert rep.summary["in_rollout"] == len(inside) == rep.summary["lost_evidence"]


def test_kill_switch_turns_pruning_off(recorded: Path, tmp_path: Path) -> None:
    pol = _policy(tmp_path, "kill.toml", strategy="top_n", kill=True)
    rep = replay_file(recorded, pol, reranker="bm25")
    assert rep.summary["kill_switch"] is True
    assert all(d["kill_switch"] for d in rep.diffs)
    assert rep.summary["lost_evidence"] == 0  # no pruning: same decisions as the unpruned production run


def test_plain_trace_without_request_is_a_clear_error(tmp_path: Path) -> None:
    from admit.trace import JsonlSink

    sink = JsonlSink(tmp_path / "trace.jsonl")
    Pipeline(reranker="bm25", sink=sink).pack(_requests()[0])
    with pytest.raises(ConfigError, match=r"line 1: field `request`: missing.*ReplayLog"):
        list(iter_replay_lines(sink.path))
    rep = replay_file(sink.path, _policy(tmp_path, "p.toml", strategy="top_n"))  # skipped, not fatal
    assert rep.summary["requests"] == 0 and rep.summary["skipped_lines"] == 1
    assert "field `request`: missing" in rep.skipped[0][1]


def test_replay_skips_and_counts_crafted_lines_one_error_each(recorded: Path, tmp_path: Path) -> None:
    good = recorded.read_text().splitlines()
    crafted = [
        "[" * 100_000 + "]" * 100_000,  # nesting deeper than the parser's recursion
        '{"request": {"question": "q", "candidates": []}, "trace": {"n": ' + "9" * 5_000 + "}}",  # a huge int
        "{not json",
        '{"request": {"question": ' + "[" * 50_000 + "]" * 50_000 + '}, "trace": {}}',
        '{"request": {"question": 5, "candidates": "x"}, "trace": {}}',
    ]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([good[0], *crafted, *good[1:]]) + "\n", "utf-8")
    res = CliRunner().invoke(
        main,
        [
            "replay",
            str(mixed),
            "--policy",
            str(_policy(tmp_path, "p.toml", strategy="top_n")),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 0, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == len(crafted), res.output
    assert "Traceback" not in res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["requests"] == len(good) and summary["skipped_lines"] == len(crafted)
