"""Issue 25: answerability and the grading rules on top of the setwise trees (pure logic: no model loaded)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from admit import Access, Chunk, PackRequest, Pipeline, Principal
from admit import answerability as an
from admit._text import char_bigrams, unreadable_script
from admit.errors import ConfigError
from admit.kb.chunking import chunk_document
from admit.kb.parse import parse_markdown
from admit.passages import best_passages, passages
from admit.prune.setwise_model import SetwiseItem, rules
from admit.prune.setwise_model.coverage import grades
from admit.prune.setwise_model.scorer import apply_rules

# -- the shipped model file: parameters and figures, never labels ------------------------------------------------


def test_shipped_answerability_file_holds_only_parameters_and_figures() -> None:
    data = json.loads(an.DEFAULT_PATH.read_text("utf-8"))
    assert set(data["models"]) == {"setwise", "lexical"}
    for name, m in data["models"].items():
        assert tuple(m["features"]) == an.FEATURES[name]
        assert len(m["coef"]) == len(m["mean"]) == len(m["scale"]) == len(m["features"])
    text = an.DEFAULT_PATH.read_text("utf-8")
    for word in ('"required"', '"answers"', '"question"', '"candidates"'):
        assert word not in text


def test_assess_does_not_say_answered_when_the_evidence_lacks_the_asked_thing() -> None:
    q = "Does Ferrule support Kerberos single sign-on?"
    yes = an.assess("What port does the Ferrule server listen on?", ["The Ferrule server listens on port 7443."])
    no = an.assess(q, ["Ferrule is a self-hosted backup server for small teams."])
    assert yes.state == "answered" and yes.probability > no.probability
    # the product's introduction beside a feature it lacks: never "answered"; what is missing is named
    assert no.state in ("unsure", "not_answered") and "Kerberos" in no.missing
    assert "p=" in no.reason and "no passage names" in no.reason
    off_topic = an.assess(q, ["Bananas are yellow.", "Recipe: mix two cups of flour with three eggs."])
    assert off_topic.state == "not_answered" and not off_topic.answerable


def test_assess_of_nothing_admitted_is_not_answered() -> None:
    a = an.assess("anything at all?", [])
    assert (a.answerable, a.probability, a.model) == (False, 0.0, "empty")


def test_missing_identifier_is_a_feature_and_named_in_the_reason() -> None:
    f = an.features("What does FR-999 mean?", ["FR-101 means the agent cannot reach the server."])
    assert f["ident_missing"] == 1.0
    assert (
        an.features("What does FR-101 mean?", ["FR-101 means the agent cannot reach the server."])["ident_missing"]
        == 0.0
    )
    assert "FR-999" in an.assess("What does FR-999 mean?", ["FR-101 means the agent cannot reach."]).reason


def test_a_model_file_with_unknown_features_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown features"):
        an.AnswerabilityModel.from_json("x", {"features": ["nope"], "mean": [0], "scale": [1], "coef": [1], "bias": 0})


# -- scripts MiniLM cannot read ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("Ferrule のデフォルトのポート番号は何ですか？", "KATAKANA"),
        ("默认端口是多少？", "CJK"),
        ("พอร์ตเริ่มต้นคืออะไร", "THAI"),
        ("기본 포트는 무엇입니까?", "HANGUL"),
        ("What is the default port?", None),
        ("Wie lautet der Standardport?", None),
    ],
)
def test_unreadable_script_is_detected(text: str, script: str | None) -> None:
    assert unreadable_script(text) == script


def test_cjk_question_is_graded_by_character_bigrams_never_backwards() -> None:
    q = "默认端口是多少？"
    items = [
        SetwiseItem(id="banana", title="", text="香蕉是黄色的。"),
        SetwiseItem(id="answer", title="", text="服务器的默认端口是 7443。"),
    ]
    # MiniLM's similarities of Chinese text mean nothing: give the banana the higher one, as it did
    out, why, floor, script = apply_rules(q, items, np.array([0.9, 0.1]), [5, 1], ["", ""])
    assert script == "CJK"
    assert out[1] == 5 and out[0] < out[1]
    assert floor[0] and not floor[1]
    assert "character bigrams" in why[1]


def test_unreadable_chunk_under_an_english_question_is_graded_by_shared_words() -> None:
    q = "What port does Ferrule use?"
    items = [
        SetwiseItem(id="ja", title="", text="Ferrule は既定でポート 7443 を使います。"),
        SetwiseItem(id="th", title="", text="กล้วยเป็นสีเหลือง"),
    ]
    out, why, _, _ = apply_rules(q, items, np.array([0.05, 0.01]), [1, 1], ["", ""])
    assert out == [3, 2]
    assert all("does not read" in w for w in why)


def test_char_bigrams_break_at_spaces_and_punctuation() -> None:
    assert char_bigrams("ab, cd") == {"ab", "cd"}


# -- versions as people write them --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("What changed between Ferrule 4.1 and 4.2?", {("4", "1"), ("4", "2")}),
        ("Is v4 still supported?", {("4",)}),
        ("Does 4.x support object lock?", {("4",)}),
        ("What is new in 4.2.0?", {("4", "2", "0")}),
        ("How much is 3 plus 4?", set()),
    ],
)
def test_asked_versions(question: str, want: set[tuple[str, ...]]) -> None:
    assert rules.asked_versions(question) == want


def test_changelog_sections_of_the_asked_releases_are_lifted_and_others_capped() -> None:
    q = "What changed between Ferrule 4.1 and 4.2?"
    items = [
        SetwiseItem(id="c42", title="Changelog › 4.2.0", text="Adds container images."),
        SetwiseItem(id="c41", title="Changelog › 4.1.0", text="Adds OpenID Connect sign-in."),
        SetwiseItem(id="c40", title="Changelog › 4.0.0", text="First release of the new block format."),
        SetwiseItem(id="inst", title="Installing Ferrule 4.1 › Requirements", text="Needs 2 GB of memory."),
    ]
    out, why, _, _ = apply_rules(q, items, np.array([0.3, 0.3, 0.3, 0.3]), [1, 1, 5, 3], ["", "", "", ""])
    assert out[0] >= 4 and out[1] >= 4
    assert out[2] <= 2 and "another release" in why[2]
    assert out[3] == 3  # named only by its document's title: neither lifted nor capped


# -- list-all and tables ------------------------------------------------------------------------------------------


TABLE = "Every error has a code.\n\n| Code | Meaning |\n|---|---|\n| FR-101 | unreachable |\n| FR-102 | expired |\n"


def test_list_all_question_grades_the_table_of_the_asked_kind_as_the_answer() -> None:
    q = "List all error codes"
    assert rules.asks_for_all(q)
    assert rules.list_kind(q) == {"error", "code"}
    items = [
        SetwiseItem(id="intro", title="Error codes", text="Every Ferrule error has a code."),
        SetwiseItem(id="table", title="Error codes", text=TABLE),
    ]
    out, why, _, _ = apply_rules(q, items, np.array([0.6, 0.3]), [5, 2], ["", ""])
    assert out[1] == 5 and "table or list" in why[1]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Which storage backends are there?", True),
        ("Name every command", True),
        ("What are the retention settings?", True),
        ("What port does the server use?", False),
    ],
)
def test_asks_for_all(question: str, asks: bool) -> None:
    assert rules.asks_for_all(question) is asks


def test_structured_text() -> None:
    assert rules.structured(TABLE)
    assert rules.structured("- a\n- b\n- c")
    assert not rules.structured("A paragraph.\nAnother line.")


def test_an_over_long_table_is_chunked_between_rows_with_its_header() -> None:
    row = "| FR-{:03d} | meaning number {} of the error table, with a few more words |"
    rows = "\n".join(row.format(i, i) for i in range(60))
    doc = parse_markdown(f"# Errors\n\n| Code | Meaning |\n|---|---|\n{rows}\n", fallback_title="errors")
    chunks = chunk_document(doc, max_tokens=200)
    assert len(chunks) > 1
    for c in chunks:
        lines = c.text.splitlines()
        assert lines[0] == "| Code | Meaning |" and lines[1] == "|---|---|"
        assert all(ln.startswith("| FR-") and ln.endswith(" |") for ln in lines[2:])
    codes = [ln.split("|")[1].strip() for c in chunks for ln in c.text.splitlines()[2:]]
    assert codes == [f"FR-{i:03d}" for i in range(60)]


# -- short and deep lists --------------------------------------------------------------------------------------------


def test_unrelated_floor() -> None:
    q = "What port does the server use?"
    assert rules.unrelated(q, "", "Bananas are yellow.", 0.05)
    assert not rules.unrelated(q, "", "The server listens on port 8080.", 0.05)  # shares words
    assert not rules.unrelated(q, "", "Bananas are yellow.", 0.5)  # similar enough


def test_short_list_unrelated_chunk_is_floored_and_flagged() -> None:
    q = "What port does the server use?"
    items = [
        SetwiseItem(id="a", title="", text="The server listens on port 8080."),
        SetwiseItem(id="b", title="", text="Bananas are yellow."),
    ]
    out, _, floor, _ = apply_rules(q, items, np.array([0.6, 0.02]), [5, 3], ["", ""])
    assert out == [5, 1] and floor == [False, True]


def test_deep_list_keeps_no_fixed_share() -> None:
    # one clear chunk of 100: the coverage stage says the top one is complete
    probs = np.array([0.95, *([0.01] * 99)])
    cov = np.array([0.0, *([0.99] * 99)])
    g = grades(probs, cov, (0.985, 0.935, 0.8025, 0.25))
    assert sum(x >= 3 for x in g) <= 3  # was 15: a 15% floor


def test_short_list_is_graded_not_kept_whole() -> None:
    probs = np.array([0.9, 0.05])
    cov = np.array([0.0, 0.99])
    g = grades(probs, cov, (0.985, 0.935, 0.8025, 0.25))
    assert g[0] == 5 and g[1] < 3


# -- long chunks by their best passages -------------------------------------------------------------------------------


def test_long_chunk_is_embedded_by_its_best_passages() -> None:
    week = "Week {}: rotated certificates on host web-{} and verified repository r{}."
    filler = " ".join(week.format(i, i % 7, i) for i in range(900))
    answer = "Compact the catalog every thirty days with ferrule catalog compact."
    text = f"{filler} {answer} {filler}"
    every = passages("Handbook", text, max_passages=1 << 30)
    assert len(every) > 24
    chosen, total = best_passages("How often should the catalog be compacted?", "Handbook", text)
    assert total == len(every) and len(chosen) == 24
    assert chosen[0] == every[0]
    assert any("compact" in p for p in chosen)
    short, n = best_passages("q", "t", "A short chunk.")
    assert short == passages("t", "A short chunk.") and n == 1


# -- the pipeline: the no_answer fallback and on_no_answer ------------------------------------------------------------


def _pipeline_with(tmp_path: Path, action: str) -> Pipeline:
    text = (Path(__file__).resolve().parents[2] / "src" / "admit" / "policies" / "default.toml").read_text("utf-8")
    path = tmp_path / "policy.toml"
    path.write_text(text.replace("[defaults]\n", f'[defaults]\non_no_answer = "{action}"\n', 1), "utf-8")
    return Pipeline(policies=path)


def _req(question: str, texts: list[str]) -> PackRequest:
    a = Access(tenant="t")
    chunks = [Chunk(id=f"c{i}", source_id=f"s{i}", text=t, access=a) for i, t in enumerate(texts)]
    return PackRequest(question=question, principal=Principal(tenant="t"), candidates=chunks)


NO = "Does Ferrule support Kerberos single sign-on with Active Directory?"
NO_TEXTS = ["Bananas are yellow.", "Recipe: mix two cups of flour with three eggs."]


@pytest.mark.parametrize("action", ["note", "ask_to_narrow", "admit_nothing"])
def test_on_no_answer_decides_what_follows(tmp_path: Path, action: str) -> None:
    res = _pipeline_with(tmp_path, action).pack(_req(NO, NO_TEXTS))
    assert res.answerable is False and res.answerability is not None
    fb = [f for f in res.fallbacks if f.kind == "no_answer"]
    assert len(fb) == 1 and "does not answer" in fb[0].detail
    assert res.trace["answer"]["answerable"] is False
    assert res.as_dict()["answerable"] is False
    if action == "admit_nothing":
        assert res.admitted_ids == [] and res.prompt == ""
        assert {d.reason for d in res.decisions} == {"no_answer"}
    else:
        assert res.admitted_ids  # admitted, with a note telling the generator
        word = "narrow" if action == "ask_to_narrow" else "Answer from what they do say"
        assert word in res.prompt
        # the note says what the passages lack (the question's names), never "do not guess"
        assert "'Kerberos'" in res.prompt and "do not guess" not in res.prompt
        assert res.answer_state == "not_answered" and "Kerberos" in res.trace["answer"]["missing"]
        assert res.trace["evidence_tokens"] <= res.budget.evidence_budget


def test_an_answered_question_gets_no_note(tmp_path: Path) -> None:
    res = _pipeline_with(tmp_path, "note").pack(
        _req("What port does the Ferrule server listen on?", ["The Ferrule server listens on port 7443."])
    )
    assert res.answerable is True
    assert "no_answer" not in [f.kind for f in res.fallbacks]
    assert "admit's check" not in res.prompt


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("What does error E4012 mean?", "E4012: the upload exceeded the tenant's storage quota. Raise the quota."),
        ("How many snapshots can one repository hold?", "One repository holds at most 500 snapshots."),
        ("retention period", "The retention period of audit logs is 30 days."),
    ],
)
def test_a_short_question_is_answered_when_a_passage_holds_its_terms(question: str, text: str) -> None:
    from admit.answerability import assess

    a = assess(question, [text])
    assert a.state == "answered" and a.answerable, a.reason


def test_unsure_lies_between_the_two_thresholds_and_changes_nothing() -> None:
    from admit.answerability import AnswerabilityModel

    m = AnswerabilityModel(
        name="lexical", features=("best_q_cov",), mean=(0.0,), scale=(1.0,), coef=(4.0,), bias=-2.0,
        threshold=0.2, answered_at=0.8,
    )  # fmt: skip
    assert m.state({"best_q_cov": 0.0}) == "not_answered"  # p = 0.12
    assert m.state({"best_q_cov": 0.5}) == "unsure"  # p = 0.5
    assert m.state({"best_q_cov": 1.0}) == "answered"  # p = 0.88
    assert m.state({"best_q_cov": 0.0, "short_held": 1.0}) == "answered"


def test_a_bad_on_no_answer_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="on_no_answer"):
        _pipeline_with(tmp_path, "shrug")


def test_the_registry_version_counts_like_the_document_title() -> None:
    q = "How do I install Ferrule 4.2?"
    items = [
        SetwiseItem(id="a", title="Install › Requirements", text="Needs 4 GB.", version="4.2.1"),
        SetwiseItem(id="b", title="Install › 4.1", text="Needs 2 GB.", version="4.1.0"),
    ]
    hit, other, _ = rules.version_hits(q, [i.title for i in items], [i.text for i in items], [i.version for i in items])
    assert hit == [False, False] and other == [False, True]  # a: about 4.2 by its document; b: its heading is 4.1


def test_eval_reports_answerability_per_query_class(tmp_path: Path) -> None:
    from admit.eval.dataset import load_dataset
    from admit.eval.sweep import EvalOptions, expand_grid, run_eval

    rows = [
        {
            "id": "p:0",
            "question": "List all error codes",
            "candidates": [
                {"id": "c0", "source_id": "s0", "title": "Errors", "text": TABLE},
                {"id": "c1", "source_id": "s1", "title": "Fruit", "text": "Bananas are yellow."},
            ],
            "required": ["c0"],
            "source": "toy",
        },
        {
            "id": "p:1",
            "question": "What port does the Ferrule server listen on?",
            "candidates": [
                {"id": "c0", "source_id": "s0", "title": "", "text": "Bananas are yellow."},
                {"id": "c1", "source_id": "s1", "title": "", "text": "The Ferrule server listens on port 7443."},
            ],
            "required": ["c1"],
            "source": "toy",
        },
    ]
    path = tmp_path / "toy.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    opts = EvalOptions(reranker="bm25", generator_model="cl100k_base", cache=None)
    run = run_eval(load_dataset(path), expand_grid("top_n", {"n": [1]}), opts)
    m = run.metrics["top_n n=1"]
    assert set(m["by_query_class"]) == {"list_all", "point_lookup"}
    for v in m["by_query_class"].values():
        assert v["said_answerable"] is not None and 0.0 <= v["said_answerable"] <= 1.0
    assert [r.answerable for r in run.results["top_n n=1"]] == [True, True]


def test_a_part_named_by_its_heading_is_kept() -> None:
    q = "What were total assets according to the balance sheet?"
    items = [
        SetwiseItem(id="a", title="Annual report", text="Consolidated Balance Sheet\n| Total assets | 5,120 |"),
        SetwiseItem(id="b", title="Annual report", text="Overview\nAssets grew in every region this year."),
        SetwiseItem(id="c", title="Annual report", text="Cash flow statement\n| Operating cash | 410 |"),
    ]
    dense = np.array([0.3, 0.5, 0.2])
    out, why, _, _ = apply_rules(q, items, dense, [2, 5, 1], ["", "", ""])
    assert out[0] == 3 and "names its heading 'Consolidated Balance Sheet'" in why[0]
    assert out[1:] == [5, 1]  # nothing else changes
    # a heading that opens several chunks of the list names a kind, not one part
    same = [SetwiseItem(id=str(i), title="", text="Balance sheet notes\nline") for i in range(3)]
    assert rules.named_headings(q, [it.text for it in same]) == [None, None, None]


def test_a_chunk_lacking_the_asked_acronym_is_not_essential() -> None:
    q = "What was the EBITDA margin in 2023?"
    items = [
        SetwiseItem(id="a", title="Results", text="EBITDA margin reached 21% in 2023."),
        SetwiseItem(id="b", title="Results", text="The operating margin in 2023 was 14%, up from 12%."),
    ]
    out, why, _, _ = apply_rules(q, items, np.array([0.6, 0.7]), [5, 5], ["", ""])
    assert out == [5, 4] and "never names EBITDA" in why[1]
    # when no chunk holds it, nothing changes (the list cannot tell)
    assert rules.acronym_misses("What is the RPO?", ["backups run nightly", "restores take an hour"])[0] == [False] * 2
