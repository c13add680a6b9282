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
=========  ===================  ==========================================================================

The questions are ``bench/docsites/questions.jsonl``: ``answers`` are strings from the pages, any one of which
admitted means the question's answer was admitted (``"all": true``: every one, across the admitted chunks);
``answers: []`` marks a question the docs do not answer (a feature the tool lacks, an integration it does not
have, a question transplanted from another site, a near miss such as a version whose notes the site lacks).

Per site it prints: ingest (pages, chunks, CPU seconds, chunks that are the site rather than the docs), then for
admit's ``setwise`` search (the README's ``admit search --prune``):

- ``answer kept``: answerable questions whose answer string is admitted; beside it, the retriever's own order cut
  at the same number of chunks per question (``retriever@same``) and the 30 candidates (``candidates``);
- ``useful``: admitted chunks that hold part of an answer (answerable questions);
- ``NA on unanswerable`` and ``NA on answerable``: the verdict's ``not_answered`` share on each;
- ``unsure``: the verdict's ``unsure`` share over all questions.

Run: ``python bench/bench_docsites.py`` (``--sites black mkdocs``; ``--json PATH`` for the rows; ``--reingest``).
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
    )
}


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


def adapt_kb(kb: Path, on: bool) -> str:
    """``admit adapt --kb KB`` as a user runs it (its CPU seconds), or the stored adaptation removed (``on`` false:
    the shipped thresholds; a checkout without ``admit adapt`` has none to remove)."""
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


def holds(texts: Sequence[str], answers: Sequence[str], need_all: bool) -> bool:
    low = [t.lower() for t in texts]
    found = [any(a.lower() in t for t in low) for a in answers]
    return all(found) if need_all else any(found)


def ask(kb: Any, principal: Any, q: dict[str, Any]) -> dict[str, Any]:
    """One question: admit's setwise search, and the retriever's order over the same candidates."""
    res = kb.search(q["question"], principal, prune="setwise")
    kept = [f"{p.chunk.title}\n{p.text}" for p in res.admitted]
    wide = kb.search(q["question"], principal, prune=False, input_limit=2_000_000)
    rank = {d.chunk_id: (d.score if d.score is not None else 0.0) for d in wide.decisions}
    order = sorted(wide.admitted, key=lambda p: -rank.get(p.chunk.id, 0.0))
    cands = [f"{p.chunk.title}\n{p.text}" for p in order]
    answers, need_all = q["answers"], bool(q.get("all"))
    row = {
        "id": q["id"],
        "answerable": q["answerable"],
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
    return row


def share(rows: Sequence[dict[str, Any]], test: Any) -> str:
    return f"{sum(1 for r in rows if test(r))}/{len(rows)}" if rows else "-"


def summarise(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    kept = sum(r["kept"] for r in ans)
    return {
        "site": name,
        "questions": f"{len(ans)} + {len(una)}",
        "answer kept": share(ans, lambda r: r["answer_kept"]),
        "retriever@same": share(ans, lambda r: r["retriever_same"]),
        "candidates": share(ans, lambda r: r["in_candidates"]),
        "useful": f"{sum(r['useful'] for r in ans)}/{kept}",
        "kept/q": f"{kept / max(len(ans), 1):.1f}",
        "NA on unanswerable": share(una, lambda r: r["state"] == "not_answered"),
        "NA on answerable": share(ans, lambda r: r["state"] == "not_answered"),
        "unsure": share(rows, lambda r: r["state"] == "unsure"),
    }


def table(lines: Sequence[dict[str, str]]) -> str:
    cols = list(lines[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(str(line[c]) for c in cols) + " |" for line in lines]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", nargs="*", default=list(SITES), choices=list(SITES))
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "admit-docsites"
    ap.add_argument("--cache", type=Path, default=cache, help="where the packages, sites and knowledge bases are kept")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--reingest", action="store_true", help="ingest again even when the knowledge base exists")
    ap.add_argument("--json", type=Path, default=None, help="write every question's row here")
    ap.add_argument("--verbose", action="store_true", help="print every question's row")
    ap.add_argument("--ingest-only", action="store_true", help="ingest the sites, ask nothing")
    ap.add_argument(
        "--adapt", action="store_true", help="run `admit adapt` on each site after ingest (else: shipped thresholds)"
    )
    args = ap.parse_args(argv)

    from admit.kb import KnowledgeBase
    from admit.kb.knowledge_base import parse_principal

    questions = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines() if line.strip()]
    principal = parse_principal(f"tenant:{TENANT}")
    ingests, summaries, all_rows = [], [], []
    for name in args.sites:
        site = SITES[name]
        folder = site_dir(site, args.cache)
        kb_path = args.cache / "kb" / f"{name}.kb"
        kb_path.parent.mkdir(parents=True, exist_ok=True)
        rep = ingest(folder, kb_path, args.reingest)
        pages = sum(1 for f in folder.rglob("*") if f.suffix in {".html", ".htm"})
        hy = hygiene(kb_path)
        adapt_cpu = adapt_kb(kb_path, args.adapt) if not args.ingest_only else "-"
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
        kb = KnowledgeBase(kb_path)
        try:
            rows = [ask(kb, principal, q) for q in questions if q["site"] == name]
        finally:
            kb.close()
        for r in rows:
            r["site"] = name
            if args.verbose:
                print(json.dumps(r), file=sys.stderr)
        all_rows += rows
        summaries.append(summarise(name, rows))
    if len(summaries) > 1:
        summaries.append(summarise("all", all_rows))
    print("ingest (chunks that are the site, not the docs, by kind):")
    print(table(ingests))
    print()
    if summaries:
        print("questions (setwise search, default policy):")
        print(table(summaries))
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in all_rows), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
