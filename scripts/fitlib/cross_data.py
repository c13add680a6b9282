"""The cross-encoder fit's lists: labelled lists with their chosen passages, hard negatives and heading lists."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from admit.backends.rerankers.cross import chunk_passage
from admit.passages import question_text
from fitlib.curves import r_at, topn_curve
from fitlib.data import Record, labels, read_folder

__all__ = ["EXCLUDE", "ListSpec", "List_", "list_bm25", "load_lists", "make_list", "topn_r68"]

EXCLUDE = ("docs_policyqa", "docs2_evidence_inference")
"""Research-use training files: never fitted on, scored as families the model never saw."""


@dataclass
class List_:
    """One labelled list: its question, chosen passages, labels, BM25 feature and state-cache rows."""

    qid: str
    dataset: str
    question: str
    passages: list[str]
    y: np.ndarray
    bm: np.ndarray = field(default_factory=lambda: np.zeros(0))
    qrow: int = -1
    prows: list[int] = field(default_factory=list)


def make_list(name: str, r: Record, negatives: int | None) -> List_:
    q = question_text(r["question"])
    ps = [chunk_passage(q, c.get("title") or "", c.get("text") or "") for c in r["candidates"]]
    return _subsample(List_(r["id"], name, q, ps, labels(r)), negatives)


def _subsample(lst: List_, negatives: int | None) -> List_:
    """The list's BM25 feature over all its passages (as at inference), then its hard negatives only."""
    bm = list_bm25(lst.question, lst.passages)
    lst.bm = bm
    if negatives is not None and lst.y.sum() > 0:
        neg = [i for i in np.argsort(-bm, kind="stable") if lst.y[i] == 0][:negatives]
        keep = sorted([i for i in range(len(lst.passages)) if lst.y[i] > 0] + [int(i) for i in neg])
        lst.passages, lst.y, lst.bm = [lst.passages[i] for i in keep], lst.y[keep], bm[keep]
    return lst


def heading_split(text: str) -> tuple[str, str] | None:
    """(first line, the rest) when a chunk opens with a short heading line and goes on for 20+ words."""
    lines = [ln.strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    if len(lines) < 2:
        return None
    head, rest = lines[0], "\n".join(lines[1:])
    words = head.split()
    if not 1 <= len(words) <= 12 or head.endswith(".") or len(rest.split()) < 20:
        return None
    return head, rest


def self_supervised(name: str, rows: Sequence[Record], negatives: int, rng: random.Random) -> list[List_]:
    """Heading lists from one training file: a section's heading path (page title > heading) as the question,
    the section's text without its heading as the positive, its sibling sections (same page) as negatives."""
    pages: dict[str, dict[str, str]] = {}
    for r in rows:
        for c in r["candidates"]:
            pages.setdefault(c.get("title") or "", {})[c.get("source_id") or c["id"]] = c.get("text") or ""
    out: list[List_] = []
    for title, chunks in sorted(pages.items()):
        parts = [hs for hs in (heading_split(t) for _, t in sorted(chunks.items())) if hs]
        heads = [h for h, _ in parts]
        parts = [(h, r) for h, r in parts if heads.count(h) == 1]
        if len(parts) < 3 or not title:
            continue
        for i in rng.sample(range(len(parts)), min(6, len(parts))):
            q = f"{title} > {parts[i][0]}"
            ps = [chunk_passage(q, title, rest) for _, rest in parts]
            y = np.array([1.0 if j == i else 0.0 for j in range(len(parts))])
            out.append(_subsample(List_(f"ss:{title}:{i}", f"ss_{name}", q, ps, y), negatives))
    return out


def list_bm25(question: str, ps: Sequence[str]) -> np.ndarray:
    """BM25 of the question over the list's chosen passages, divided by the list's best (0 when none match):
    the joint head's lexical feature, computed the same way by ``CrossEncoder.score``."""
    from admit.backends.rerankers.cross import list_bm25 as f

    return np.asarray(f(question, ps), dtype=np.float32)


@dataclass(frozen=True, kw_only=True)
class ListSpec:
    """Which lists a cross fit reads: the same values draw the same seeded samples."""

    train: str
    valid: str
    per_file: int
    negatives: int
    test_sample: int
    exclude: str
    seed: int
    self_supervised: bool
    ss_per_file: int

    @classmethod
    def of(cls, args: object, **given: Any) -> ListSpec:
        """The spec of a script's arguments (fields of the same names), ``given`` ones set."""
        return cls(**{f.name: given[f.name] if f.name in given else getattr(args, f.name) for f in fields(cls)})


def load_lists(spec: ListSpec) -> tuple[list[List_], dict[str, list[List_]]]:
    """Training lists (a seeded sample per file, hard negatives only) and the lists scored out of sample."""
    rng = random.Random(spec.seed)
    train_files = read_folder(Path(spec.train))
    valid_files = read_folder(Path(spec.valid))
    exclude = set(spec.exclude.split(",")) if spec.exclude else set()
    train: list[List_] = []
    evals: dict[str, list[List_]] = {}
    for name, rows in sorted(train_files.items()):
        rows = [r for r in rows if r.get("required")]
        if name in exclude:
            pick = rng.sample(rows, min(len(rows), spec.test_sample))
            evals[f"{name} (never fitted on)"] = [make_list(name, r, None) for r in pick]
            continue
        pick = rng.sample(rows, min(len(rows), spec.per_file)) if spec.per_file else rows
        train.extend(make_list(name, r, spec.negatives) for r in pick)
        if spec.self_supervised and name.startswith("docs"):
            ss = self_supervised(name, rows, spec.negatives, rng)
            train.extend(rng.sample(ss, min(len(ss), spec.ss_per_file)))
    for name, rows in sorted(valid_files.items()):
        evals[name] = [make_list(name, r, None) for r in rows if r.get("required")]
    return train, evals


def topn_r68(lists: Sequence[List_], scores: Sequence[np.ndarray]) -> float:
    """Retained recall at 68% chunk compression for top-N by the scores, interpolated over N."""
    return r_at(topn_curve([lst.y for lst in lists], scores))
