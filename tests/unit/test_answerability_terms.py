"""Issue 46 item 2: a verdict that agrees with its reason.

A key term of the question (any case: "borg", "JSON", "endpoint") that no admitted chunk holds cannot be "answered";
when no retrieved candidate holds it either, the verdict is "not answered". A question that states an answer type
(a version, a default, "how do I") needs a chunk holding one. On main (b95dbc1) each of these said "answered".
"""

from __future__ import annotations

import pytest

from admit.answerability import assess
from admit.answerability.terms import answer_type_missing, check_terms, question_terms

NUT = [
    "Backups\nNUT does not back up files; upsmon shuts the system down when the battery is low.",
    "Files\nThe configuration files live in /etc/nut and are read at start-up; back up them before an upgrade.",
]
UPSD = ["upsd\nupsd serves the UPS data to its clients over TCP port 3493 with the network protocol."]
WEB = ["Web pages\nThe CGI programs show the UPS status as HTML pages; a JSON endpoint is planned for a later release."]


def test_a_lower_case_name_no_candidate_holds_is_not_answered() -> None:
    a = assess("How do I back up my files with borg?", NUT, pool=NUT)
    assert a.state == "not_answered"
    assert a.answerable is False
    assert a.missing == ("borg",)
    assert "borg in no retrieved candidate" in a.reason


def test_a_key_term_only_a_dropped_candidate_holds_is_not_answered_yet_not_answered() -> None:
    a = assess("Which port does upsd serve the JSON endpoint on?", UPSD, pool=UPSD + WEB)
    assert a.state == "unsure"
    assert set(a.missing) == {"JSON", "endpoint"}
    assert "no admitted passage holds" in a.reason


@pytest.mark.parametrize(
    ("question", "texts"),
    [
        ("How do I back up my files with borg?", NUT),
        ("Which port does upsd serve the JSON endpoint on?", UPSD),
        ("Which port does upsd listen on?", UPSD),
        ("Does upsd expose a REST endpoint?", UPSD + WEB),
    ],
)
def test_answered_never_stands_beside_a_term_no_passage_holds(question: str, texts: list[str]) -> None:
    a = assess(question, texts, pool=texts + NUT)
    if a.state == "answered":
        assert a.missing == ()
    assert a.state != "answered" or "no passage names" not in a.reason


def test_the_same_question_with_the_term_held_is_answered() -> None:
    a = assess("Which port does upsd listen on?", UPSD, pool=UPSD)
    assert a.state == "answered"
    assert a.missing == ()


def test_key_terms_skip_common_words_and_the_question_form_but_keep_names_in_any_case() -> None:
    assert question_terms("Does upsd expose a REST endpoint that returns JSON?") == ["upsd", "rest", "endpoint", "json"]
    assert question_terms("How do I back up my files with borg to S3?") == ["borg", "s3"]
    # "prefer", "additional", "holds": common English, not what the question is about
    assert question_terms("How do I change the directory that holds the Markdown files?") == ["markdown"]


def test_a_word_form_of_the_term_counts_as_held() -> None:
    got = check_terms("Which files get reformatted?", ["Black reformats the files it is given."])
    assert "reformatted" not in got.missing


@pytest.mark.parametrize(
    ("question", "missing_in", "held_in", "kind"),
    [
        (
            "Which version added the --check option?",
            "Options\nThe --check option reports whether files would be reformatted without writing them.",
            "Changelog\nThe --check option was added in 19.3 and reports whether files would be reformatted.",
            "version",
        ),
        (
            "What is the default line length?",
            "Line length\nYou can change the line length with the configuration option line-length.",
            "Line length\nBlack uses a line length of 88 characters by default.",
            "default",
        ),
    ],
)
def test_an_answer_type_the_question_states_must_be_held(
    question: str, missing_in: str, held_in: str, kind: str
) -> None:
    assert answer_type_missing(question, [missing_in]) == kind
    assert answer_type_missing(question, [held_in]) == ""
    no = assess(question, [missing_in], pool=[missing_in])
    assert no.state != "answered"
    assert assess(question, [held_in], pool=[held_in]).state == "answered"


def test_how_do_i_asks_for_a_step_command_or_setting() -> None:
    q = "How do I turn off the colours?"
    assert answer_type_missing(q, ["Colours were chosen by the design team in 2019 after a long debate."]) == "steps"
    assert answer_type_missing(q, ["Pass --no-color to turn them off."]) == ""
    assert answer_type_missing("What are the colours?", ["Colours were chosen by the team."]) == ""


