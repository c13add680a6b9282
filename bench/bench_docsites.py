"""Real documentation sites, end to end: ingest a built site as a user would, ask it questions written from its
pages before any run (some the docs do not answer), and score what admit admits and what it says.

The sites are Debian's documentation packages (their licences allow it), fetched with ``apt-get download`` into
``--cache`` and unpacked with ``dpkg-deb`` (nothing else is reached):

=========  ===================  ==========================================================================
site       generator            package, folder
=========  ===================  ==========================================================================
black      Sphinx (Alabaster)   ``python-black-doc``: ``usr/share/doc/python-black-doc/html`` (32 pages)
mkdocs     MkDocs               ``mkdocs-doc``: ``usr/share/doc/mkdocs/html`` (23 pages)
git        AsciiDoc             ``git-doc``: 44 of its pages (:data:`GIT_PAGES`) with their ``.txt`` sources
structlog  Sphinx (Furo)        ``python-structlog-doc``: its 23 top-level pages (:data:`STRUCTLOG_PAGES`)
gbp        DocBook (GTK-Doc)    ``git-buildpackage``: ``usr/share/doc/git-buildpackage/manual-html`` (48 pages)
gettext    Texinfo (texi2html)  ``gettext-doc``: 27 pages of its manual (:data:`GETTEXT_PAGES`)
psycopg    Sphinx (Furo)        ``python-psycopg-doc``: ``usr/share/doc/python-psycopg-doc/html`` (42 pages)
ntpsec     AsciiDoc             ``ntpsec-doc``: ``usr/share/doc/ntpsec-doc/html`` (87 pages)
drf        MkDocs               ``python-djangorestframework-doc``: its ``html`` folder (73 pages)
click      Sphinx (Pallets)     ``python-click-doc``: ``usr/share/doc/python-click-doc/html`` (27 pages)
=========  ===================  ==========================================================================

The last three are the held-out sites: their questions are ``bench/docsites/holdout.jsonl`` (``--questions
bench/docsites/holdout.jsonl``), written from their pages before any run, for a check that tuning on the first six
does not see. Without ``--sites``, the sites asked are those the questions file names. ``click`` is a fresh check
(``--questions bench/docsites/fresh_click.jsonl``): its 14 answerable and 4 unanswerable questions were written from
memory of Click 8.1 at 23:51 UTC on 2026-12-07, before the package was downloaded or any page read (issue 46, branch
``recall``).

The questions are ``bench/docsites/questions.jsonl``: ``answers`` are strings from the pages, any one of which
admitted means the question's answer was admitted (``"all": true``: every one, across the admitted chunks);
``answers: []`` marks a question the docs do not answer; its ``kind`` says why: ``unanswerable-feature`` (a
feature the tool lacks), ``unanswerable-integration`` (an integration it does not have), ``transplant`` (another
product's question), ``near-miss`` (words the docs use in another sense; ``near-miss-version``: a release whose
notes the site lacks). Answer strings are matched case-insensitively with runs of white space (a no-break space
included) read as one space.

Per site it prints: ingest (pages, chunks, CPU seconds, chunks that are the site rather than the docs), then for
admit's ``setwise`` search (the README's ``admit search --prune``):

- ``answer kept``: answerable questions whose answer string is admitted; beside it, the retriever's own order cut
  at the same number of chunks per question (``retriever@same``), the issue's target for it (``target``: at least
  90% and at least ``retriever@same`` plus 5 points, capped at 100%), the retriever's list as a search without a
  pruner keeps it (``candidates``: its first ``rerank_count``, at most ``per_source_limit`` per page), the retrieved
  candidates themselves (``retrieved``: 30, 60 for a list question), those the setwise pruner graded
  (``pruner saw``: not cut by the rerank stage or dropped as a copy; the per-source cap comes after the pruner)
  and the whole knowledge base (``in kb``: the set's ceiling);
- ``useful``: admitted chunks that hold part of an answer (answerable questions);
- ``NA on unanswerable`` and ``NA on answerable``: the verdict's ``not_answered`` share on each;
- ``unsure``: the verdict's ``unsure`` share over all questions;
- per site and in total; then each figure against the issue's target (:data:`TARGETS`), and the verdicts on the
  unanswerable questions by kind.

Run: ``python bench/bench_docsites.py`` (``--sites black mkdocs``; ``--json PATH`` for every question's row,
``--summary-json PATH`` for the per-site and total rows; ``--rows FILE...`` scores earlier rows; ``--reingest``;
``--keep-adaptation`` asks with the adaptation each knowledge base holds, neither re-run nor removed: two checkouts
compared on the same thresholds).
``--adapt`` runs ``admit adapt --kb`` on each site after its ingest (the knowledge base's own answerability
thresholds, fitted without labels) and asks with it; without it, a stored adaptation is removed first, so the
figures are the shipped thresholds'. The ingest table then gives the adaptation's CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "docsites" / "questions.jsonl"
TENANT = "docs"

GIT_PAGES = [
    "git-stash",
    "git-bisect",
    "git-commit",
    "git-switch",
    "git-checkout",
    "gitignore",
    "git-config",
    "git-blame",
    "git-worktree",
    "git-clean",
    "git-rebase",
    "git-reset",
    "git-clone",
    "git-branch",
    "git-restore",
    "git-merge",
    "git-tag",
    "git-cherry-pick",
    "gitcredentials",
    "git-credential-cache",
    "git-revert",
    "git-log",
    "git-diff",
    "git-push",
    "git-pull",
    "git-fetch",
    "git-remote",
    "git-add",
    "git-rm",
    "git-mv",
    "git-status",
    "git-show",
    "git-grep",
    "git-init",
    "gittutorial",
    "giteveryday",
    "gitglossary",
    "git-request-pull",
    "git-submodule",
    "git-archive",
    "git-gc",
    "git-fast-import",
    "git-credential-store",
    "user-manual",
]
"""The git-doc pages of the ``git`` site (the whole package is 206 pages of 9 MB: the subset keeps a run short)."""

STRUCTLOG_PAGES = [
    "404",
    "api",
    "bound-loggers",
    "configuration",
    "console-output",
    "contextvars",
    "frameworks",
    "genindex",
    "getting-started",
    "index",
    "license",
    "logging-best-practices",
    "performance",
    "processors",
    "py-modindex",
    "recipes",
    "search",
    "standard-library",
    "testing",
    "thread-local",
    "twisted",
    "typing",
    "why",
]
"""The ``structlog`` site's pages: every top-level page; not ``_modules`` (the package's source as HTML, 796 kB)."""

GETTEXT_PAGES = [
    *(f"gettext_{i}" for i in (1, 2, 3, 4, 5, 6, 7, 10, 12, 13, 14)),
    "gettext_toc",
    "FAQ",
    "tutorial",
    *(
        f"{tool}.1"
        for tool in (
            "xgettext",
            "msginit",
            "msgmerge",
            "msgfmt",
            "msgunfmt",
            "msgcat",
            "msgattrib",
            "msggrep",
            "msgconv",
            "msguniq",
            "envsubst",
            "gettext",
            "ngettext",
        )
    ),
]
"""The ``gettext`` site's pages: 11 of the manual's 30 chapter pages (not the long catalogue of other languages,
the licences and the indexes), its FAQ, its tutorial and 13 of its programs' manual pages."""


