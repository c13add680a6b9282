"""Ingest keeps the knowledge base equal to the folder: removals (the last file too), counts that add up, titles
that keep their characters, a per-file size cap, options checked by name, HTML read once however nested.

The store is the shipped in-process store (``memory://``); the embedder the shipped deterministic double (these
tests are about ingest's bookkeeping, not retrieval quality)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from admit.errors import ConfigError
from admit.kb import IngestOptions, IngestReport, KnowledgeBase
from admit.kb.parse import parse_html
from admit.types import Principal


def _kb() -> KnowledgeBase:
    return KnowledgeBase("memory://", embedder="fake:16")


def _adds_up(rep: IngestReport) -> None:
    assert rep.files == rep.sources_added + rep.sources_updated + rep.sources_unchanged + len(rep.errors), rep


def test_files_removed_since_the_last_run_go_the_last_one_too(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha.\n", "utf-8")
    (docs / "b.md").write_text("# B\n\nbeta.\n", "utf-8")
    kb = _kb()
    kb.ingest([docs], tenant="t")
    (docs / "a.md").unlink()
    rep = kb.ingest([docs], tenant="t")
    assert (rep.sources_removed, rep.sources_unchanged) == (1, 1)
    (docs / "b.md").unlink()  # the folder's last file
    rep = kb.ingest([docs], tenant="t")
    assert (rep.files, rep.sources_removed, rep.chunks_removed) == (0, 1, 1)
    assert kb.count() == 0
    assert kb.search("beta", Principal(tenant="t")).admitted == ()


def test_the_report_adds_up_with_errors_and_the_size_cap(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha one.\n\n## Sub\n\nalpha two.\n", "utf-8")
    (docs / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    (docs / "big.md").write_text("# Big\n\n" + "word " * 400, "utf-8")
    (docs / "skip.bin").write_bytes(b"\0")
    kb = _kb()
    rep = kb.ingest([docs], tenant="t", max_file_bytes=1_000)
    _adds_up(rep)
    assert (rep.files, rep.sources_added, len(rep.errors)) == (3, 1, 2)
    by_path = {Path(p).name: e for p, e in rep.errors}
    assert "over the 1,000-byte cap" in by_path["big.md"] and "\n" not in by_path["big.md"]
    assert rep.chunks_added == rep.chunks_written == kb.count() == 2
    (docs / "a.md").write_text("# A\n\nalpha one changed.\n", "utf-8")
    rep = kb.ingest([docs], tenant="t", max_file_bytes=1_000)
    _adds_up(rep)
    assert (rep.sources_updated, rep.chunks_changed, rep.chunks_removed) == (1, 1, 1)
    assert rep.chunks_added + rep.chunks_changed + rep.chunks_unchanged == kb.count() == 1
    rep = kb.ingest([docs], tenant="t")  # the cap raised: the big file is read now
    _adds_up(rep)
    assert (rep.sources_added, rep.sources_unchanged, len(rep.errors)) == (1, 1, 1)


def test_titles_keep_their_characters_into_the_prompt(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "errors.md").write_text("# Error codes\n\n## E4012\n\nE4012 means the quota is exceeded.\n", "utf-8")
    kb = _kb()
    kb.ingest([docs], tenant="t")
    (chunk,) = kb.store.get_source_chunks("errors", "t")
    assert chunk.title == "Error codes › E4012"
    res = kb.search("What does E4012 mean?", Principal(tenant="t"), prune=False)
    assert 'title="Error codes › E4012"' in res.prompt


def test_a_misspelled_option_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Unknown ingest option 'tennant'; did you mean 'tenant'\?"):
        _kb().ingest([tmp_path], tennant="t")
    with pytest.raises(ConfigError, match="max_file_bytes"):
        IngestOptions(max_file_bytes=0)


def test_the_cli_reports_an_oversized_file_in_one_line_and_ingests_the_rest(tmp_path: Path) -> None:
    from admit.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha.\n", "utf-8")
    (docs / "big.md").write_text("# Big\n\n" + "word " * 400_000, "utf-8")
    kb = tmp_path / "kb.sqlite"
    args = ["ingest", str(docs), "--kb", str(kb), "--access", "tenant:t", "--embedder", "fake:16", "--no-progress"]
    out = CliRunner().invoke(main, [*args, "--max-file-mb", "1"])
    assert out.exit_code == 1, out.output
    errors = [line for line in out.stderr.splitlines() if "big.md" in line]
    assert len(errors) == 1 and "cap per file" in errors[0], out.stderr
    assert "2 files seen" in out.stdout and "1 added, 0 updated, 0 unchanged, 1 failed" in out.stdout


def test_nested_tables_are_read_once_and_deeper_than_the_parser_goes_is_refused() -> None:
    n = 600
    page = "<html><body>" + "<table><tr><td>cell text " * n + "</td></tr></table>" * n + "</body></html>"
    doc = parse_html(page, fallback_title="x")
    text = "\n".join(p for s in doc.sections for p in s.paragraphs)
    assert text.count("cell text") == n  # each cell's text once: the output grows with the input, not its square
    two = "<table><tr><td>left</td><td>right " * 50 + "</td></tr></table>" * 50
    rows = [p for s in parse_html(two, fallback_title="x").sections for p in s.paragraphs]
    assert rows[0].startswith("left | right left right") and rows[0].count("left") == 50
    deeper = "<table><tr><td>cell text " * 1_000 + "</td></tr></table>" * 1_000
    with pytest.raises(ValueError, match="nested deeper than the parser's limit"):  # never stored half-read
        parse_html(deeper, fallback_title="x")