def test_no_evidence_is_not_answered() -> None:
    a = assess("Which port does upsd listen on?", [], pool=[])
    assert a.state == "not_answered"


def test_a_default_stated_without_the_word_is_a_value_beside_the_question_s_words() -> None:
    q = "Which port does the server listen on by default?"
    assert answer_type_missing(q, ["Install\nThe server listens on port 7443 for HTTPS."]) == ""
    assert answer_type_missing(q, ["Install\nThe server is a small HTTP daemon that formats code."]) == "default"


def test_a_misspelt_key_term_is_held_by_the_word_it_misspells() -> None:
    pool = ["Helm chart\nDeploy the Helm chart of the applications on OpenShift in an air-gapped environment."]
    a = assess("How do I deploy the helm chrt for my aplications on OpnShft?", pool, pool=pool)
    assert a.state != "not_answered"
    assert a.missing == ()
    nut = assess("How do I back up my files with borg?", NUT, pool=[*NUT, "Born\nThe project was born in 1998."])
    assert nut.state == "not_answered"  # "borg" is not a misspelling of "born"


def test_an_inflection_of_a_common_word_is_no_key_term() -> None:
    """The README's own request asks "after upgrading to 2.4": "upgrading" is the common word "upgrade" inflected
    (MiniLM's vocabulary holds only the base form), not a term whose absence says the docs lack the answer."""
    from admit.answerability.terms import question_terms

    q = "Audit log export fails with error E4012 after upgrading to 2.4 - how do I fix it?"
    assert question_terms(q) == ["e4012"]
    assert "borg" in question_terms("How do I upload borg archives to the REST endpoint as JSON?")


@pytest.mark.parametrize(
    ("question", "passage"),
    [
        # a short word's plural: "IDs" where the docs say "ID"
        ("How do I add OpenTelemetry IDs to each entry?", "Tracing\nAdd the OpenTelemetry span ID to each entry."),
        # an irregular past with a prefix: "undid" asks about "undo"
        ("How do I restore what gbp undid?", "Undo\nTo undo an import, gbp can restore the branch."),
        # a derived adjective: "readable" where the docs say "read"
        ("How do I make a msgunfmt catalog readable?", "msgunfmt\nmsgunfmt writes a catalog you can read."),
        # a fragment of an identifier family: "LC_" where the docs name LC_ALL and LC_MESSAGES
        ("Which variable overrides LANG and the LC_ variables?", "Locale\nLANGUAGE overrides LANG and LC_ALL."),
    ],
)
def test_another_form_of_a_key_term_is_held_and_no_reason_for_not_answered(question: str, passage: str) -> None:
    """On main (81b2bf2) each of these terms counted as one no candidate holds, and the verdict was "not answered"
    beside the passage that answers (gettext and gbp's docs: 4 of the 7 answerable questions said "not answered")."""
    got = check_terms(question, [passage], [passage])
    assert got.absent == ()
    assert got.missing == ()
    assert assess(question, [passage], pool=[passage]).state != "not_answered"


def test_a_term_no_form_of_which_is_held_is_still_absent() -> None:
    passage = "Undo\nTo undo an import, gbp can restore the branch."
    assert check_terms("How do I restore what gbp undid with borg?", [passage], [passage]).absent == ("borg",)
    # "ids" does not make "idea" held, nor "lc_" a word that only contains it
    assert check_terms("What are the IDs?", ["An idea."], ["An idea."]).absent == ("IDs",)
    assert check_terms("Which LC_ variables?", ["The calc_x value."], ["The calc_x value."]).absent == ("LC_",)


def test_a_question_asking_for_a_quantity_needs_a_number_beside_its_words() -> None:
    """ "After how many days ..." and "what is the maximum ..." ask for a number; on main (81b2bf2) evidence that
    names the words without one was "answered"."""
    without = ["Snapshots\nOld snapshots are deleted when you run the clean-up command."]
    held = ["Snapshots\nOld snapshots are deleted after 30 days when you run the clean-up command."]
    for q in ("After how many days are old snapshots deleted?", "What is the maximum age of the old snapshots?"):
        assert answer_type_missing(q, without) == "quantity"
        assert answer_type_missing(q, held) == ""
        # (a candidate that was not admitted holds the number: when none does, "how many days" with no "days"
        # anywhere is "not answered": tests/unit/test_answerability_relation.py)
        a = assess(q, without, pool=without + held)
        assert a.state != "answered"
        assert "asks for a number" in a.reason
    # "how many" inside a how-to question asks for the step, not for a number
    assert answer_type_missing("How do I print how many snapshots are deleted?", without) == ""