@dataclass(frozen=True)
class Site:
    name: str
    generator: str
    package: str
    folder: str
    pages: tuple[str, ...] = ()
    """Only these page stems (with their ``.html`` and ``.txt``), when given."""


SITES = {
    s.name: s
    for s in (
        Site("black", "Sphinx", "python-black-doc", "usr/share/doc/python-black-doc/html"),
        Site("mkdocs", "MkDocs", "mkdocs-doc", "usr/share/doc/mkdocs/html"),
        Site("git", "AsciiDoc", "git-doc", "usr/share/doc/git-doc", tuple(GIT_PAGES)),
        Site(
            "structlog",
            "Sphinx (Furo)",
            "python-structlog-doc",
            "usr/share/doc/python-structlog-doc/html",
            tuple(STRUCTLOG_PAGES),
        ),
        Site("gbp", "DocBook", "git-buildpackage", "usr/share/doc/git-buildpackage/manual-html"),
        Site("gettext", "Texinfo", "gettext-doc", "usr/share/doc/gettext", tuple(GETTEXT_PAGES)),
        Site("psycopg", "Sphinx (Furo)", "python-psycopg-doc", "usr/share/doc/python-psycopg-doc/html"),
        Site("ntpsec", "AsciiDoc", "ntpsec-doc", "usr/share/doc/ntpsec-doc/html"),
        Site("drf", "MkDocs", "python-djangorestframework-doc", "usr/share/doc/python3-djangorestframework/html"),
        Site("click", "Sphinx (Pallets)", "python-click-doc", "usr/share/doc/python-click-doc/html"),
    )
}


