"""The request inspector: ``admit inspect`` and ``/inspect``, read in a real headless Chromium.

The browser is Debian's ``chromium`` (``apt-get install chromium``) driven by Playwright; Playwright's own
browser download is never used. Without chromium the browser tests skip with the reason, except where
``ADMIT_REQUIRE_BROWSER=1`` (``.ci/run``), where they fail. The page of the README's demo request is saved as
a screenshot in the test's temporary folder; with ``ADMIT_INSPECTOR_SCREENSHOT=PATH`` (``.ci/run`` sets
``docs/figures/inspector.png``, shown on ``docs/inspector.md``, kept as CI's artefact) it is written there
instead, so a plain ``pytest`` never rewrites the tracked figure.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration._live import REPO, admit, free_port, serve

pytest.importorskip("sqlite_vec")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.integration

CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
QUESTION = "What does error E4012 mean and how do I fix it?"
GLOBEX_QUESTION = "Who approves quota exceptions for the premium support tier?"
SCREENSHOT_ENV = "ADMIT_INSPECTOR_SCREENSHOT"


def screenshot_path(tmp_path: Path) -> Path:
    """Where the browser test saves its screenshot: ``$ADMIT_INSPECTOR_SCREENSHOT`` (relative to the repository),
    else the test's temporary folder (the tracked ``docs/figures/inspector.png`` is written only when asked)."""
    asked = os.environ.get(SCREENSHOT_ENV, "").strip()
    return (REPO / asked) if asked else tmp_path / "inspector.png"


