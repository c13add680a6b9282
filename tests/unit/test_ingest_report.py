"""Issue 34 item 4: the ingest report's counts add up (files seen = added + updated + unchanged + failed +
skipped + refused, each once), one line per error, and each refusal's cause named right."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from admit.cli import main


def _tree(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe alpha page.\n", "utf-8")
    (docs / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    (docs / "archive.zip").write_bytes(b"PK\x03\x04")  # no format admit reads (an image is a site asset)
    (docs / "dangling.md").symlink_to(root / "nowhere.md")
    outside = root / "secret.md"
    outside.write_text("# Secret\n\nkeep out.\n", "utf-8")
    (docs / "escape.md").symlink_to(outside)
    return docs


def _ingest(docs: Path, kb: Path) -> tuple[int, str, str]:
    args = ["ingest", str(docs), "--kb", str(kb), "--access", "tenant:t", "--embedder", "fake:16", "--no-progress"]
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.stdout, res.stderr


def test_every_file_seen_is_counted_once(tmp_path: Path) -> None:
    docs, kb = _tree(tmp_path), tmp_path / "kb.sqlite"
    code, out, err = _ingest(docs, kb)
    assert code == 1
    assert "5 files seen" in out
    assert "1 added, 0 updated, 0 unchanged, 1 failed, 1 skipped (format), 2 refused (link); 0 removed" in out
    assert "error: 1 of 2 file(s) failed to ingest; 1 other(s) ingested." in err
    (docs / "a.md").unlink()
    code, out, err = _ingest(docs, kb)
    assert "4 files seen" in out and "0 added, 0 updated, 0 unchanged, 1 failed" in out and "1 removed" in out
    assert "no file was ingested" in err and "the others were ingested" not in err


def test_a_dangling_link_is_not_said_to_lie_outside(tmp_path: Path) -> None:
    docs = _tree(tmp_path)
    _, _, err = _ingest(docs, tmp_path / "kb.sqlite")
    dangling = next(line for line in err.splitlines() if "dangling.md" in line)
    assert "dangling symbolic link" in dangling and "does not exist" in dangling and "outside" not in dangling
    escape = next(line for line in err.splitlines() if "escape.md" in line)
    assert "lies outside" in escape


def test_each_error_is_printed_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    docs = _tree(tmp_path)
    with caplog.at_level(logging.WARNING):
        _, _, err = _ingest(docs, tmp_path / "kb.sqlite")
    assert sum("bad.md" in line for line in err.splitlines()) == 1
    assert not [r for r in caplog.records if "bad.md" in r.getMessage() or "dangling" in r.getMessage()]


def test_the_json_report_names_each_refusal_with_its_cause(tmp_path: Path) -> None:
    import json

    docs = _tree(tmp_path)
    args = ["ingest", str(docs), "--kb", str(tmp_path / "kb.sqlite"), "--access", "tenant:t", "--embedder", "fake:16"]
    rep = json.loads(CliRunner().invoke(main, [*args, "--no-progress", "--json"]).stdout)
    causes = {Path(r["path"]).name: r["cause"] for r in rep["refusals"]}
    assert set(causes) == {"dangling.md", "escape.md"} and "does not exist" in causes["dangling.md"]
    assert rep["files_seen"] == 5 == rep["files"] + len(rep["skipped"]) + len(rep["refused_links"])


def test_a_sites_dangling_asset_links_are_left_out_as_assets_not_refused(tmp_path: Path) -> None:
    """Debian links a Sphinx theme's ``_static`` files to other packages: unpacked alone they dangle. They are
    assets, counted on the assets line, not 25 "refused" lines; a dangling page link is still refused."""
    docs = tmp_path / "html"
    (docs / "_static").mkdir(parents=True)
    (docs / "index.html").write_text("<html><body><h1>Guide</h1><p>The alpha page text.</p></body></html>", "utf-8")
    (docs / "_static" / "jquery.js").symlink_to(tmp_path / "elsewhere" / "jquery.js")
    (docs / "_static" / "theme.css").symlink_to(tmp_path / "elsewhere" / "theme.css")
    (docs / "lost.html").symlink_to(tmp_path / "elsewhere" / "lost.html")
    _, out, err = _ingest(docs, tmp_path / "kb.sqlite")
    assert "1 refused (link)" in out, out
    assert "skipped 2 site assets" in out, out
    assert "jquery.js" not in err and "theme.css" not in err
    assert "lost.html" in err and "dangling symbolic link" in err
