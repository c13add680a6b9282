"""Issue 46, the near misses of ``../shared/data``: a question that names a page of the knowledge base, answered from
other pages, is not "answered" (``admit adapt`` keeps the page names, :mod:`admit.answerability.pages`). Each test
fails on 34523fe (no such module)."""

from __future__ import annotations

from admit.answerability import assess
from admit.answerability.adaptation import Adaptation
from admit.answerability.pages import kb_page_names, named_pages, page_check, page_name

# a small knowledge base of entity pages, as a Wikipedia-like one is: each chunk's title names its page
PAGES = [
    ("Moving Pictures (album)", "Moving Pictures is the eighth studio album by the Canadian rock band Rush, 1981."),
    ("Rush (band)", "Rush was a Canadian rock band formed in Toronto in 1968."),
    ("Permanent Waves", "Permanent Waves is a studio album by a Canadian rock band; Moving Pictures came in 1981."),
    ("Toronto", "Toronto is the capital city of the Canadian province of Ontario."),
    ("North York", "North York is a district of Toronto."),
    *[(f"Album {i}", f"Album {i} is a record by a rock band from Canada, released in {1970 + i}.") for i in range(60)],
]
Q = "Which Canadian rock band released the studio album Moving Pictures in 1981?"


def _ad(stale: str = "") -> Adaptation:
    return Adaptation(
        thresholds={}, made="2026-12-07T20:00:00+00:00", chunks=len(PAGES), stale=stale, pages=kb_page_names(PAGES)
    )


def test_page_names_are_the_titles_of_one_page_s_subject() -> None:
    assert page_name("Moving Pictures (album)") == "moving pictures"
    assert page_name("The Lord of the Rings") == "the lord of the rings"
    assert page_name("") == ""
    names = kb_page_names(PAGES)
    assert {"moving pictures", "permanent waves", "north york"} <= names
    # one common English word alone names no page a question asks for by name ("Rush", "Toronto", "President")
    assert not {"rush", "toronto"} & names
    # a name held by more than 5% of the chunks is the knowledge base's topic, not one page's subject
    topic = [("MkDocs", "MkDocs builds sites."), *[(f"Page {i}", f"MkDocs page {i} text.") for i in range(30)]]
    assert "mkdocs" not in kb_page_names(topic)
    assert "page 3" in kb_page_names(topic)


def test_a_page_is_named_only_as_a_name() -> None:
    names = kb_page_names(PAGES)
    assert named_pages(Q, names) == ("moving pictures",)
    assert named_pages("Which album did Rush release after Permanent Waves and Moving Pictures?", names) == (
        "permanent waves",
        "moving pictures",
    )
    # written in lower case it is words, not the page's name
    assert named_pages("Why are moving pictures made in north york?", names) == ()
    assert named_pages("Which bands come from North York?", names) == ("north york",)
    assert named_pages(Q, frozenset()) == ()


def test_the_check_reads_the_admitted_and_the_retrieved_pages() -> None:
    names = kb_page_names(PAGES)
    assert page_check(Q, names, ["Moving Pictures (album)"], ["Rush (band)"]).missing == ()
    held = page_check(Q, names, ["Rush (band)"], ["Rush (band)", "Moving Pictures (album)"])
    assert held.missing == ("moving pictures",) and held.absent == ()
    gone = page_check(Q, names, ["Rush (band)"], ["Rush (band)", "Toronto"])
    assert gone.absent == ("moving pictures",)


def test_a_question_naming_a_page_no_candidate_is_from_is_not_answered() -> None:
    """The gold-removed list of ``../shared/data``: the page the question names is gone, its neighbours say the
    question's words ("Canadian rock band", "studio album", "Moving Pictures", "1981"): "answered" on main."""
    near = [PAGES[1], PAGES[2]]
    texts = [f"{t}\n{x}" for t, x in near]
    titles = [t for t, _ in near]
    shipped = assess(Q, texts, pool=texts, titles=titles, pool_titles=titles)
    assert shipped.state == "answered"
    adapted = assess(Q, texts, pool=texts, adaptation=_ad(), titles=titles, pool_titles=titles)
    assert adapted.state == "not_answered"
    assert "names the page moving pictures and no retrieved candidate is from it" in adapted.reason
    # the page was retrieved but not admitted: unsure, not answered
    pool = [*titles, PAGES[0][0]]
    assert assess(Q, texts, pool=texts, adaptation=_ad(), titles=titles, pool_titles=pool).state == "unsure"
    # the page admitted: the rule says nothing
    kept = [PAGES[0], PAGES[1]]
    kt = [f"{t}\n{x}" for t, x in kept]
    ok = assess(Q, kt, pool=kt, adaptation=_ad(), titles=[t for t, _ in kept], pool_titles=[t for t, _ in kept])
    assert ok.state == "answered"
    # a stale adaptation, or no titles given, changes nothing
    stale = assess(Q, texts, pool=texts, adaptation=_ad("changed"), titles=titles, pool_titles=titles)
    assert stale.state == "answered"
    assert assess(Q, texts, pool=texts, adaptation=_ad()).state == "answered"


def test_the_page_names_are_stored_with_the_adaptation() -> None:
    ad = _ad()
    back = Adaptation.from_json(ad.to_json())
    assert back == ad and "moving pictures" in back.pages
    assert ad.as_dict()["pages"] == len(ad.pages)
    old = ad.to_json().replace('"pages"', '"pages_unknown"')
    assert Adaptation.from_json(old).pages == frozenset()


def test_admit_adapt_show_names_the_page_rule() -> None:
    from admit.cli.adapt import summary

    shown = summary(_ad())
    assert f"names one of this knowledge base's {len(_ad().pages):,} pages" in shown
    assert "pages" not in summary(Adaptation(thresholds={}, made="2026-12-07T20:00:00+00:00", chunks=3))
