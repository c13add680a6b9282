"""The router reads the question's shape (issue 39, item 5): quoted text masked, subordinate clauses cut, cues
anchored at the head, ``exclude`` patterns, the ``[routing]`` table, and the labelled routing sets' accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from admit.errors import ConfigError
from admit.policy import load_policy_set, policy_as_toml
from admit.route import QUOTE, Router, RoutingSettings, question_shape

ROOT = Path(__file__).resolve().parents[2]
# measured with bench/bench_routing.py under the shipped policy (the cue-anywhere router it replaced: 0.534, 0.442,
# 0.448). routing.jsonl (264) and routing_heldout.jsonl (86; 0.791 on its first run) were used to write the cues:
# 1.000 on both, and the floor leaves room for a cue change that costs a question or two. routing_heldout2.jsonl
# (58) was never used to tune: 0.845, floor 0.80.
FLOORS = {
    "routing": (ROOT / "bench" / "data" / "routing.jsonl", 0.95),
    "routing_heldout": (ROOT / "bench" / "data" / "routing_heldout.jsonl", 0.95),
    "routing_heldout2": (ROOT / "bench" / "data" / "routing_heldout2.jsonl", 0.80),
}


@pytest.fixture(scope="module")
def ps():
    return load_policy_set()


# -- the two reported cases, and others each misrouted by the cue-anywhere router ---------------------------------
@pytest.mark.parametrize(
    ("question", "cls"),
    [
        ("How do I verify the archive after every backup?", "default"),
        ('Why do I get "error: either --foo or --bar must be given"?', "troubleshooting"),
        ("Which compression algorithms does it support?", "list_all"),
        ("Which storage classes are supported?", "list_all"),
        ("What changed in 1.2.4?", "history"),
        ("What's new in version 3?", "history"),
        ("release notes for 2.0", "history"),
        ("lz4 vs zstd?", "comparison"),
        ("The upload fails with error AccessDenied", "troubleshooting"),
        ("How do I set a quota for each user?", "default"),
        ("How can I list all files changed in a git commit?", "default"),
        ("How do I use the `--compare-dest` option of rsync?", "default"),
        ('How do I turn off "fail-fast" in the build matrix?', "default"),
        ("What does `set -e` do when a command fails?", "point_lookup"),
        ("What's the default timeout of `requests.get`?", "point_lookup"),
        ("Which port does the API server listen on?", "point_lookup"),
        ("Hi, can you tell me which ports Elasticsearch uses?", "list_all"),
        ("For Stripe Connect, which account types are there?", "list_all"),
        ("After every deploy, the app returns 500 errors.", "troubleshooting"),
        ("Redis or Memcached for session storage?", "comparison"),
        ("Which is faster, SQLite or PostgreSQL, for reads?", "comparison"),
        ("What are the differences between v1 and v2 of the API?", "history"),
        ("Can you explain how reconciliation works?", "default"),
        ("Can you consolidate two federal student loans?", "point_lookup"),
        ('kubectl says "The connection to the server was refused"', "troubleshooting"),
    ],
)
def test_the_question_shape_picks_the_class(ps, question, cls):
    assert ps.classify(question).query_class == cls


def test_the_route_records_the_cue_its_pattern_and_where_it_matched(ps):
    head = ps.classify("Which compression algorithms does borg support?")
    assert (head.query_class, head.where) == ("list_all", "head")
    assert head.cue.lower().startswith("which compression algorithms does")
    assert head.pattern in ps.policy("list_all").head_cues
    main = ps.classify("The upload fails with error AccessDenied")
    assert (main.cue, main.where) == ("fails", "main") and main.pattern in ps.policy("troubleshooting").cues
    assert ps.classify("Explain the caching design").as_dict() == {
        "query_class": "default",
        "cue": "default",
        "pattern": "",
        "overridden": False,
        "where": "",
    }


def test_an_override_still_wins_over_the_shape(ps):
    route = ps.classify("How do I verify the archive after every backup?", override="list_all")
    assert route.query_class == "list_all" and route.overridden and route.where == ""


# -- the shape ----------------------------------------------------------------------------------------------------
def test_quoted_text_and_code_are_masked_but_apostrophes_are_not_quotes():
    shape = question_shape("Why does `npm ci` say \"lockfile is broken\" and 'stale' when users' files don't change?")
    assert shape.masked == f"Why does {QUOTE} say {QUOTE} and {QUOTE} when users' files don't change?"
    assert question_shape("Run ```\nmake all\n``` then what?").masked == f"Run {QUOTE} then what?"
    assert question_shape("an “every” and a ‘both’").masked == f"an {QUOTE} and a {QUOTE}"


def test_an_unclosed_quote_masks_nothing(ps):
    assert question_shape('Why does "the upload fail every time?').masked == 'Why does "the upload fail every time?'
    assert ps.classify('Why does "the upload fail every time?').query_class == "troubleshooting"


def test_only_the_first_sentences_are_heads():
    assert len(question_shape("a. " * 500 + "Which regions are supported?").heads) == 8


def test_a_question_in_quotes_from_end_to_end_is_read_without_them(ps):
    assert question_shape('"How do I list all users?"').masked == "How do I list all users?"
    assert ps.classify('"Which regions are supported?"').query_class == "list_all"


def test_subordinate_clauses_are_cut_from_the_main_clause():
    assert question_shape("How do I verify the archive after every backup?").main == "How do I verify the archive?"
    assert question_shape("When I run it, the job fails.").main == "the job fails."
    assert question_shape("Set a limit so that every query is logged").main == "Set a limit"


def test_a_leading_question_word_and_a_version_are_not_clauses():
    assert question_shape("When was 2.0 released?").main == "When was 2.0 released?"
    assert question_shape("What was the default before MySQL 5.7?").main == "What was the default before MySQL 5.7?"
    assert question_shape("Since when does it support transactions?").heads == (
        "Since when does it support transactions",
    )


def test_lead_ins_and_fronted_phrases_are_stripped_from_the_heads():
    assert question_shape("Hi, please list the regions.").heads == ("list the regions",)
    assert question_shape("In Rails, what is a concern?").heads == ("what is a concern",)
    assert question_shape("Quick question: what's the port?").heads == ("what's the port",)
    assert question_shape("I upgraded to 5.0. Which classes were removed?").heads == (
        "I upgraded to 5.0",
        "Which classes were removed",
    )


# -- the policy format --------------------------------------------------------------------------------------------
def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_an_old_policy_file_with_cues_only_still_loads_and_routes(tmp_path):
    ps = load_policy_set(
        _write(
            tmp_path,
            "[classes.default]\ncues = []\n[classes.list_all]\npriority = 50\ncues = ['\\bevery\\b']\n",
        )
    )
    assert ps.classify("Name every region").query_class == "list_all"
    # the old cue no longer fires inside a subordinate phrase
    assert ps.classify("How do I verify the archive after every backup?").query_class == "default"


def test_routing_table_turns_masking_and_clause_cutting_off(tmp_path):
    text = "[classes.default]\ncues = []\n[classes.comparison]\npriority = 40\ncues = ['\\beither\\b']\n"
    q = 'Why do I get "error: either --foo or --bar must be given"?'
    assert load_policy_set(_write(tmp_path, text)).classify(q).query_class == "default"
    off = load_policy_set(_write(tmp_path, "[routing]\nmask_quoted = false\n" + text))
    assert off.routing == RoutingSettings(mask_quoted=False)
    assert off.classify(q).query_class == "comparison"


def test_head_cues_and_exclude_come_from_the_policy_file(tmp_path):
    ps = load_policy_set(
        _write(
            tmp_path,
            "[classes.default]\ncues = []\n"
            "[classes.list_all]\npriority = 50\nhead_cues = ['list\\b']\nexclude = ['\\bplease\\b']\n",
        )
    )
    assert ps.classify("List the regions").query_class == "list_all"
    assert ps.classify("Should I list the regions?").query_class == "default"  # not at the head
    # 'please' at the head is a lead-in (stripped), but later in the main clause the exclude pattern sees it
    assert ps.classify("List the regions, please").query_class == "default"
    assert "head_cues = ['list\\b']" in policy_as_toml(ps.policy("list_all"))


def test_custom_subordinators_are_read_from_the_routing_table(tmp_path):
    text = (
        "[routing]\nsubordinators = ['per']\n[classes.default]\ncues = []\n[classes.list_all]\ncues = ['\\bevery\\b']\n"
    )
    ps = load_policy_set(_write(tmp_path, text))
    assert ps.classify("Bill me per every request").query_class == "default"
    assert ps.classify("How do I verify the archive after every backup?").query_class == "list_all"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[routing]\nmask_quotes = true\n", "mask_quoted"),
        ("[routing]\nmain_clause = 1\n", "true or false"),
        ("[routing]\nsubordinators = 'after'\n", "list of non-empty strings"),
        ("[routing]\nlead_ins = ['(unclosed']\n", r"\[routing\]"),
        ("[classes.default]\nhead_cues = ['(?=x)']\n", "Bad head cue"),
        ("[classes.default]\nexclude = ['(x']\n", "Bad exclude pattern"),
        ("[classes.default]\nhead_cues = 'list'\n", "must be a list"),
    ],
)
def test_bad_routing_settings_fail_with_the_setting_named(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_policy_set(_write(tmp_path, text))


def test_the_router_keeps_its_tuple_form():
    router = Router([("a", 1, ["\\bx\\b"]), ("b", 0, [])], default_class="b")
    assert router.classify("an x here").query_class == "a"
    assert router.classify('a "x" quoted').query_class == "b"


# -- the labelled sets --------------------------------------------------------------------------------------------
def _rows(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in FLOORS[name][0].read_text("utf-8").splitlines() if line.strip()]


def test_the_labelled_set_is_large_and_hard_enough():
    rows = _rows("routing")
    assert len(rows) >= 200 and sum(bool(r["hard"]) for r in rows) >= 40
    assert {r["expected"] for r in rows} == {
        "history",
        "list_all",
        "comparison",
        "troubleshooting",
        "point_lookup",
        "default",
    }
    assert len({r["question"] for r in rows}) == len(rows)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_shipped_policy_routes_the_labelled_sets_above_the_floor(ps, name):
    rows = _rows(name)
    wrong = [
        (r["question"], r["expected"], got)
        for r in rows
        if (got := ps.classify(str(r["question"])).query_class) != r["expected"]
    ]
    accuracy = 1 - len(wrong) / len(rows)
    assert accuracy >= FLOORS[name][1], wrong
