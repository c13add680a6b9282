"""The one reader of the labelled list files (the record format of ``../shared/data`` and ``../shared/train``).

A record has ``id``, ``question``, ``candidates`` (``id``, ``title``, ``text``, ...), ``required`` (candidate
ids) and ``meta``; files are ``*.jsonl`` or gzip-compressed ``*.jsonl.gz``. Labels are read for fitting and
scoring only, never stored in a model file.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SHARED", "TRAIN", "VALID", "Record", "family", "labels", "read_file", "read_folder"]

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
"""The project's data folder beside the clone (the scripts' default; the product never reads it)."""
TRAIN = str(SHARED / "train")
"""Default training folder."""
VALID = str(SHARED / "data")
"""Default validation folder."""

Record = dict[str, Any]

_FAMILIES = ("hotpotqa_fullwiki", "hotpotqa", "musique", "2wikimultihopqa", "rhdh_docs")


def read_file(path: Path) -> list[Record]:
    """Every record of one ``.jsonl`` or ``.jsonl.gz`` file (blank lines skipped)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_folder(folder: Path) -> dict[str, list[Record]]:
    """Every JSONL(.gz) file of a folder, by file stem (``train_musique.jsonl.gz`` -> ``train_musique``)."""
    return {path.name.split(".jsonl")[0]: read_file(path) for path in sorted(folder.glob("*.jsonl*"))}


def family(name: str) -> str:
    """Dataset family of a file name (``train_musique`` -> ``musique``), for leave-one-out."""
    for fam in _FAMILIES:
        if fam in name:
            return fam
    return name.split("_", 1)[-1]


def labels(record: Record, candidates: Sequence[Record] | None = None) -> np.ndarray:
    """1.0 for each required candidate, 0.0 for the others, in candidate order (the record's own by default)."""
    req = set(record["required"])
    return np.array(
        [1.0 if c["id"] in req else 0.0 for c in (record["candidates"] if candidates is None else candidates)]
    )
