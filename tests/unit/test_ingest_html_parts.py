"""HTML structure the stored text keeps on any site: a table's column names in every chunk it is split across,
the lines of code inside a list item or a definition, a heading inside a list item.

On cfa7dc1 a table was stored a row a paragraph, so a chunk that began inside a long table held rows without
their column names (certbot's plugin table, Groonga's ``object_list`` properties); a list item or a definition
was one paragraph whatever it held, so a code block inside it lost its line breaks (Sphinx's ``dd`` of a
function with an example, a numbered step with its command) and a heading inside it headed nothing.
"""

from __future__ import annotations

import pytest

pytest.importorskip("lxml")

from admit.kb.chunking import chunk_document
from admit.kb.parse import parse_html

SPHINX = """<html><head><title>{title} — Proj 1.0 documentation</title></head><body>
<div class="document"><div class="body" role="main">{body}</div></div>
<div class="sphinxsidebar" role="navigation"><h3>Navigation</h3></div></body></html>"""


def _rows(n: int) -> str:
    return "".join(
        f"<tr><td><code>prop_{i}</code></td><td>The property number {i} of the object, an integer the server "
        f"sets when the object is created and never changes after it.</td></tr>"
        for i in range(n)
    )


def test_a_long_table_keeps_its_column_names_in_every_chunk() -> None:
    body = (
        '<section><h1>object_list</h1><p>Here are common properties:</p><table class="table">'
        "<thead><tr><th>Name</th><th>Description</th></tr></thead><tbody>" + _rows(60) + "</tbody></table>"
        "<p>After the table.</p></section>"
    )
    doc = parse_html(SPHINX.format(title="object_list", body=body), fallback_title="x")
    chunks = chunk_document(doc, max_tokens=200)
    with_rows = [c for c in chunks if "prop_" in c.text]
    assert len(with_rows) >= 3
    for c in with_rows:
        lines = c.text[c.text.index("| Name") :].split("\n")
        assert lines[:2] == ["| Name | Description |", "| --- | --- |"], c.text[:200]
    stored = "\n".join(c.text for c in chunks)
    assert all(f"| prop_{i} | The property number {i} of the object" in stored for i in range(60))
    assert "After the table." in stored and "Here are common properties:" in stored


def test_a_table_without_a_header_row_is_read_row_by_row() -> None:
    body = "<h1>T</h1><table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"
    doc = parse_html(SPHINX.format(title="T", body=body), fallback_title="x")
    assert doc.sections[0].paragraphs == ("a | b", "c | d")


def test_code_in_a_definition_and_in_a_list_item_keeps_its_lines() -> None:
    body = """<h1>API</h1><dl class="py function"><dt class="sig">load(path)</dt><dd><p>Loads a file:</p>
    <div class="highlight-python"><div class="highlight"><pre>cfg = load("a.toml")
print(cfg)</pre></div></div></dd></dl>
    <ol><li><p>Install it:</p><div class="highlight"><pre>pip install proj
proj --version</pre></div></li><li><p>Run <code>proj</code>.</p></li></ol>"""
    doc = parse_html(SPHINX.format(title="API", body=body), fallback_title="x")
    assert doc.sections[0].paragraphs == (
        "load(path)",
        "Loads a file:",
        'cfg = load("a.toml")\nprint(cfg)',
        "- Install it:",
        "pip install proj\nproj --version",
        "- Run proj.",
    )


def test_a_list_item_of_plain_text_is_one_paragraph_as_before() -> None:
    body = "<h1>T</h1><ul><li><p>One <b>bold</b> point.</p><ul><li>inner</li></ul></li></ul>"
    doc = parse_html(SPHINX.format(title="T", body=body), fallback_title="x")
    assert doc.sections[0].paragraphs == ("- One bold point. inner",)


def test_a_heading_row_inside_a_table_heads_the_rows_after_it_under_the_same_header() -> None:
    """jsoup's selector table: a header row, then rows, then ``<tr><th colspan="3"><h3>Combinators</h3></th></tr>``
    and more rows; on cfa7dc1 the rows after the heading were stored without the header (``E F | an F element
    descended from an E element | div a``), each row a paragraph."""
    body = """<h1>Selector</h1><table><tr><th>Pattern</th><th>Matches</th><th>Example</th></tr>
    <tr><td><code>*</code></td><td>any element</td><td><code>*</code></td></tr>
    <tr><td colspan="3"><h3>Combinators</h3></td></tr>
    <tr><td><code>E F</code></td><td>an F element descended from an E element</td><td><code>div a</code></td></tr>
    </table>"""
    doc = parse_html(SPHINX.format(title="Selector", body=body), fallback_title="x")
    assert [(s.headings, s.paragraphs) for s in doc.sections] == [
        ((), ("| Pattern | Matches | Example |\n| --- | --- | --- |\n| * | any element | * |",)),
        (
            ("Combinators",),
            (
                "| Pattern | Matches | Example |\n| --- | --- | --- |\n"
                "| E F | an F element descended from an E element | div a |",
            ),
        ),
    ]