def _browser_or_skip() -> Any:
    """Playwright's sync API with Debian's chromium, or a skip (a failure under ADMIT_REQUIRE_BROWSER=1)."""
    why = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = 'playwright is not installed: pip install -e ".[test]"'
    if why is None and not CHROMIUM.is_file():
        why = "Debian's chromium is not installed: apt-get install -y chromium (.ci/run does)"
    if why is not None:
        if os.environ.get("ADMIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"ADMIT_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    return sync_playwright


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The README's demo: the sample docs ingested, the demo question searched with pruning, its trace file."""
    tmp = tmp_path_factory.mktemp("inspect")
    kb, trace = tmp / "demo.kb", tmp / "trace.jsonl"
    res = admit(
        "ingest", str(REPO / "examples" / "docs"), "--kb", str(kb), "--registry",
        str(REPO / "examples" / "sources.toml"), "--no-progress",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = admit(
        "search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune", "--trace-file", str(trace)
    )
    assert res.returncode == 0, res.stderr
    record = json.loads(trace.read_text("utf-8").splitlines()[-1])
    return {"kb": kb, "trace": trace, "record": record, "tmp": tmp}


def _page(demo: dict[str, Any], tmp_path: Path, *extra: str) -> str:
    out = tmp_path / "page.html"
    res = admit("inspect", str(demo["trace"]), *extra, "-o", str(out))
    assert res.returncode == 0, res.stderr
    return out.read_text("utf-8")


def test_the_page_holds_every_candidate_and_nothing_from_the_network(demo: dict[str, Any], tmp_path: Path) -> None:
    rec = demo["record"]
    page = _page(demo, tmp_path, "--id", rec["request_id"])
    for d in rec["decisions"]:
        assert f">{d['id']}<" in page, d["id"]
    assert QUESTION in page and rec["route"]["cue"] in page
    for passage in rec["accepted_chunk_ids"]:
        assert f"id=&quot;{passage}&quot;" in page  # its envelope, as the model sees it
    for ref in ("src=", 'href="http', "<link", "@import", "url("):
        assert ref not in page, ref  # self-contained: no asset from anywhere
    assert "default-src 'none'" in page


def test_trace_text_is_escaped(demo: dict[str, Any], tmp_path: Path) -> None:
    rec = json.loads(json.dumps(demo["record"]))
    cand = rec["request"]["candidates"][0]
    cand["title"] = "<script>alert(1)</script>"
    rec["request"]["question"] = "<img src=x onerror=alert(2)>"
    evil = tmp_path / "evil.jsonl"
    evil.write_text(json.dumps(rec) + "\n", "utf-8")
    out = tmp_path / "evil.html"
    res = admit("inspect", str(evil), "-o", str(out))
    assert res.returncode == 0, res.stderr
    page = out.read_text("utf-8")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x" not in page


def test_bad_inputs_are_one_line_and_exit_2(demo: dict[str, Any], tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", "utf-8")
    for args in (
        (str(demo["trace"]), "--id", "no-such-request"),
        (str(tmp_path / "missing.jsonl"),),
        (str(empty),),
    ):
        res = admit("inspect", *args, "-o", str(tmp_path / "x.html"))
        assert res.returncode == 2, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("error: "), res.stderr


def test_the_page_in_chromium_shows_filters_and_sorts_every_candidate(demo: dict[str, Any], tmp_path: Path) -> None:
    shot = screenshot_path(tmp_path)
    sync_playwright = _browser_or_skip()
    rec = demo["record"]
    page_file = tmp_path / "page.html"
    page_file.write_text(_page(demo, tmp_path), "utf-8")
    fates = {d["id"]: d["state"] for d in rec["decisions"]}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))
            page.goto(page_file.as_uri())
            rows = page.locator("tr.cand:visible")
            ids = rows.locator("td.id").all_text_contents()
            assert ids == rec["candidate_ids"], "every candidate, in rank order"
            assert set(ids) == set(fates)
            assert [f.strip() for f in rows.locator("td.fate").all_text_contents()] == [fates[i] for i in ids]
            page.screenshot(path=str(shot), full_page=False)

            page.check("input[value=dropped]")
            dropped = rows.locator("td.id").all_text_contents()
            assert dropped and set(dropped) == {i for i, f in fates.items() if f == "dropped"}
            assert page.locator(".shown").first.text_content() == f"{len(dropped)} of {len(ids)} shown"

            page.check("input[value=admitted]")
            assert set(rows.locator("td.id").all_text_contents()) == set(rec["accepted_chunk_ids"])

            page.check("input[value=all]")
            page.select_option("select.sort", "score")
            scores = [float(s) for s in rows.evaluate_all("rs => rs.map(r => r.dataset.score)")]
            assert scores == sorted(scores, reverse=True) and len(scores) == len(ids)
            page.select_option("select.sort", "fate")
            by_fate = [f.strip() for f in rows.locator("td.fate").all_text_contents()]
            assert by_fate == sorted(by_fate), "admitted first, then dropped"
            assert all(u.startswith("file://") for u in requested), requested
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000


@pytest.fixture(scope="module")
def server(demo: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``admit serve`` on the demo knowledge base with one key for acme and one for globex."""
    config = demo["tmp"] / "admit.toml"
    config.write_text(
        '[service]\nreranker = "bm25"\n\n'
        '[service.keys.acme]\nkey_env = "INSPECT_KEY_ACME"\ntenant = "acme"\n\n'
        '[service.keys.globex]\nkey_env = "INSPECT_KEY_GLOBEX"\ntenant = "globex"\n',
        "utf-8",
    )
    keys = {"INSPECT_KEY_ACME": "acme-key-0123456789", "INSPECT_KEY_GLOBEX": "globex-key-0123456789"}
    with serve(["--kb", str(demo["kb"]), "--config", str(config)], port=free_port(), extra_env=keys) as url:
        yield {"url": url, "acme": keys["INSPECT_KEY_ACME"], "globex": keys["INSPECT_KEY_GLOBEX"]}


def test_inspect_serves_each_tenant_only_its_own_requests(server: dict[str, Any]) -> None:
    url = server["url"]
    searched = {}
    for tenant, question in (("acme", QUESTION), ("globex", GLOBEX_QUESTION)):
        r = httpx.post(
            f"{url}/v1/search", json={"question": question}, headers={"X-API-Key": server[tenant]}, timeout=300
        )
        assert r.status_code == 200, r.text
        searched[tenant] = r.json()
    assert httpx.get(f"{url}/inspect", timeout=60).status_code == 401
    assert httpx.get(f"{url}/inspect", headers={"X-API-Key": "wrong"}, timeout=60).status_code == 401
    acme = httpx.get(f"{url}/inspect", headers={"X-API-Key": server["acme"]}, timeout=60)
    globex = httpx.get(f"{url}/inspect", headers={"X-API-Key": server["globex"]}, timeout=60)
    assert acme.status_code == globex.status_code == 200
    assert acme.headers["content-type"].startswith("text/html")
    assert QUESTION in acme.text and GLOBEX_QUESTION not in acme.text
    assert GLOBEX_QUESTION in globex.text and QUESTION not in globex.text
    for cid in searched["acme"]["citations"]:
        assert f">{cid}<" in acme.text
    rid = searched["acme"]["trace"]["request_id"]
    one = httpx.get(f"{url}/inspect", params={"id": rid}, headers={"X-API-Key": server["acme"]}, timeout=60)
    assert f'data-request-id="{rid}"' in one.text
    other = httpx.get(f"{url}/inspect", params={"id": rid}, headers={"X-API-Key": server["globex"]}, timeout=60)
    assert f'data-request-id="{rid}"' not in other.text  # another tenant's id shows nothing


def test_the_served_page_in_chromium(server: dict[str, Any]) -> None:
    sync_playwright = _browser_or_skip()
    r = httpx.post(
        f"{server['url']}/v1/search", json={"question": QUESTION, "prune": True},
        headers={"X-API-Key": server["acme"]}, timeout=300,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    rid, count = r.json()["trace"]["request_id"], r.json()["trace"]["candidate_count"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            context = browser.new_context(extra_http_headers={"X-API-Key": server["acme"]})
            page = context.new_page()
            page.goto(f"{server['url']}/inspect?id={rid}")
            # newest first; a search's request id is its question's hash, so an earlier ask of it is below
            newest = page.locator("section.request").first
            assert newest.locator("tr.cand:visible").count() == count
            newest.locator("input[value=admitted]").check()
            shown = newest.locator("tr.cand:visible td.id").all_text_contents()
            assert set(shown) == set(r.json()["citations"])
        finally:
            browser.close()