def sites_of(questions: Sequence[dict[str, Any]]) -> list[str]:
    """The sites a questions file names, in :data:`SITES` order (the default ``--sites``)."""
    return [n for n in SITES if any(q["site"] == n for q in questions)]


def site_dir(site: Site, cache: Path) -> Path:
    """The site's folder under ``cache``, fetched and unpacked on first use."""
    out = cache / "sites" / site.name
    if out.is_dir():
        return out
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not list(debs.glob(f"{site.package}_*.deb")):
        subprocess.run(["apt-get", "download", "-qq", site.package], cwd=debs, check=True)
    deb = sorted(debs.glob(f"{site.package}_*.deb"))[-1]
    root = cache / "unpacked" / site.package
    if not root.is_dir():
        root.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    src = root / site.folder
    if site.pages:
        out.mkdir(parents=True)
        for stem in site.pages:
            for f in src.glob(f"{stem}.*"):
                if f.suffix in {".html", ".txt"}:
                    shutil.copy2(f, out / f.name)
        for css in src.glob("*.css"):
            shutil.copy2(css, out / css.name)
    else:
        shutil.copytree(src, out, ignore_dangling_symlinks=True)  # Debian links its JS to other packages
    return out


def ingest(folder: Path, kb: Path, reingest: bool) -> dict[str, Any]:
    """``admit ingest FOLDER`` as a user runs it; its report, with the CPU seconds it took."""
    report = kb.with_suffix(".report.json")
    if kb.exists() and report.exists() and not reingest:
        return dict(json.loads(report.read_text("utf-8")))
    for p in (kb, report):
        p.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "admit.cli", "ingest", str(folder), "--kb", str(kb), "--access", f"tenant:{TENANT}"]
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ingest of {folder} failed:\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rep = json.loads(done.stdout)
    rep["cpu_s"] = round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1)
    rep["wall_s"] = round(time.perf_counter() - t0, 1)
    report.write_text(json.dumps(rep), "utf-8")
    return dict(rep)


SITE_NOT_DOCS = {
    "source copy": lambda r: "_sources/" in r["source_id"] or r["source_id"].endswith((".rst.txt", ".md.txt")),
    "permalink sign": lambda r: "¶" in r["title"] or "¶" in r["text"] or "\uf0c1" in r["title"],
    "site suffix in title": lambda r: " documentation" in r["title"].lower() or r["title"].endswith(" - MkDocs"),
    "navigation": lambda r: any(
        s in r["text"] for s in ("Quick search", "Related Topics", "Prev | Up", "Next »", "« Previous")
    ),
}


def adapt_kb(kb: Path, on: bool | None) -> str:
    """``admit adapt --kb KB`` as a user runs it (its CPU seconds), or the stored adaptation removed (``on`` false:
    the shipped thresholds; a checkout without ``admit adapt`` has none to remove); ``None``: the stored
    adaptation as it is (``--keep-adaptation``: two checkouts asked with the same thresholds)."""
    if on is None:
        return "kept"
    if not on:
        from admit.kb import KnowledgeBase

        k = KnowledgeBase(kb)
        try:
            if hasattr(k, "clear_adaptation"):
                k.clear_adaptation()
        finally:
            k.close()
        return "-"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "admit.cli", "adapt", "--kb", str(kb), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"admit adapt of {kb} failed:\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    ad = json.loads(done.stdout)
    print(f"{kb.name}: adapted {json.dumps(ad['thresholds'])}", file=sys.stderr)
    return str(round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1))


