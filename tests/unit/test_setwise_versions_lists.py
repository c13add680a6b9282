"""Issue 39 items 3 and 4 in the setwise rules: a question naming a release keeps that release's section (and only
its), exactly; a chunk enumerating the asked kind, or naming both sides of a comparison, is kept."""

from __future__ import annotations

import numpy as np
import pytest

from admit.prune.setwise_model import lists, rules
from admit.prune.setwise_model.features import SetwiseItem
from admit.prune.setwise_model.grading import KEEP_GRADE, apply_rules

# -- releases -----------------------------------------------------------------------------------------------------

# a Sphinx changelog as the ingest chunker titles it (document title › section headings), from the 1.2.4 site
CHANGELOG = [
    SetwiseItem(
        id="v130",
        title="Changelog › Version 1.3.0 (2023-06-01)",
        text="New features:\n\n- borg compact: a --threshold option.\n- zstd is the default compression.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="v124",
        title="Changelog › Version 1.2.4 (2023-03-24)",
        text="Fixes:\n\n- borg check: no crash on a repository with a missing segment.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="v124-other",
        title="Changelog › Version 1.2.4 (2023-03-24) › Other changes",
        text="- docs: the FAQ entry on append-only mode was rewritten.\n- tests: run on Python 3.11.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="v124rc1",
        title="Changelog › Version 1.2.4rc1 (2023-03-02)",
        text="- First release candidate of 1.2.4: what changed since 1.2.3 is listed in the final release.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="v123",
        title="Changelog › Version 1.2.3 (2022-12-24)",
        text="Fixes:\n\n- borg mount: fix the inode numbers of hard links.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="v1240",
        title="Changelog › 1.2.40",
        text="- An imaginary far future patch release.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="usage",
        title="Usage › borg create",
        text="borg create makes a new archive.\n\nNew in version 1.2.4: the --paths-from-stdin option.",
        version="1.2.4",
    ),
    SetwiseItem(
        id="install",
        title="Installation › Pip",
        text="Install with pip install borgbackup; the wheel needs Python 3.9 or newer.",
        version="1.2.4",
    ),
]


def _grade(question: str, items: list[SetwiseItem], model: list[int]) -> tuple[list[int], list[str]]:
    n = len(items)
    out, why, _, _ = apply_rules(question, items, np.full(n, 0.3), model, [""] * n)
    return out, why


@pytest.mark.parametrize(
    ("token", "want"),
    [
        ("1.2.4", ("1", "2", "4")),
        ("v1.2.4", ("1", "2", "4")),
        ("1.2.40", ("1", "2", "40")),
        ("1.2.4a1", ("1", "2", "4a1")),
        ("1.2.4rc1", ("1", "2", "4rc1")),
        ("1.2.4-rc.1", ("1", "2", "4rc1")),
        ("1.2.4-beta", ("1", "2", "4b")),
        ("1.2.4.post1", ("1", "2", "4post1")),
        ("4.x", ("4",)),
        ("4.x-rc1", None),
        ("lz4", None),
    ],
)
def test_a_release_token_is_read_whole_with_its_suffix(token: str, want: tuple[str, ...] | None) -> None:
    assert rules.versions_in(token) == ({want} if want else set())


@pytest.mark.parametrize(
    ("line", "release"),
    [
        ("1.2.4", True),
        ("Version 1.2.4 (2023-03-24)", True),
        ("## v0.28.1 - May 3, 2021", True),
        ("Release 4.2.0", True),
        ("Upgrading from 4.1", False),
        ("Python 3.11 support", False),
        ("2023-03-24", False),
    ],
)
def test_release_heading(line: str, release: bool) -> None:
    assert rules.release_heading(line) is release


def test_version_notes_read_sphinx_notes_and_directives() -> None:
    text = "Options.\n\n.. versionadded:: 2.3\n\nNew in version 1.2.4: stdin. Changed in version 1.2.4a1."
    assert rules.version_notes(text) == {("2", "3"), ("1", "2", "4"), ("1", "2", "4a1")}
    assert rules.version_notes("Deprecated since version 3.1.") == {("3", "1")}
    # a release note about what another release did is not a note about the asked one
    assert rules.version_notes("The plugin was deprecated in 1.7 and removed in 1.9.") == set()


