"""One copy of each page (:func:`admit.kb.copies.one_copy`): exact and near copies across pages found, the copy
with the truer title kept, the others' places recorded; short lines under other sections, other audiences and
other numbers are never taken for copies; a short section under several headings is stored once, with the other
headings listed."""

from __future__ import annotations

from admit.kb.copies import ALSO_UNDER_MAX, PageChunks, also_under_title, one_copy

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


def test_a_short_section_under_several_headings_is_stored_once_with_the_other_headings_listed() -> None:
    q2 = PageChunks("t", "2. My driver will not start", [("q2#intro", (), "Or a variation like…")])
    q26 = PageChunks("t", "26. How do I reload the config?", [("q26#intro", (), "Or a variation like…")])
    copies = one_copy([q26, q2])
    assert copies.dropped == {"q26#intro": "q2#intro"}
    assert copies.also_at == {"q2#intro": ("q26#intro",)}
    assert copies.also_under == {"q2#intro": ("26. How do I reload the config?",)}
    assert copies.digest(["q2#intro"]) != ""
    # the single-page FAQ holds the same answers under each question (with the wrong page title): one section once
    single = PageChunks(
        "t",
        "1. I just upgraded",
        [("faq#q2", ("2. My driver will not start",), "Or a variation like…"),
         ("faq#q26", ("26. How do I reload the config?",), "Or a variation like…")],
    )  # fmt: skip
    assert one_copy([q2, q26, single]).also_under == {"q2#intro": ("26. How do I reload the config?",)}
    # an empty template under eleven packages: one chunk, titled with every package it stands for
    tree = PageChunks(
        "t",
        "4. Packaging",
        [
            (f"p#tree/{name}", ("4.2. Package tree", name), "desc: files: size: deps:")
            for name in ("libupsclient1", "nut-cgi", "nut-snmp")
        ],
    )
    copies = one_copy([tree])
    assert copies.dropped == {"p#tree/nut-cgi": "p#tree/libupsclient1", "p#tree/nut-snmp": "p#tree/libupsclient1"}
    assert copies.also_under == {"p#tree/libupsclient1": ("nut-cgi", "nut-snmp")}
    assert (
        also_under_title("4. Packaging › 4.2. Package tree › libupsclient1", copies.also_under["p#tree/libupsclient1"])
        == "4. Packaging › 4.2. Package tree › libupsclient1 (also under: nut-cgi; nut-snmp)"
    )
    many = [f"s{k}" for k in range(ALSO_UNDER_MAX + 3)]
    assert also_under_title("T", many).endswith("; s11 and 3 more)")
    # the same section in a single-page build and its own page: no other heading to list
    same = PageChunks("t", "1.2. Clone cable", [("c#intro", (), "Or a variation like…")])
    again = PageChunks("t", "Clone cable", [("d#x", ("Clone cable",), "Or a variation like…")])
    copies = one_copy([same, again])
    assert copies.dropped == {"c#intro": "d#x"} and copies.also_under == {}  # same section: the named one kept
    # a long copy's text carries its meaning: its other places are only recorded
    long_copies = one_copy([PageChunks("t", "A. Glossary", [("a#x", (), APPENDIX)]),
                            PageChunks("t", "B. Notebooks", [("b#x", (), APPENDIX)])])  # fmt: skip
    assert long_copies.dropped == {"b#x": "a#x"} and long_copies.also_under == {}


def test_groups_are_never_crossed() -> None:
    other_tenant = PageChunks("u", "B. Glossary", [("u#intro", (), APPENDIX)])
    assert one_copy([PageChunks("t", "A. Glossary", [("t#intro", (), APPENDIX)]), other_tenant]).dropped == {}
    short = [PageChunks(g, f"{g} FAQ", [(f"{g}#intro", (), "Yes.")]) for g in ("t", "u")]
    assert one_copy(short).dropped == {}


def test_api_entries_that_name_different_functions_are_not_near_copies() -> None:
    """GTK-Doc's cairo reference (newcomer run, docs/results.md): cairo_pdf_surface_create_for_stream's entry and
    its SVG twin differ in a few words; with their parameters in the entry they passed the near-copy Jaccard and
    the PDF one was stored only as a copy of the SVG one (a PDF question found SVG text)."""
    body = (
        "Creates a {k} surface of the specified size in points to be written incrementally to the stream "
        "represented by write_func and closure. Parameters: write_func | a cairo_write_func_t to accept the "
        "output data, may be NULL to indicate a no-op write_func. closure | the closure argument for write_func. "
        "width_in_points | width of the surface, in points (1 point == 1/72.0 inch). height_in_points | height "
        "of the surface, in points (1 point == 1/72.0 inch). Returns: a pointer to the newly created surface. "
        "The caller owns the surface and should call cairo_surface_destroy() when done with it."
    )
    named_pdf = PageChunks(
        "t", "PDF Surfaces", [("pdf#f", ("f",), "cairo_pdf_surface_create_for_stream () " + body.format(k="PDF"))]
    )
    named_svg = PageChunks(
        "t", "SVG Surfaces", [("svg#f", ("f",), "cairo_svg_surface_create_for_stream () " + body.format(k="SVG"))]
    )
    assert one_copy([named_pdf, named_svg]).dropped == {}
    # the same entry in two places (a single-page build) names the same functions: still one copy
    again = PageChunks(
        "t", "All", [("all#f", ("f",), "cairo_pdf_surface_create_for_stream () " + body.format(k="PDF"))]
    )
    assert one_copy([named_pdf, again]).dropped != {}