def hygiene(kb_path: Path) -> dict[str, int]:
    """Chunks that are the site rather than the docs, by kind (read straight from the store)."""
    import sqlean  # type: ignore[import-untyped]

    con = sqlean.connect(str(kb_path))
    cols = {row[1] for row in con.execute("PRAGMA table_info(chunks)")}
    sid = "source_id" if "source_id" in cols else "source"
    rows = [
        {"source_id": s or "", "title": t or "", "text": x or ""}
        for s, t, x in con.execute(f"SELECT {sid}, title, text FROM chunks")
    ]
    con.close()
    out = {"chunks": len(rows)}
    for kind, test in SITE_NOT_DOCS.items():
        out[kind] = sum(1 for r in rows if test(r))
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def holds(texts: Sequence[str], answers: Sequence[str], need_all: bool) -> bool:
    low = [_norm(t) for t in texts]
    found = [any(_norm(a) in t for t in low) for a in answers]
    return all(found) if need_all else any(found)


def kb_texts(kb_path: Path) -> list[str]:
    """Every chunk's title and text, as the scorer reads an admitted chunk."""
    import sqlean

    con = sqlean.connect(str(kb_path))
    try:
        return [f"{t or ''}\n{x or ''}" for t, x in con.execute("SELECT title, text FROM chunks")]
    finally:
        con.close()


def ask(kb: Any, principal: Any, q: dict[str, Any], everything: Sequence[str] = ()) -> dict[str, Any]:
    """One question: admit's setwise search, and the retriever's order over the same candidates."""
    res = kb.search(q["question"], principal, prune="setwise")
    kept = [f"{p.chunk.title}\n{p.text}" for p in res.admitted]
    # the retrieved candidates (the same search's k) and those the pruner graded: not cut by the rerank stage nor
    # dropped as a copy before it (the per-source cap runs after the pruner)
    retrieved = {
        h.record.id: f"{h.record.title}\n{h.record.text}"
        for h in kb.hits(q["question"], principal, k=int(res.trace.get("retrieval", {}).get("k", 30)))
    }
    before_prune = {"rerank", "validate", "authorize"}
    copies = {"duplicate", "superseded", "acl", "invalid"}
    graded = [
        retrieved[d.chunk_id]
        for d in res.decisions
        if d.chunk_id in retrieved and d.stage not in before_prune and d.reason not in copies
    ]
    wide = kb.search(q["question"], principal, prune=False, input_limit=2_000_000)
    rank = {d.chunk_id: (d.score if d.score is not None else 0.0) for d in wide.decisions}
    order = sorted(wide.admitted, key=lambda p: -rank.get(p.chunk.id, 0.0))
    cands = [f"{p.chunk.title}\n{p.text}" for p in order]
    answers, need_all = q["answers"], bool(q.get("all"))
    row = {
        "id": q["id"],
        "answerable": q["answerable"],
        "kind": q.get("kind"),
        "state": res.answer_state,
        "p": res.answerability,
        "kept": len(kept),
        "candidates": len(wide.decisions),
        "query_class": res.trace.get("route", {}).get("query_class"),
    }
    if answers:
        row["answer_kept"] = holds(kept, answers, need_all)
        row["useful"] = sum(1 for t in kept if holds([t], answers, False))
        row["retriever_same"] = holds(cands[: max(len(kept), 1)], answers, need_all)
        row["in_candidates"] = holds(cands, answers, need_all)
        row["in_retrieved"] = holds(list(retrieved.values()), answers, need_all)
        row["pruner_saw"] = holds(graded, answers, need_all)
        if everything:
            row["in_kb"] = holds(everything, answers, need_all)
    return row


TARGETS = {
    "answer kept": ">= 90% and >= retriever@same + 5 points",
    "NA on unanswerable": ">= 80%",
    "NA on answerable": "<= 5%",
    "unsure": "<= 20%",
    "useful": ">= 50%",
}
"""Issue 46's targets for every site (its "Done when", first bullet)."""


