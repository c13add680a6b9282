"""``admit ingest`` says what it lost (issue 45, item 2), as a user sees it: the pages that gave no chunk are
named, a re-ingest of an unchanged site reports nothing added, and a site where most pages give nothing exits
non-zero with one line that says so. A new process per run, a SQLite knowledge base file; the embedder is the
shipped deterministic double (these are the report and the exit status, not retrieval)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "ingest_lost"


def admit(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("ADMIT_KB", None)
    return subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=REPO,
        check=False,
    )


def test_a_page_with_no_chunk_is_named_and_a_reingest_adds_nothing(tmp_path: Path) -> None:
    pytest.importorskip("sqlite_vec")
    kb = tmp_path / "quill.kb"
    args = ("ingest", str(DATA / "one_empty"), "--kb", str(kb), "--embedder", "fake:16", "--access", "tenant:t")
    first = admit(*args)
    assert first.returncode == 0, first.stderr
    assert "1 page gave no chunk" in first.stderr and "gallery.html" in first.stderr, first.stderr
    again = admit(*args)
    assert again.returncode == 0, again.stderr
    assert "files:   0 added, 0 updated, 4 unchanged" in again.stdout, again.stdout
    rep = json.loads(admit(*args, "--json").stdout)
    assert (rep["sources_added"], rep["sources_unchanged"]) == (0, 4)
    assert [Path(p).name for p in rep["no_chunk"]] == ["gallery.html"]


def test_a_site_where_most_pages_give_nothing_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("sqlite_vec")
    kb = tmp_path / "quill.kb"
    res = admit("ingest", str(DATA / "mostly_empty"), "--kb", str(kb), "--embedder", "fake:16", "--access", "tenant:t")
    assert res.returncode == 1, (res.stdout, res.stderr)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: 3 of 4 pages under {DATA / 'mostly_empty'} gave no chunk: their text was not found, "
        "nothing of them is stored."
    ], res.stderr
    assert "Traceback" not in res.stderr
