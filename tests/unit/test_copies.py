"""One copy of each page (:func:`admit.kb.copies.one_copy`): exact and near copies across pages found, the copy
with the truer title kept, the others' places recorded; short lines under other sections, other audiences and
other numbers are never taken for copies."""

from __future__ import annotations

from admit.kb.copies import PageChunks, one_copy

APPENDIX = (
    "A notebook is a folder of plain text notes that Quill indexes together; each note keeps its own file name, "
    "and moving a note between notebooks moves the file on disk as well."
)


def test_an_appendix_in_two_guides_and_a_single_page_is_kept_once_where_its_page_is_about_it() -> None:
    single = PageChunks(
        "t",
        "1. Getting started",  # a single-page build's title: its first section's, wrong for the appendix
        [
            ("all#intro", (), "Open a folder of notes with Quill and it becomes a notebook."),
            ("all#a-glossary", ("A. Glossary",), APPENDIX),
        ],
    )
    user = PageChunks("t", "A. Glossary", [("user/glossary#intro", (), APPENDIX)])
    dev = PageChunks("t", "B. Glossary", [("dev/glossary#intro", (), APPENDIX.replace("  ", " "))])
    copies = one_copy([single, user, dev])
    assert copies.dropped == {"all#a-glossary": "dev/glossary#intro", "user/glossary#intro": "dev/glossary#intro"}
    assert copies.also_at == {"dev/glossary#intro": ("all#a-glossary", "user/glossary#intro")}
    # the same answer whatever the order of the pages
    assert one_copy([dev, single, user]) == copies
    assert copies.of_page(["all#intro", "all#a-glossary"]) == (("all#a-glossary",), {})
    assert copies.digest(["all#intro"]) == "" and copies.digest(["dev/glossary#intro"]) != ""


def test_a_near_copy_is_a_copy_but_not_one_with_other_numbers() -> None:
    edited = APPENDIX.replace("as well.", "as well, at once.")
    pages = [PageChunks("t", "One", [("a#x", (), APPENDIX)]), PageChunks("t", "Two", [("b#x", (), edited)])]
    assert one_copy(pages).dropped == {"a#x": "b#x"}  # the longer text is kept
    numbered = APPENDIX.replace("a folder", "3 folders")
    other = [PageChunks("t", "One", [("a#x", (), APPENDIX.replace("a folder", "2 folders"))])]
    assert one_copy([*other, PageChunks("t", "Two", [("b#x", (), numbered)])]).dropped == {}


def test_a_short_line_under_two_sections_is_two_chunks_and_groups_are_never_crossed() -> None:
    q2 = PageChunks("t", "2. My driver will not start", [("q2#intro", (), "Or a variation like…")])
    q26 = PageChunks("t", "26. How do I reload the config?", [("q26#intro", (), "Or a variation like…")])
    assert one_copy([q2, q26]).dropped == {}
    same = PageChunks("t", "1.2. Clone cable", [("c#intro", (), "Or a variation like…")])
    again = PageChunks("t", "Clone cable", [("d#x", ("Clone cable",), "Or a variation like…")])
    assert one_copy([same, again]).dropped == {"c#intro": "d#x"}  # same section: the named one kept
    other_tenant = PageChunks("u", "B. Glossary", [("u#intro", (), APPENDIX)])
    assert one_copy([PageChunks("t", "A. Glossary", [("t#intro", (), APPENDIX)]), other_tenant]).dropped == {}