def test_what_changed_in_a_release_keeps_its_sections_and_caps_every_other_release() -> None:
    # the model graded the 1.2.4 sections low and others high, as measured on a real Sphinx site
    model = [5, 1, 1, 4, 4, 3, 1, 3]
    out, why = _grade("What changed in 1.2.4?", CHANGELOG, model)
    by_id = dict(zip([it.id for it in CHANGELOG], out, strict=True))
    assert by_id["v124"] >= 4 and by_id["v124-other"] >= 4  # a subsection of the release heading is the release's
    assert by_id["usage"] >= 4  # "New in version 1.2.4" note
    # the site's own version (1.2.4) does not make another release's changelog entry 1.2.4's; nor a suffix
    for other in ("v130", "v124rc1", "v123", "v1240"):
        assert by_id[other] <= 2, (other, why)
    assert by_id["install"] == 3  # names no release in its heading: neither lifted nor capped
    assert "about release 1.2.4 named in the question" in why[1]


def test_a_pre_release_question_asks_for_the_pre_release_only() -> None:
    out, _ = _grade("What was new in 1.2.4rc1?", CHANGELOG, [3] * len(CHANGELOG))
    by_id = dict(zip([it.id for it in CHANGELOG], out, strict=True))
    assert by_id["v124rc1"] >= 4 and by_id["v124"] <= 2


def test_the_registry_version_still_spares_a_section_that_is_not_a_changelog_entry() -> None:
    items = [
        SetwiseItem(id="a", title="Upgrading › From 4.1", text="Back up first.", version="4.2.0"),
        SetwiseItem(id="b", title="Upgrading › 4.2.0", text="Run the migration.", version="4.2.0"),
    ]
    hit, other, _ = rules.version_hits("How do I upgrade to 4.2.0?", [i.title for i in items], ["", ""], ["4.2.0"] * 2)
    assert hit == [False, True] and other == [False, False]


# -- enumerations -------------------------------------------------------------------------------------------------

HELP = """Compression is lz4 by default. If you want something else, you have to specify what you want.

Valid compression specifiers are:

none
    Do not compress.
lz4
    Use lz4 compression. Very high speed, very low compression. (default)
zstd[,L]
    Use zstd ("zstandard") compression, a modern wide-range algorithm. L is the level, 1..22.
zlib[,L]
    Use zlib ("gz") compression. Medium speed, medium compression. L is the level, 0..9.
lzma[,L]
    Use lzma ("xz") compression. Low speed, high compression. L is the level, 0..9.
"""
DEV_NOTE = (
    "Compression code lives in src/borg/compress.pyx. When adding an algorithm, give it a new ID byte and add a "
    "test to the test suite; never reuse an ID."
)
FAQ = "Why is the first backup slow? Borg reads and chunks every file, and compresses each chunk."


@pytest.mark.parametrize(
    ("question", "head", "kind"),
    [
        ("Which compression algorithms does it support?", "algorithms", {"compression", "algorithm"}),
        ("What are the supported compression algorithms?", "algorithms", {"compression", "algorithm"}),
        ("Which exit codes can borg return?", "codes", {"exit", "code"}),
        ("What options does borg create have?", "options", {"option"}),
        ("What does it support?", "", set()),
        ("Which version is current?", "", set()),
        ("What is the status of the job?", "", set()),
        # a plural that is not the phrase's head: a verb, a name, a modifier
        ("Which county shares a border with Rowan County?", "", set()),
        ("For which Thomas Rickman film did Sissy Spacek win?", "", set()),
        ("What Teen Titans spinoff series did she voice?", "", set()),
    ],
)
def test_asked_kind(question: str, head: str, kind: set[str]) -> None:
    assert lists.asked_kind(question) == (head, kind)


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("Levels:\n- low\n- medium\n- high", ["low", "medium", "high"]),
        ("| Code | Meaning |\n|---|---|\n| 0 | ok |\n| 1 | warning |\n| 2 | error |", ["0", "1", "2"]),
        ("Borg supports lz4, zstd, zlib and lzma.", ["lz4", "zstd", "zlib", "lzma"]),
        ("The server is slow, and it costs money, and nobody likes it at all.", []),
        ("Paris, Texas is a 1984 film by Wim Wenders, starring Harry Dean Stanton.", []),
        ("Add-ons: use, for example, mermaid.", []),
    ],
)
def test_enumeration(text: str, items: list[str]) -> None:
    assert lists.enumeration(text)[0] == items


