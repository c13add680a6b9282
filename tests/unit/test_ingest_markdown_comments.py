"""Markdown HTML comments are no text: a renderer never shows them, so ingest must not store them either."""

from __future__ import annotations

from admit.kb.ingest import chunk_document, parse_markdown


def _text(md: str) -> str:
    doc = parse_markdown(md, fallback_title="page")
    return "\n".join(c.text for c in chunk_document(doc))


def test_html_comments_are_not_stored_but_code_keeps_them() -> None:
    md = (
        "# Install\n\n"
        "<!-- TODO: rewrite this section before the release -->\n\n"
        "Run the installer. <!-- inline note for editors --> Then restart.\n\n"
        "<!--\n"
        "A block comment over\n"
        "several lines.\n"
        "-->\n\n"
        "## Configure <!-- heading note -->\n\n"
        "Write `<!-- keep me -->` in the template to hide a line.\n\n"
        "```html\n<!-- fenced comment stays -->\n<p>x</p>\n```\n"
    )
    doc = parse_markdown(md, fallback_title="page")
    text = _text(md)
    assert "TODO" not in text and "inline note" not in text and "several lines" not in text
    assert "heading note" not in text and "heading note" not in " ".join(h for s in doc.sections for h in s.headings)
    assert "Run the installer.  Then restart." in text or "Run the installer. Then restart." in text
    assert "`<!-- keep me -->`" in text  # inline code shows the comment as text
    assert "<!-- fenced comment stays -->" in text  # so does a code fence
    assert [s.headings for s in doc.sections] == [(), ("Configure",)]


def test_a_comment_alone_on_a_line_ends_the_paragraph() -> None:
    doc = parse_markdown("First part.\n<!-- editor's note -->\nSecond part.\n", fallback_title="p")
    assert [p for s in doc.sections for p in s.paragraphs] == ["First part.", "Second part."]


def test_an_unclosed_comment_does_not_hide_the_rest_of_the_page() -> None:
    text = _text("# T\n\nType <!-- to open a comment in HTML.\n\nThe rest of the page.\n")
    assert "The rest of the page." in text and "Type <!-- to open" in text