def figures(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One site's (or all sites') counts, as numbers: the ``--summary-json`` row."""
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    n_ans = len(ans)
    ret = sum(1 for r in ans if r["retriever_same"])
    out: dict[str, Any] = {
        "site": name,
        "answerable": n_ans,
        "unanswerable": len(una),
        "answer_kept": sum(1 for r in ans if r["answer_kept"]),
        "retriever_same": ret,
        "answer_target": min(n_ans, max(0.9 * n_ans, ret + 0.05 * n_ans)),
        "candidates": sum(1 for r in ans if r["in_candidates"]),
        "retrieved": sum(1 for r in ans if r.get("in_retrieved")),
        "pruner_saw": sum(1 for r in ans if r.get("pruner_saw")),
        "in_kb": sum(1 for r in ans if r.get("in_kb")),
        "useful": sum(r["useful"] for r in ans),
        "kept": sum(r["kept"] for r in ans),
        "na_unanswerable": sum(1 for r in una if r["state"] == "not_answered"),
        "na_answerable": sum(1 for r in ans if r["state"] == "not_answered"),
        "unsure": sum(1 for r in rows if r["state"] == "unsure"),
        "questions": len(rows),
    }
    out["met"] = {
        "answer kept": out["answer_kept"] >= out["answer_target"] - 1e-9,
        "NA on unanswerable": out["na_unanswerable"] >= 0.8 * len(una),
        "NA on answerable": out["na_answerable"] <= 0.05 * n_ans,
        "unsure": out["unsure"] <= 0.2 * len(rows),
        "useful": out["useful"] >= 0.5 * out["kept"],
    }
    return out


def _of(n: float, d: float) -> str:
    return f"{n:g}/{d:g} ({100 * n / d:.0f}%)" if d else "-"


def summarise(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """One printed row (counts and shares) for a site or for all sites."""
    f = figures(name, rows)
    a = f["answerable"]
    return {
        "site": name,
        "questions": f"{a} + {f['unanswerable']}",
        "answer kept": _of(f["answer_kept"], a),
        "retriever@same": _of(f["retriever_same"], a),
        "target": f"{100 * f['answer_target'] / a:.0f}%" if a else "-",
        "candidates": _of(f["candidates"], a),
        "retrieved": _of(f["retrieved"], a),
        "pruner saw": _of(f["pruner_saw"], a),
        "in kb": _of(f["in_kb"], a),
        "useful": _of(f["useful"], f["kept"]),
        "kept/q": f"{f['kept'] / max(a, 1):.1f}",
        "NA on unanswerable": _of(f["na_unanswerable"], f["unanswerable"]),
        "NA on answerable": _of(f["na_answerable"], a),
        "unsure": _of(f["unsure"], f["questions"]),
    }


def met_row(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Which of the issue's targets a site (or all sites) meets."""
    met = figures(name, rows)["met"]
    return {"site": name, **{k: "yes" if v else "no" for k, v in met.items()}}


