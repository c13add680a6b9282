"""Issue 34 item 7, the small things: a plain pytest never rewrites the tracked inspector figure, the ingest bar
is drawn only on a terminal, ``--no-prune`` is in ``--help``, the docs build air-gapped (no highlight.js from a
CDN), and the eval sweep has a shipped fixture where ``../shared`` is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from admit.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_the_inspector_screenshot_goes_to_a_temporary_folder_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.test_inspector import SCREENSHOT_ENV, screenshot_path

    monkeypatch.delenv(SCREENSHOT_ENV, raising=False)
    assert screenshot_path(tmp_path) == tmp_path / "inspector.png"
    monkeypatch.setenv(SCREENSHOT_ENV, "docs/figures/inspector.png")
    assert screenshot_path(tmp_path) == REPO / "docs" / "figures" / "inspector.png"
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    assert f"export {SCREENSHOT_ENV}=docs/figures/inspector.png" in ci


def test_the_ingest_bar_is_not_drawn_when_stderr_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # off a terminal, progress is a line every LINE_INTERVAL seconds: a run shorter than that writes none (the
    # interval is made long here, so a busy machine cannot make this run outlast it)
    monkeypatch.setattr("admit.kb._progress.LINE_INTERVAL", 1e9)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\nSome text about page {i}.\n", "utf-8")
    args = ["ingest", str(docs), "--kb", str(tmp_path / "kb.sqlite"), "--embedder", "fake", "--access", "tenant:t"]
    res = CliRunner().invoke(main, args)  # CliRunner's stderr is not a terminal
    assert res.exit_code == 0, res.output
    assert "chunks" not in res.stderr and "ETA" not in res.stderr and "━" not in res.stderr


def test_no_prune_is_in_search_help() -> None:
    res = CliRunner().invoke(main, ["search", "--help"])
    assert "--no-prune" in res.stdout


def test_the_docs_theme_loads_nothing_from_a_cdn() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text("utf-8"))
    assert config["theme"]["name"] == "mkdocs" and config["theme"]["highlightjs"] is False


def test_the_eval_fixture_is_in_the_development_format() -> None:
    lines = (REPO / "tests" / "data" / "ferrule_eval.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 10
    for line in lines:
        rec = json.loads(line)
        ids = {c["id"] for c in rec["candidates"]}
        assert rec["question"] and set(rec["required"]) <= ids