def test_the_help_page_enumerating_the_algorithms_is_kept() -> None:
    q = "Which compression algorithms does it support?"
    items = [
        SetwiseItem(id="dev", title="Development › Compression", text=DEV_NOTE),
        SetwiseItem(id="faq", title="FAQ", text=FAQ),
        SetwiseItem(id="help", title="borg help compression", text=HELP),
    ]
    assert [it.text for it in items if lists.enumerates_kind(q, it.title, it.text)] == [HELP]
    out, why = _grade(q, items, [4, 3, 1])
    assert out == [4, 3, KEEP_GRADE] and "enumerates the algorithms the question asks for" in why[2]


def test_a_list_all_question_and_a_place_infobox_are_left_to_the_other_rules() -> None:
    town = "Cleveland is a town in Rowan County, North Carolina, United States."
    assert lists.enumerates_kind("Which county shares a border with Rowan County?", "Cleveland", town) is None
    assert (
        lists.enumerates_kind("How many members were in the band?", "Block B", "Members: Taeil, Zico and P.O.") is None
    )


def test_a_list_of_the_kind_about_another_subject_is_not_lifted() -> None:
    q = "What are the treatments for chronic eosinophilic leukemia?"
    other = "Standard treatments for leukemia include chemotherapy, biological therapy, radiation therapy."
    own = "Treatments for chronic eosinophilic leukemia include imatinib, hydroxyurea and interferon alfa."
    assert lists.enumerates_kind(q, "Leukemia", other) is None
    assert lists.enumerates_kind(q, "Chronic eosinophilic leukemia", own) == "treatments"


def test_a_list_of_another_kind_is_not_lifted() -> None:
    q = "Which compression algorithms does it support?"
    steps = "To install:\n1. Download the binary.\n2. Make it executable.\n3. Put it on your PATH."
    assert lists.enumerates_kind(q, "Installation", steps) is None
    out, _ = _grade(q, [SetwiseItem(id="s", title="Installation", text=steps)], [1])
    assert out == [1]


# -- comparisons --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("lz4 vs zstd?", ("lz4", "zstd")),
        ("lz4 versus zstd: which is faster?", ("lz4", "zstd")),
        ("What is the difference between lz4 and zstd compression?", ("lz4", "zstd")),
        ("How does zstd compared to lzma?", ("zstd", "lzma")),
        ("What does lz4 mean?", None),
    ],
)
def test_compared_terms(question: str, terms: tuple[str, str] | None) -> None:
    assert lists.compared_terms(question) == terms


def test_holds_both() -> None:
    assert lists.holds_both(("lz4", "zstd"), "borg help compression", HELP)
    assert not lists.holds_both(("lz4", "zstd"), "FAQ", "lz4 is fast.")


def test_a_chunk_naming_both_compared_terms_is_kept() -> None:
    items = [
        SetwiseItem(id="help", title="borg help compression", text=HELP),
        SetwiseItem(id="lz4", title="FAQ", text="lz4 is the default because it is very fast."),
    ]
    out, why = _grade("lz4 vs zstd?", items, [2, 4])
    assert out == [KEEP_GRADE, 4] and "names both 'lz4' and 'zstd'" in why[0]


def test_every_setwise_module_keys_the_eval_cache() -> None:
    # a rule's change must recompute cached grades (rules.py was missing: `admit eval` served stale grades)
    from pathlib import Path

    from admit.prune import setwise_model
    from admit.prune.setwise import SPEC

    here = Path(setwise_model.__file__).parent
    modules = {f"admit.prune.setwise_model.{p.stem}" for p in here.glob("*.py") if p.stem != "__init__"}
    assert modules <= set(SPEC.source_modules), sorted(modules - set(SPEC.source_modules))


def test_every_inside_a_clause_does_not_ask_for_a_list() -> None:
    from admit.prune.setwise_model.rules import asks_for_all

    assert not asks_for_all("How do I verify the archive after every backup?")
    assert asks_for_all("List every option of the create command.")
    assert asks_for_all("Which compression algorithms are there?")