def by_kind(rows: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The verdicts on the unanswerable questions, by why the docs do not answer them."""
    una = [r for r in rows if not r["answerable"]]
    out = []
    for kind in sorted({str(r.get("kind")) for r in una}):
        some = [r for r in una if str(r.get("kind")) == kind]
        out.append(
            {
                "kind": kind,
                "questions": str(len(some)),
                **{
                    state: str(sum(1 for r in some if r["state"] == state))
                    for state in ("not_answered", "unsure", "answered")
                },
            }
        )
    return out


def table(lines: Sequence[dict[str, str]]) -> str:
    cols = list(lines[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(str(line[c]) for c in cols) + " |" for line in lines]
    return "\n".join(out)


def score_rows(paths: Sequence[Path], summary_json: Path | None) -> int:
    """The tables of earlier runs' ``--json`` rows (e.g. of sites asked in separate runs), in site order."""
    rows = [json.loads(line) for p in paths for line in p.read_text("utf-8").splitlines() if line.strip()]
    names = [n for n in SITES if any(r["site"] == n for r in rows)]
    summaries, mets, numbers = [], [], []
    for name in [*names, "all"]:
        some = rows if name == "all" else [r for r in rows if r["site"] == name]
        summaries.append(summarise(name, some))
        mets.append(met_row(name, some))
        numbers.append({"generator": SITES[name].generator if name in SITES else "all", **figures(name, some)})
    print("questions (from " + ", ".join(str(p) for p in paths) + "):")
    print(table(summaries))
    print()
    print("the issue's targets met (" + "; ".join(f"{k} {v}" for k, v in TARGETS.items()) + "):")
    print(table(mets))
    print()
    print("verdicts on the unanswerable questions, by kind:")
    print(table(by_kind(rows)))
    if summary_json:
        summary_json.write_text(json.dumps(numbers, indent=1) + "\n", "utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", nargs="*", default=None, choices=list(SITES), help="default: those the questions name")
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "admit-docsites"
    ap.add_argument("--cache", type=Path, default=cache, help="where the packages, sites and knowledge bases are kept")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--reingest", action="store_true", help="ingest again even when the knowledge base exists")
    ap.add_argument("--json", type=Path, default=None, help="write every question's row here")
    ap.add_argument("--summary-json", type=Path, default=None, help="write the per-site and total rows here")
    ap.add_argument(
        "--adapt", action="store_true", help="run `admit adapt` on each site after ingest (else: shipped thresholds)"
    )
    ap.add_argument(
        "--keep-adaptation",
        action="store_true",
        help="ask with the adaptation the knowledge base holds (neither re-run nor removed)",
    )
    ap.add_argument("--verbose", action="store_true", help="print every question's row")
    ap.add_argument("--ingest-only", action="store_true", help="ingest the sites, ask nothing")
    ap.add_argument(
        "--rows", type=Path, nargs="+", default=None, help="score the rows of earlier --json files; ask nothing"
    )
    args = ap.parse_args(argv)
    if args.rows:
        return score_rows(args.rows, args.summary_json)

    from admit.kb import KnowledgeBase
    from admit.kb.knowledge_base import parse_principal

    questions = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines() if line.strip()]
    if args.sites is None:
        args.sites = sites_of(questions)
    principal = parse_principal(f"tenant:{TENANT}")
    ingests, summaries, mets, numbers, all_rows = [], [], [], [], []
    for name in args.sites:
        site = SITES[name]
        folder = site_dir(site, args.cache)
        kb_path = args.cache / "kb" / f"{name}.kb"
        kb_path.parent.mkdir(parents=True, exist_ok=True)
        rep = ingest(folder, kb_path, args.reingest)
        pages = sum(1 for f in folder.rglob("*") if f.suffix in {".html", ".htm"})
        hy = hygiene(kb_path)
        adapt_cpu = adapt_kb(kb_path, None if args.keep_adaptation else args.adapt) if not args.ingest_only else "-"
        ingests.append(
            {
                "site": name,
                "generator": site.generator,
                "html pages": str(pages),
                "cpu s": str(rep.get("cpu_s", "?")),
                "adapt cpu s": adapt_cpu,
                **{k: str(v) for k, v in hy.items()},
            }
        )
        if args.ingest_only:
            continue
        everything = kb_texts(kb_path)
        kb = KnowledgeBase(kb_path)
        try:
            rows = [ask(kb, principal, q, everything) for q in questions if q["site"] == name]
        finally:
            kb.close()
        for r in rows:
            r["site"] = name
            if args.verbose:
                print(json.dumps(r), file=sys.stderr)
        all_rows += rows
        summaries.append(summarise(name, rows))
        mets.append(met_row(name, rows))
        numbers.append({"generator": site.generator, **figures(name, rows)})
    if len(summaries) > 1:
        summaries.append(summarise("all", all_rows))
        mets.append(met_row("all", all_rows))
        numbers.append({"generator": "all", **figures("all", all_rows)})
    print("ingest (chunks that are the site, not the docs, by kind):")
    print(table(ingests))
    print()
    if summaries:
        print("questions (setwise search, default policy" + (", adapted" if args.adapt else "") + "):")
        print(table(summaries))
        print()
        print("the issue's targets met (" + "; ".join(f"{k} {v}" for k, v in TARGETS.items()) + "):")
        print(table(mets))
        if any(not r["answerable"] for r in all_rows):
            print()
            print("verdicts on the unanswerable questions, by kind:")
            print(table(by_kind(all_rows)))
    if args.summary_json:
        args.summary_json.write_text(json.dumps(numbers, indent=1) + "\n", "utf-8")
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in all_rows), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
