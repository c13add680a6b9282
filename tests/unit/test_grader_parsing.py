"""Every malformed-output kind the LLM grader parser must survive (or reject with GraderOutputError)."""

from __future__ import annotations

import pytest

from admit.errors import GraderOutputError
from admit.prune._parsing import extract_json, normalize_id, parse_anchors, parse_grades, parse_selection, to_grade

IDS = ["C1", "C2", "C3", "C4"]


def test_clean_mapping() -> None:
    p = parse_grades('{"C1": 5, "C2": 1, "C3": 4, "C4": 2}', IDS)
    assert p.grades == {"C1": 5, "C2": 1, "C3": 4, "C4": 2}
    assert p.missing == [] and p.notes == []


def test_numbers_as_strings_and_floats() -> None:
    p = parse_grades('{"C1": "5", "C2": "2/5", "C3": 3.6, "C4": "grade: 1"}', IDS)
    assert p.grades == {"C1": 5, "C2": 2, "C3": 4, "C4": 1}


def test_code_fence_and_prose_around_json() -> None:
    text = 'Sure! Here are the grades:\n```json\n{"C1": 4, "C2": 1, "C3": 1, "C4": 5}\n```\nHope this helps.'
    p = parse_grades(text, IDS)
    assert p.grades == {"C1": 4, "C2": 1, "C3": 1, "C4": 5}
    assert any("around the JSON" in n for n in p.notes)


def test_stray_brackets_in_prose_before_json() -> None:
    p = parse_grades('[C1] looks key, {see below}: {"C1": 5, "C2": 2}', IDS)
    assert p.grades == {"C1": 5, "C2": 2}


def test_truncated_json_keeps_complete_entries() -> None:
    p = parse_grades('{"C1": 5, "C2": 4, "C3": 2, "C4', IDS)
    assert p.grades == {"C1": 5, "C2": 4, "C3": 2}
    assert p.missing == ["C4"]
    assert any("truncated" in n for n in p.notes)


def test_truncated_nested_list_form() -> None:
    text = '{"grades": [{"id": "C1", "grade": 4}, {"id": "C2", "grade": "2"}, {"id": "C3", "gra'
    p = parse_grades(text, IDS)
    assert p.grades == {"C1": 4, "C2": 2}
    assert set(p.missing) == {"C3", "C4"}


def test_truncated_inside_string_value() -> None:
    p = parse_grades('{"C1": 5, "C2": "4', IDS)
    assert p.grades == {"C1": 5}


def test_unknown_ids_ignored_and_noted() -> None:
    p = parse_grades('{"C1": 5, "C9": 5, "docs-18#4": 5, "reasoning": "x"}', IDS)
    assert p.grades == {"C1": 5}
    assert any("unknown ids" in n and "C9" in n for n in p.notes)


def test_missing_ids_reported_in_input_order() -> None:
    p = parse_grades('{"C3": 5}', IDS)
    assert p.missing == ["C1", "C2", "C4"]


def test_out_of_range_grades_clamped_and_noted() -> None:
    p = parse_grades('{"C1": 9, "C2": 0, "C3": -3, "C4": 5}', IDS)
    assert p.grades == {"C1": 5, "C2": 1, "C3": 1, "C4": 5}
    assert sum("clamped" in n for n in p.notes) == 3


def test_duplicated_ids_keep_highest() -> None:
    p = parse_grades('[["C1", 2], ["C1", 4], ["C2", 3], ["c2", 3]]', IDS)
    assert p.grades == {"C1": 4, "C2": 3}
    assert any("duplicate id C1" in n for n in p.notes)


def test_id_spellings() -> None:
    p = parse_grades('{"c1": 5, "[C2]": 4, "chunk 3": 3, "4": 2}', IDS)
    assert p.grades == {"C1": 5, "C2": 4, "C3": 3, "C4": 2}


def test_list_of_records_with_other_key_names() -> None:
    p = parse_grades('{"results": [{"chunk_id": "C1", "score": 5}, {"chunk": 2, "relevance": "essential"}]}', IDS)
    assert p.grades == {"C1": 5, "C2": 5}


def test_value_objects() -> None:
    p = parse_grades('{"C1": {"grade": 5, "why": "states it"}, "C2": {"grade": "1"}}', IDS)
    assert p.grades == {"C1": 5, "C2": 1}


def test_prose_pairs_as_last_resort() -> None:
    p = parse_grades("C1: 5\nC2 = 1\nC3 is 4", IDS)
    assert p.grades == {"C1": 5, "C2": 1, "C3": 4}
    assert any("pairs" in n for n in p.notes)


def test_non_numeric_grades_ignored() -> None:
    p = parse_grades('{"C1": "maybe", "C2": true, "C3": 4}', IDS)
    assert p.grades == {"C3": 4}
    assert any("non-numeric" in n for n in p.notes)


@pytest.mark.parametrize(
    "text", ["", "   ", "I cannot grade these.", "{}", "[]", '{"C9": 5}', '{"C1": "high"}', '{"C1":', "null"]
)
def test_nothing_usable_raises(text: str) -> None:
    with pytest.raises(GraderOutputError):
        parse_grades(text, IDS)


def test_error_message_shows_the_output() -> None:
    with pytest.raises(GraderOutputError, match="I cannot"):
        parse_grades("I cannot grade these.", IDS)


def test_selection_forms() -> None:
    assert parse_selection('{"keep": ["C1", "C3"]}', IDS).selected == ["C1", "C3"]
    assert parse_selection('["c2", 4]', IDS).selected == ["C2", "C4"]
    assert parse_selection('{"C1": true, "C2": false, "C3": true}', IDS).selected == ["C1", "C3"]
    assert parse_selection('{"selected": [{"id": "C4"}]}', IDS).selected == ["C4"]
    assert parse_selection('{"keep": []}', IDS).selected == []


def test_selection_unknown_and_duplicates() -> None:
    p = parse_selection('{"keep": ["C1", "C1", "C7", "C2"]}', IDS)
    assert p.selected == ["C1", "C2"]
    assert any("C7" in n for n in p.notes) and any("duplicated" in n for n in p.notes)


def test_selection_truncated() -> None:
    assert parse_selection('{"keep": ["C1", "C3", "C', IDS).selected == ["C1", "C3"]


@pytest.mark.parametrize("text", ["keep C1", '{"reason": "none"}', '"C1"'])
def test_selection_unusable_raises(text: str) -> None:
    with pytest.raises(GraderOutputError):
        parse_selection(text, IDS)


def test_anchors_forms() -> None:
    got, _ = parse_anchors('{"level_5": "a", "level_4": "b", "3": "c", "tangential": "d", "level_1": {"text": "e"}}')
    assert got == {5: "a", 4: "b", 3: "c", 2: "d", 1: "e"}
    got, notes = parse_anchors('{"level_5": "a", "level_4": "b", "level_3": "c')
    assert got == {5: "a", 4: "b"} and notes
    with pytest.raises(GraderOutputError):
        parse_anchors('{"level_5": ""}')


def test_helpers() -> None:
    known = {"C1", "C12"}
    assert normalize_id(12, known) == "C12"
    assert normalize_id(True, known) is None
    assert normalize_id("C2", known) is None
    assert to_grade(float("nan")) is None
    assert to_grade(["4"]) == 4.0
    assert extract_json("no json")[0] is None
