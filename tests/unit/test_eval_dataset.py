"""The labelled JSONL reader: good records, and malformed lines named by line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from admit.errors import ConfigError
from admit.eval.dataset import load_dataset, load_datasets


def _rec(i: int, **over: object) -> dict:
    rec = {
        "id": f"t:{i}",
        "question": f"Question {i}?",
        "candidates": [
            {"id": "c0", "source_id": "s0", "title": "T0", "text": "zero"},
            {"id": "c1", "source_id": "s1", "title": "T1", "text": "one"},
        ],
        "required": ["c1"],
        "source": "toy",
        "hop_type": "single_hop",
        "question_type": "lookup",
        "answers": ["one"],
    }
    rec.update(over)
    return rec


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_reads_records_and_keeps_labels_out_of_the_prune_input(tmp_path: Path) -> None:
    p = _write(tmp_path / "toy.jsonl", [_rec(0), "", _rec(1, source=None, hop_type=None, required=["c0", "c1"])])
    rows = load_dataset(p)
    assert [r.id for r in rows] == ["t:0", "t:1"]
    assert rows[0].required == ("c1",) and rows[0].line == 1 and rows[1].line == 3
    # defaults: source from the file stem, hop type from the number of required chunks
    bad_source = json.loads(json.dumps(_rec(2)))
    del bad_source["source"], bad_source["hop_type"]
    p2 = _write(tmp_path / "mine.jsonl", [bad_source])
    r2 = load_dataset(p2)[0]
    assert (r2.source, r2.hop_type, r2.question_type) == ("mine", "single_hop", "lookup")
    inp = rows[0].prune_input()
    assert not hasattr(inp, "required") and inp.candidates[1].text == "one"
    assert load_dataset(p, limit=1)[0].id == "t:0" and len(load_dataset(p, limit=1)) == 1


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ('{"id": "x", "question": ', "line 2: not valid JSON"),
        (json.dumps(_rec(9, question=5)), r"line 2: field `question`: must be a string"),
        (json.dumps({k: v for k, v in _rec(9).items() if k != "candidates"}), r"line 2: field `candidates`: missing"),
        (json.dumps(_rec(9, candidates=[{"id": "c0", "source_id": "s"}])), r"line 2: field `candidates\[0\]\.text`"),
        (
            json.dumps(_rec(9, candidates=[{"id": "c0", "text": "a"}, {"id": "c0", "text": "b"}])),
            r"field `candidates\[1\]\.id`: duplicate",
        ),
        (json.dumps(_rec(9, required="c1")), r"line 2: field `required`: must be a list"),
        (json.dumps(_rec(0)), r"line 2: field `id`: duplicate record id"),
        ("[1, 2]", "line 2: expected a JSON object"),
    ],
)
def test_malformed_line_names_line_and_field(tmp_path: Path, row: str, match: str) -> None:
    p = _write(tmp_path / "bad.jsonl", [_rec(0), row])
    with pytest.raises(ConfigError, match=match):
        load_dataset(p)


def test_ids_unique_across_files_and_missing_file(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", [_rec(0)])
    b = _write(tmp_path / "b.jsonl", [_rec(0)])
    with pytest.raises(ConfigError, match="also appears in"):
        load_datasets([a, b])
    with pytest.raises(ConfigError, match="does not exist"):
        load_dataset(tmp_path / "nope.jsonl")


def test_reads_gzip_compressed_files_and_folders_of_them(tmp_path: Path) -> None:
    import gzip

    from admit.eval.dataset import expand_paths

    folder = tmp_path / "train"
    folder.mkdir()
    with gzip.open(folder / "small_set.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(_rec(i)) for i in range(3)) + "\n")
    _write(folder / "plain.jsonl", [_rec(10)])
    assert [p.name for p in expand_paths([folder])] == ["plain.jsonl", "small_set.jsonl.gz"]
    recs = load_dataset(folder / "small_set.jsonl.gz")
    assert len(recs) == 3
    assert len(load_datasets(expand_paths([folder]))) == 4
