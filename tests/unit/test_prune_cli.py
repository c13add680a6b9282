"""``admit prune`` with click's CliRunner on a 3-record JSONL file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from admit.cli import main
from admit.cli.prune import parse_set_options

RECORDS = [
    {
        "id": "q1",
        "question": "How do I enable audit logs?",
        "candidates": [
            {"id": "c0", "title": "Bananas", "text": "Bananas are yellow."},
            {"id": "c1", "title": "Audit", "text": "Enable audit logs with the audit.enabled flag."},
            {"id": "c2", "text": "Logs rotate daily."},
        ],
        "required": ["c0"],  # deliberately wrong: the CLI must never read labels
        "answers": ["x"],
    },
    {
        "id": "q2",
        "question": "What port does the server use?",
        "candidates": [{"id": "a", "text": "The server listens on port 7007."}, {"id": "b", "text": "Unrelated."}],
    },
    {"id": "q3", "question": "Empty list?", "candidates": []},
]


def _write(tmp_path: Path, rows: list[object]) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return p


def _run(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["prune", *args], catch_exceptions=False)


def test_top_n_end_to_end(tmp_path: Path) -> None:
    inp, out = _write(tmp_path, RECORDS), tmp_path / "out.jsonl"
    r = _run(["--input", str(inp), "--output", str(out), "--strategy", "top_n", "--set", "n=1", "--reranker", "bm25"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [x["id"] for x in rows] == ["q1", "q2", "q3"]
    assert rows[0]["kept"] == ["c1"]  # reranked by BM25 first: the audit chunk is rank 1
    assert rows[1]["kept"] == ["a"]
    assert rows[2]["kept"] == [] and rows[2]["decisions"] == []
    d = {x["id"]: x for x in rows[0]["decisions"]}
    assert [x["id"] for x in rows[0]["decisions"]] == ["c0", "c1", "c2"]  # input order
    assert d["c1"]["kept"] is True and d["c0"]["kept"] is False and d["c1"]["grade"] == 5
    assert set(d["c0"]) == {"id", "kept", "grade", "reason", "score", "rank"}  # the verdict shape of every face
    assert set(rows[0]) >= {"id", "kept", "decisions", "usage", "latency_s"}


def test_graded_with_llm_spec_and_settings(tmp_path: Path) -> None:
    inp, out = _write(tmp_path, RECORDS[:2]), tmp_path / "out.jsonl"
    r = _run(
        [
            "--input",
            str(inp),
            "--output",
            str(out),
            "--strategy",
            "graded",
            "--llm",
            "fake",
            "--set",
            "keep_top_k=0",
            "--set",
            "on_error=drop",
            "--reranker",
            "bm25",
            "--workers",
            "2",
        ]
    )
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # the fake answers "{}": nothing usable, so on_error=drop applies and is recorded
    assert all(x["kept"] == [] and x["fallback"] == "drop" and "GraderOutputError" in x["error"] for x in rows)


def test_stdout_output(tmp_path: Path) -> None:
    r = _run(
        ["--input", str(_write(tmp_path, RECORDS[1:2])), "--output", "-", "--strategy", "top_n", "--reranker", "bm25"]
    )
    assert r.exit_code == 0 and json.loads(r.stdout.splitlines()[-1])["id"] == "q2"


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('{"id": "x", "candidates": []}', "line 2: field `question`"),
        ('{"id": "x", "question": "q"}', "line 2: field `candidates`"),
        ('{"id": "x", "question": "q", "candidates": [{"id": "a"}]}', r"line 2: field `candidates\[0\].text`"),
        ('{"id": "x", "question": "q", "candidates": [{"text": "t"}]}', r"line 2: field `candidates\[0\].id`"),
        (
            '{"id": "x", "question": "q", "candidates": [{"id": "a", "text": "t"}, {"id": "a", "text": "u"}]}',
            r"line 2: field `candidates\[1\]\.id`: Duplicate candidate id",
        ),
        ("[1, 2]", "line 2: expected a JSON object"),
    ],
)
def test_malformed_line_exits_2(tmp_path: Path, line: str, match: str) -> None:
    inp = _write(tmp_path, [RECORDS[1], line])
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(
        main, ["prune", "--input", str(inp), "--output", str(out), "--strategy", "top_n", "--reranker", "bm25"]
    )
    assert r.exit_code == 2
    import re

    assert re.search(match, r.output), r.output
    assert not out.exists()  # validated before anything is written


@pytest.mark.parametrize(
    ("opt", "match"),
    [
        ("threshold=9", "threshold"),
        ("keep_top_k=-1", "keep_top_k"),
        ("on_error=panic", "on_error"),
        ("novalue", "key=value"),
    ],
)
def test_bad_set_exits_2(tmp_path: Path, opt: str, match: str) -> None:
    r = CliRunner().invoke(
        main,
        [
            "prune",
            "--input",
            str(_write(tmp_path, RECORDS)),
            "--output",
            "-",
            "--strategy",
            "top_n",
            "--set",
            opt,
            "--reranker",
            "bm25",
        ],
    )
    assert r.exit_code == 2 and match in r.output


def test_llm_strategy_without_llm_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADMIT_LLM_MODEL", raising=False)
    monkeypatch.delenv("ADMIT_LLM_BASE_URL", raising=False)
    r = CliRunner().invoke(
        main,
        [
            "prune",
            "--input",
            str(_write(tmp_path, RECORDS)),
            "--output",
            "-",
            "--strategy",
            "graded",
            "--reranker",
            "bm25",
        ],
    )
    assert r.exit_code == 2 and "needs an LLM" in r.output


def test_unknown_strategy_exits_2(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main,
        [
            "prune",
            "--input",
            str(_write(tmp_path, RECORDS)),
            "--output",
            "-",
            "--strategy",
            "magic",
            "--reranker",
            "bm25",
        ],
    )
    assert r.exit_code == 2 and "magic" in r.output


def test_parse_set_options_types() -> None:
    s = parse_set_options(
        ["threshold=4", "keep_top_k=0", "on_error=keep_all", "max_tokens=64", "on_missing=reask", "second_pass=true"],
        "graded",
    )
    assert (s.threshold, s.keep_top_k, s.on_error, s.strategy) == (4, 0, "keep_all", "graded")
    assert dict(s.params) == {"max_tokens": 64, "on_missing": "reask", "second_pass": True}
    t = parse_set_options(["min_score=0.5", "relative=true"], "score_threshold")
    assert dict(t.params) == {"min_score": 0.5, "relative": True}
