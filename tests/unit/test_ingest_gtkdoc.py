"""A GTK-Doc page (libcairo2-doc, GLib, GTK) is read as its reference: the page's own title, no summary tables
of the page's own items, a function's ``Parameters`` and ``Returns`` inside its section, index pages left out.

The page is GTK-Doc 1.27's markup cut down to the elements that matter (newcomer run on libcairo2-doc 1.16.0,
docs/results.md): on 34523fe its title was ``cairo_t: Cairo: A Vector Graphics Library``, the summary tables
were stored as text (``void | cairo_save ()``) and each ``Parameters`` table was a chunk of its own that named
no function (``cr | a cairo context | dashes | an array ...``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("lxml")

from admit.kb.chunking import chunk_document
from admit.kb.parse import parse_html

HEAD = """<html><head><title>{title}: Cairo: A Vector Graphics Library</title>
<meta name="generator" content="DocBook XSL Stylesheets V1.79.1">
<link rel="home" href="index.html" title="Cairo: A Vector Graphics Library">
<meta name="generator" content="GTK-Doc V1.27 (XML mode)"></head><body>
<table class="navigation" id="top" width="100%"><tr><td class="shortcuts"><a href="#" class="shortcut">Top</a></td>
<td><a accesskey="h" href="index.html"><img src="home.png" alt="Home"></a></td></tr></table>
"""

PAGE = (
    HEAD.format(title="cairo_t")
    + """<div class="refentry"><a name="cairo-cairo-t"></a><div class="titlepage"></div>
<div class="refnamediv"><table width="100%"><tr><td valign="top">
<h2><span class="refentrytitle"><a name="cairo-cairo-t.top_of_page"></a>cairo_t</span></h2>
<p>cairo_t — The cairo drawing context</p></td><td class="gallery_image" valign="top" align="right"></td></tr>
</table></div>
<div class="refsect1"><a name="cairo-cairo-t.functions"></a><h2>Functions</h2>
<div class="informaltable"><table class="informaltable" width="100%" border="0"><tbody>
<tr><td class="function_type"><span class="returnvalue">void</span></td>
<td class="function_name"><a class="link" href="cairo-cairo-t.html#cairo-save">cairo_save</a> ()</td></tr>
<tr><td class="function_type"><span class="returnvalue">void</span></td>
<td class="function_name"><a class="link" href="cairo-cairo-t.html#cairo-set-dash">cairo_set_dash</a> ()</td></tr>
</tbody></table></div></div>
<div class="refsect1"><a name="cairo-cairo-t.other"></a><h2>Types and Values</h2>
<div class="informaltable"><table class="informaltable" width="100%" border="0"><tbody>
<tr><td class="typedef_keyword">typedef</td>
<td class="function_name"><a class="link" href="cairo-cairo-t.html#cairo-t">cairo_t</a></td></tr>
</tbody></table></div></div>
<div class="refsect1"><a name="cairo-cairo-t.description"></a><h2>Description</h2>
<p>cairo_t is the main object used when drawing with cairo.</p></div>
<div class="refsect1"><a name="cairo-cairo-t.functions_details"></a><h2>Functions</h2>
<div class="refsect2"><a name="cairo-set-dash"></a><h3>cairo_set_dash ()</h3>
<pre class="programlisting">void
cairo_set_dash (cairo_t *cr, const double *dashes, int num_dashes, double offset);</pre>
<p>Sets the dash pattern to be used by cairo_stroke(). Typical usage:</p>
<div class="informalexample"><table class="listing_frame" border="0"><tbody><tr>
<td class="listing_lines" align="right"><pre>1
2</pre></td><td class="listing_code"><pre class="programlisting">double dashes[] = {4.0, 1.0};
cairo_set_dash (cr, dashes, 2, 0);</pre></td></tr></tbody></table></div>
<div class="refsect3"><a name="cairo-set-dash.parameters"></a><h4>Parameters</h4>
<div class="informaltable"><table class="informaltable" width="100%" border="0"><tbody>
<tr><td class="parameter_name"><p>cr</p></td><td class="parameter_description"><p>a cairo context</p></td>
<td class="parameter_annotations"> </td></tr>
<tr><td class="parameter_name"><p>dashes</p></td>
<td class="parameter_description"><p>an array specifying alternate lengths of on and off stroke portions</p></td>
<td class="parameter_annotations"> </td></tr></tbody></table></div></div>
<p class="since">Since: 1.0</p></div>
<div class="refsect2"><a name="cairo-get-dash-count"></a><h3>cairo_get_dash_count ()</h3>
<p>This function returns the length of the dash array in cr.</p>
<div class="refsect3"><a name="cairo-get-dash-count.returns"></a><h4>Returns</h4>
<p>the length of the dash array, or 0 if no dash array set.</p></div></div></div></div></body></html>"""
)

INDEX = (
    HEAD.format(title="Index")
    + """<div class="index"><div class="titlepage"><h1 class="title"><a name="index-all"></a>Index</h1></div>
<div class="index"><div class="indexdiv"><h3>A</h3><dl>
<dt>cairo_arc, <a class="indexterm" href="cairo-Paths.html#cairo-arc">cairo_arc ()</a></dt>
<dt>cairo_arc_negative, <a class="indexterm" href="cairo-Paths.html#cairo-arc-negative">cairo_arc_negative ()</a></dt>
</dl></div></div></div></body></html>"""
)


def test_gtkdoc_page_title_is_its_own_and_summaries_are_not_text() -> None:
    doc = parse_html(PAGE, fallback_title="cairo-cairo-t")
    assert doc.title == "cairo_t"
    assert doc.site.get("generator") == "gtk-doc"
    assert doc.site.get("site") == "Cairo: A Vector Graphics Library"
    text = "\n".join(p for s in doc.sections for p in s.paragraphs)
    assert "void | cairo_save" not in text and "typedef | cairo_t" not in text  # the page's own index
    assert "cairo_t — The cairo drawing context" in text  # the page's one-line summary stays
    assert all(s.headings[:1] != ("cairo_t",) for s in doc.sections)  # the title is no heading of a path
    assert all(not s.headings or s.headings[0] == "Functions" for s in doc.sections)  # no empty summary heading
    # the purpose line and the description are one section (a chunk of the purpose alone crowded others out)
    assert doc.sections[0].headings == ()
    assert doc.sections[0].paragraphs[:2] == (
        "cairo_t — The cairo drawing context",
        "cairo_t is the main object used when drawing with cairo.",
    )


def test_gtkdoc_parameters_and_returns_stay_with_their_function() -> None:
    chunks = chunk_document(parse_html(PAGE, fallback_title="cairo-cairo-t"))
    by_heading = {c.headings: c.text for c in chunks}
    assert ("Functions", "cairo_set_dash ()", "Parameters") not in by_heading
    dash = by_heading[("Functions", "cairo_set_dash ()")]
    assert "Sets the dash pattern" in dash
    assert "double dashes[] = {4.0, 1.0};\ncairo_set_dash (cr, dashes, 2, 0);" in dash  # code keeps its lines
    assert "1\n2" not in dash and "1 2 |" not in dash  # and loses the listing's line numbers
    assert "Parameters: cr | a cairo context" in dash
    assert "dashes | an array specifying alternate lengths" in dash
    assert not any(line.rstrip().endswith("|") for line in dash.splitlines())  # no empty annotation cell
    count = by_heading[("Functions", "cairo_get_dash_count ()")]
    assert "Returns: the length of the dash array" in count


def test_docbook_index_page_is_an_index() -> None:
    assert parse_html(INDEX, fallback_title="index-all").page_kind == "index"
