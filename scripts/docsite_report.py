"""Per-site counts of what ``admit ingest`` would store from a built documentation site (parse + chunk, no
embedding): pages, chunks, chunks per kind of file left out, titles with ``¶`` or a "documentation" suffix.

Usage::

    PYTHONPATH=src python scripts/docsite_report.py /tmp/debdocs/python-black-doc [more folders ...]

With ``admit`` from a tree without :mod:`admit.kb.docsite` (an older main), every file of a supported format is
parsed as that tree's ingest would, and its chunks are counted under the kind the new rules give it (this
tree's ``src/admit/kb/docsite.py`` is loaded by path for that): the "before" column of issue 39.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def _docsite() -> Any:
    try:
        from admit.kb import docsite

        return docsite
    except ImportError:  # an older admit: load this tree's rules by path (they need only admit._linear)
        path = Path(__file__).resolve().parents[1] / "src" / "admit" / "kb" / "docsite.py"
        spec = importlib.util.spec_from_file_location("_docsite_rules", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)
        return mod


CHROME = (
    "Quick search", "Page source", "Related Topics", "Documentation overview", "Previous topic", "Next topic",
    "Edit on GitHub", "Show Source", "Search docs", "Prev |", "| Next", "Table of Contents", "Last updated",
    "Toggle navigation",
)  # fmt: skip
"""Phrases of site chrome (sidebars, navigation rows, footers) whose chunks are counted."""


def report(folder: Path, *, max_tokens: int = 350, questions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Counts for one folder (see the module docstring); with ``questions`` (``bench/docsites/questions.jsonl``
    records of this site), how many answerable ones have an answer string in some stored chunk's text."""
    from admit.backends.tokenizers import resolve_tokenizer
    from admit.kb.chunking import chunk_document
    from admit.kb.ingest import _walk
    from admit.kb.parse import FORMATS, parse_document

    rules = _docsite()
    new = hasattr(__import__("admit.kb.parse", fromlist=["x"]), "PARSER_REVISIONS")
    tok = resolve_tokenizer("cl100k_base")
    site = rules.SiteFilter(())
    pages = chunks = pilcrow_titles = pilcrow_texts = doc_suffix = chrome = 0
    per_kind: Counter[str] = Counter()
    files_per_kind: Counter[str] = Counter()
    versions: Counter[str] = Counter()
    texts: list[str] = []
    for f, root in _walk([folder]):
        rel = f.relative_to(root).as_posix() if root is not None else f.name
        kind = site.kind(f, rel, in_folder=True)
        fmt = FORMATS.get(f.suffix.lower())
        if kind is not None:
            files_per_kind[kind] += 1
            if new or fmt is None:
                continue
        elif fmt is None:
            continue
        try:
            text = f.read_bytes().decode("utf-8-sig")
            doc = parse_document(text, fmt, fallback_title=f.stem.replace("-", " ").replace("_", " "))
        except (OSError, ValueError):
            continue
        page_kind = getattr(doc, "page_kind", None)
        if page_kind is not None and new:
            files_per_kind["redirects" if page_kind == "redirect" else "search_index_pages"] += 1
            continue
        pieces = chunk_document(doc, tokenizer=tok, max_tokens=max_tokens)
        texts.extend(p.text for p in pieces)  # what the store would hold (before: every file's chunks)
        if kind is not None:
            per_kind[kind] += len(pieces)
            continue
        pages += 1
        chunks += len(pieces)
        version = getattr(doc, "site", {}).get("version")
        if version:
            versions[version] += 1
        for p in pieces:
            title = " › ".join((doc.title, *p.headings))
            pilcrow_titles += "¶" in title
            pilcrow_texts += "¶" in p.text
            doc_suffix += doc.title.endswith("documentation")
            chrome += any(c in p.text for c in CHROME)
    out: dict[str, Any] = {}
    if questions is not None:
        answerable = [q for q in questions if q.get("answerable")]
        found = [q["id"] for q in answerable if any(a in t for t in texts for a in q["answers"])]
        out["answer_strings_found"] = f"{len(found)} of {len(answerable)}"
        out["answer_strings_missing"] = sorted({q["id"] for q in answerable} - set(found))
    return {
        **out,
        "folder": str(folder),
        "parser": "this tree (docsite rules)" if new else "without docsite rules (every supported file ingested)",
        "pages": pages,
        "chunks": chunks,
        "chunks_total": chunks + sum(per_kind.values()),
        "chunks_with_chrome_phrases": chrome,
        "files_left_out": dict(files_per_kind),
        "chunks_from_left_out_kinds": dict(per_kind),
        "chunks_titled_with_pilcrow": pilcrow_titles,
        "chunks_with_pilcrow_in_text": pilcrow_texts,
        "chunks_titled_documentation": doc_suffix,
        "pages_with_version": dict(versions),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--max-tokens", type=int, default=350, help="as admit ingest's default (350)")
    ap.add_argument("--questions", type=Path, help="bench/docsites/questions.jsonl: count answer strings found")
    ap.add_argument("--site", action="append", default=[], help="the questions' site of each folder, in order")
    args = ap.parse_args(argv)
    qs = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines()] if args.questions else None
    for i, folder in enumerate(args.folders):
        mine = None
        if qs is not None:
            site = args.site[i] if i < len(args.site) else folder.name
            mine = [q for q in qs if q.get("site") == site]
        print(json.dumps(report(folder, max_tokens=args.max_tokens, questions=mine), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
