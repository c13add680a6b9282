"""Labelled evaluation datasets: the JSONL format of the development set, read and validated.

One JSON object per line::

    {"id": "...", "question": "...", "candidates": [{"id": "c0", "source_id": "...", "title": "...", "text": "..."}],
     "required": ["c1"], "source": "hotpotqa_distractor", "hop_type": "multi_hop", "question_type": "bridge",
     "answers": ["..."], "meta": {...}}

``id``, ``question``, ``candidates`` and ``required`` are needed; ``source`` defaults to the file's stem,
``hop_type`` to ``single_hop``/``multi_hop`` from the number of required chunks, ``question_type`` to
``unknown``. A malformed line raises :class:`~admit.errors.ConfigError` naming the file, the line and the field.

The pruning path only ever sees :meth:`EvalRecord.prune_input` (id, question, candidates): the labels
(``required``, ``answers``) stay with the metrics.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from admit._jsonl import json_line
from admit.errors import ConfigError
from admit.types import Access, Chunk

__all__ = ["EVAL_TENANT", "EvalRecord", "PruneInput", "load_dataset", "load_datasets"]

EVAL_TENANT = "eval"
"""The tenant every evaluation chunk and principal belongs to (evaluation data has no ACLs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneInput:
    """What the pruning path may see of a record: no labels."""

    id: str
    """Record id."""
    question: str
    """The question."""
    candidates: tuple[Chunk, ...]
    """The retrieved candidates, in the file's order."""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict (used to ship work to other processes)."""
        return {
            "id": self.id,
            "question": self.question,
            "candidates": [
                {"id": c.id, "source_id": c.source_id, "title": c.title, "text": c.text} for c in self.candidates
            ],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PruneInput:
        """Inverse of :meth:`to_json`."""
        access = Access(tenant=EVAL_TENANT)
        return cls(
            id=str(d["id"]),
            question=str(d["question"]),
            candidates=tuple(
                Chunk(id=c["id"], source_id=c["source_id"], title=c.get("title", ""), text=c["text"], access=access)
                for c in d["candidates"]
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalRecord:
    """One labelled question."""

    id: str
    """Record id, unique within a run."""
    question: str
    """The question."""
    candidates: tuple[Chunk, ...]
    """The retrieved candidates."""
    required: tuple[str, ...]
    """Ids of the candidates the answer needs (may name ids that are not among the candidates)."""
    source: str
    """Dataset name."""
    hop_type: str
    """``single_hop`` or ``multi_hop``."""
    question_type: str
    """The source dataset's own question type."""
    answers: tuple[str, ...] = ()
    """Gold answers, if any."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Free metadata."""
    file: str = ""
    """The file it came from."""
    line: int = 0
    """Its line number (1-based)."""

    def prune_input(self) -> PruneInput:
        """Return the label-free view the pruning path gets."""
        return PruneInput(id=self.id, question=self.question, candidates=self.candidates)


def _fail(path: str, line: int, fld: str, msg: str) -> ConfigError:
    return ConfigError(f"{path} line {line}: field `{fld}`: {msg}")


def _str(obj: Mapping[str, Any], key: str, path: str, line: int, prefix: str = "", *, required: bool = True) -> str:
    if key not in obj:
        if required:
            raise _fail(path, line, prefix + key, "missing")
        return ""
    v = obj[key]
    if v is None and not required:
        return ""
    if not isinstance(v, str):
        raise _fail(path, line, prefix + key, f"must be a string, got {type(v).__name__}")
    return v


def parse_record(obj: Any, *, path: str = "<data>", line: int = 1, default_source: str = "") -> EvalRecord:
    """Validate one parsed JSON line and return the record.

    Raises:
        ConfigError: naming the file, line and field when something is missing or of the wrong type.
    """
    if not isinstance(obj, dict):
        raise ConfigError(f"{path} line {line}: expected a JSON object, got {type(obj).__name__}.")
    rid = _str(obj, "id", path, line)
    if not rid.strip():
        raise _fail(path, line, "id", "must not be empty")
    question = _str(obj, "question", path, line)
    if not question.strip():
        raise _fail(path, line, "question", "must not be blank")
    cands_raw = obj.get("candidates")
    if cands_raw is None:
        raise _fail(path, line, "candidates", "missing")
    if not isinstance(cands_raw, list):
        raise _fail(path, line, "candidates", f"must be a list, got {type(cands_raw).__name__}")
    access = Access(tenant=EVAL_TENANT)
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for i, c in enumerate(cands_raw):
        pre = f"candidates[{i}]."
        if not isinstance(c, dict):
            raise _fail(path, line, f"candidates[{i}]", f"must be an object, got {type(c).__name__}")
        cid = _str(c, "id", path, line, pre)
        if not cid:
            raise _fail(path, line, pre + "id", "must not be empty")
        if cid in seen:
            raise _fail(path, line, pre + "id", f"duplicate candidate id {cid!r}")
        seen.add(cid)
        text = _str(c, "text", path, line, pre)
        title = _str(c, "title", path, line, pre, required=False)
        source_id = _str(c, "source_id", path, line, pre, required=False) or cid
        chunks.append(Chunk(id=cid, source_id=source_id, title=title, text=text, access=access))
    req_raw = obj.get("required")
    if req_raw is None:
        raise _fail(path, line, "required", "missing")
    if not isinstance(req_raw, list) or not all(isinstance(x, str) for x in req_raw):
        raise _fail(path, line, "required", "must be a list of candidate id strings")
    source = _str(obj, "source", path, line, required=False) or default_source
    hop_type = _str(obj, "hop_type", path, line, required=False) or ("multi_hop" if len(req_raw) > 1 else "single_hop")
    qtype = _str(obj, "question_type", path, line, required=False) or "unknown"
    answers = obj.get("answers", [])
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list):
        raise _fail(path, line, "answers", "must be a list of strings")
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise _fail(path, line, "meta", "must be an object")
    return EvalRecord(
        id=rid,
        question=question,
        candidates=tuple(chunks),
        required=tuple(dict.fromkeys(req_raw)),
        source=source,
        hop_type=hop_type,
        question_type=qtype,
        answers=tuple(str(a) for a in answers),
        meta=meta,
        file=path,
        line=line,
    )


