"""Issue 19 item 12 through the real ``admit`` command (real MiniLM, the sqlite store): a changelog section whose
version is only in its title wins "What changed in 3.2.0?", and the per-source cap runs after pruning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_cli_first_contact import admit

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHANGELOG = """# Changelog

## 3.2.0

- Added: bulk export of audit logs to CSV.
- Changed: sessions now expire after 30 minutes of inactivity.

## 3.1.0

- Changed: the export job was rewritten and changed its output format; it prepares the 3.2 line.
- Changed: 2 deprecated flags were removed, 0 remain; see the 3.0 upgrade notes.

## 3.0.0

- Changed: the configuration moved to environment variables.
"""

GUIDE = """# User guide

Start the service with `svc start` and open the web console on port 8080.

## Exports

Exports write the selected records to a file. Audit logs can be exported by administrators.
"""


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sqlite_vec")
    pytest.importorskip("sentence_transformers")
    root = tmp_path_factory.mktemp("versions")
    (root / "docs").mkdir()
    (root / "docs" / "changelog.md").write_text(CHANGELOG)
    (root / "docs" / "guide.md").write_text(GUIDE)
    path = root / "v.kb"
    res = admit("ingest", str(root / "docs"), "--kb", str(path), "--access", "tenant:t")
    assert res.returncode == 0, res.stderr
    return path


def _search(kb: Path, question: str) -> dict[str, Any]:
    res = admit("search", question, "--kb", str(kb), "--principal", "tenant:t", "--prune", "--json")
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_the_section_titled_with_the_asked_version_ranks_first_and_is_admitted(kb: Path) -> None:
    out = _search(kb, "What changed in 3.2.0?")
    trace = out["trace"]
    assert isinstance(trace, dict)
    ranked = trace["reranked_ids"]
    assert ranked[0] == "changelog#3-2-0", ranked  # before: 3.1.0 first, 3.2.0 third (its words and digits)
    assert "changelog#3-2-0" in [a["id"] for a in out["admitted"]]


def test_a_version_asked_without_patch_names_its_patch_releases(kb: Path) -> None:
    trace = _search(kb, "What changed in 3.0?")["trace"]
    assert isinstance(trace, dict)
    assert trace["reranked_ids"][0] == "changelog#3-0-0"


def test_no_chunk_is_capped_away_while_a_weaker_one_of_its_source_is_admitted(kb: Path) -> None:
    for q in ("What changed in 3.2.0?", "How do I export audit logs?", "What changed recently?"):
        trace = _search(kb, q)["trace"]
        assert isinstance(trace, dict)
        decisions = trace["decisions"]
        admitted = [d for d in decisions if d["state"] == "admitted"]
        for d in decisions:
            if d["reason"] != "source_cap":
                continue
            src = d["id"].split("#")[0]
            same = [a["grade"] for a in admitted if a["id"].split("#")[0] == src and a.get("grade") is not None]
            assert all(d["grade"] is None or d["grade"] <= g for g in same), (q, d, same)