def load_dataset(path: str | Path, *, limit: int | None = None) -> list[EvalRecord]:
    """Read a labelled JSONL file (blank lines are skipped).

    Args:
        path: The file.
        limit: Read at most this many records (a slice for quick runs).

    Raises:
        ConfigError: if the file is missing, a line is not JSON, a field is malformed, or an id repeats.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"Dataset {str(path)!r} does not exist.")
    out: list[EvalRecord] = []
    ids: set[str] = set()
    gz = p.name.endswith(".gz")  # the shared training files are gzip-compressed JSONL
    stem = p.name.removesuffix(".gz").removesuffix(".jsonl") if gz else p.stem
    with gzip.open(p, "rt", encoding="utf-8") if gz else p.open("r", encoding="utf-8") as fh:
        for n, raw in enumerate(fh, start=1):
            if limit is not None and len(out) >= limit:
                break
            if not raw.strip():
                continue
            obj = json_line(raw, f"{p} line {n}")
            rec = parse_record(obj, path=str(p), line=n, default_source=stem)
            if rec.id in ids:
                raise _fail(str(p), n, "id", f"duplicate record id {rec.id!r}")
            ids.add(rec.id)
            out.append(rec)
    if not out:
        raise ConfigError(f"Dataset {str(path)!r} holds no records.")
    return out


def load_datasets(paths: Iterable[str | Path], *, limit: int | None = None) -> list[EvalRecord]:
    """Read several files; record ids must be unique across them.

    ``limit`` applies per file.
    """
    out: list[EvalRecord] = []
    ids: dict[str, str] = {}
    for path in paths:
        for rec in load_dataset(path, limit=limit):
            if rec.id in ids:
                raise _fail(rec.file, rec.line, "id", f"record id {rec.id!r} also appears in {ids[rec.id]}")
            ids[rec.id] = rec.file
            out.append(rec)
    if not out:
        raise ConfigError("No dataset given: pass --data FILE.")
    return out


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Expand folders into their top-level ``*.jsonl`` and ``*.jsonl.gz`` files (sorted); files pass through."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted([*p.glob("*.jsonl"), *p.glob("*.jsonl.gz")])
            if not found:
                raise ConfigError(f"Folder {str(p)!r} holds no *.jsonl or *.jsonl.gz files.")
            out.extend(found)
        else:
            out.append(p)
    return out
