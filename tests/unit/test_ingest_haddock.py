"""A Haddock site (Debian's ``libghc-*-doc``) is read as its modules' documentation: each declaration a section
named by what it declares, no package menu, contents, synopsis, instance lists or ``Source`` links as text, the
package's version (not Haddock's), and its index, highlighted source and Hoogle file not ingested as pages.

The page is Haddock 2.25's markup cut down to the elements that matter (newcomer run on libghc-aeson-doc
2.0.3.0, docs/results.md): on 34523fe the site's version was Haddock's own (2.25.1), the synopsis and the
instance lists were text (Data.Aeson: 230 chunks, 219,000 characters), and no chunk was titled by a declaration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lxml")

from admit.kb.chunking import chunk_document
from admit.kb.docsite import SiteFilter
from admit.kb.parse import parse_html

PAGE = """<html><head><title>Data.Aeson</title><link href="linuwial.css" rel="stylesheet" type="text/css">
<script src="haddock-bundle.min.js" async="async" type="text/javascript"></script></head><body>
<div id="package-header"><span class="caption">aeson-2.0.3.0: Fast JSON parsing and encoding</span>
<ul class="links" id="page-menu"><li><a href="src/Data.Aeson.html">Source</a></li><li><a href="index.html">Contents</a>
</li><li><a href="doc-index.html">Index</a></li></ul></div>
<div id="content"><div id="module-header"><table class="info"><tr><th>License</th><td>BSD3</td></tr></table>
<p class="caption">Data.Aeson</p></div>
<div id="table-of-contents"><div id="contents-list"><p class="caption">Contents</p><ul>
<li><a href="#g:1">Encoding and decoding</a></li><li><a href="#g:2">Inspecting values</a></li></ul></div></div>
<div id="description"><p class="caption">Description</p><div class="doc">
<p>Types and functions for working efficiently with JSON data.</p></div></div>
<div id="synopsis"><details id="syn"><summary>Synopsis</summary><ul class="details-toggle">
<li class="src short"><a href="#v:decode">decode</a> :: FromJSON a =&gt; ByteString -&gt; Maybe a</li>
<li class="src short"><a href="#v:withObject">withObject</a> :: String -&gt; Parser a</li></ul></details></div>
<div id="interface"><a href="#g:1" id="g:1"><h1>Encoding and decoding</h1></a>
<div class="top"><p class="src"><a id="v:decode" class="def">decode</a> :: FromJSON a =&gt; ByteString -&gt; Maybe a
<a href="src/Data.Aeson.html#decode" class="link">Source</a> <a href="#v:decode" class="selflink">#</a></p>
<div class="doc"><p>Efficiently deserialize a JSON value from a lazy ByteString.</p></div></div>
<div class="top"><p class="src"><span class="keyword">data</span> <a id="t:Value" class="def">Value</a>
<a href="src/Data.Aeson.Types.Internal.html#Value" class="link">Source</a></p>
<div class="doc"><p>A JSON value represented as a Haskell value.</p></div>
<div class="subs instances"><h4 class="instances details-toggle-control details-toggle">Instances</h4>
<details id="i:Value" open="open"><summary class="hide-when-js-enabled">Instances details</summary><table>
<tr><td class="src clearfix"><span class="inst-left">Arbitrary Value</span></td>
<td class="doc"><p>Since 2.0.3.0</p></td></tr>
<tr><td colspan="2"><details id="i:id:Value:Arbitrary:1"><summary>Instance details</summary>
<p>Defined in Data.Aeson.Types.Internal</p><div class="subs methods"><p class="caption">Methods</p>
<p class="src"><a href="#v:arbitrary">arbitrary</a> :: Gen Value</p></div></details></td></tr></table></details></div>
</div>
<a href="#g:2" id="g:2"><h1>Inspecting values</h1></a>
<div class="top"><p class="src"><a id="v:withObject" class="def">withObject</a> :: String -&gt; Parser a</p>
<div class="doc"><p>withObject name f value applies f to the Object when value is an Object.</p>
<h4 class="subheading details-toggle-control details-toggle">Examples</h4>
<details><pre>withObject "Person" parsePerson</pre></details></div></div>
</div></div>
<div id="footer"><p>Produced by <a href="http://www.haskell.org/haddock/">Haddock</a> version 2.25.1</p></div>
</body></html>"""


def test_haddock_declarations_are_sections_and_its_chrome_is_no_text() -> None:
    doc = parse_html(PAGE, fallback_title="Data-Aeson")
    assert doc.title == "Data.Aeson"
    assert doc.site == {"generator": "haddock", "site": "aeson", "version": "2.0.3.0"}  # not Haddock's 2.25.1
    chunks = chunk_document(doc)
    by_heading = {c.headings: c.text for c in chunks}
    decode = by_heading[("Encoding and decoding", "decode")]
    assert decode.startswith("decode :: FromJSON a => ByteString -> Maybe a")
    assert "Efficiently deserialize" in decode and "Source" not in decode
    value = by_heading[("Encoding and decoding", "Value")]
    assert "A JSON value represented" in value and "Arbitrary" not in value and "Instance details" not in value
    with_object = by_heading[("Inspecting values", "withObject")]
    assert "Examples" in with_object and 'withObject "Person" parsePerson' in with_object  # an example stays
    text = "\n".join(c.text for c in chunks)
    assert "Types and functions for working efficiently with JSON data." in text  # the module's description
    assert "License | BSD3" not in text  # its header's boilerplate (the same on every module) is not
    assert not text.startswith("Data.Aeson") and "Description\n" not in text  # nor its captions
    assert "Fast JSON parsing" not in text and "Synopsis" not in text and "Contents" not in text
    assert "Produced by" not in text


def test_haddock_index_source_and_hoogle_files_are_not_pages(tmp_path: Path) -> None:
    site = tmp_path / "html"
    (site / "src").mkdir(parents=True)
    for name in ("haddock-bundle.min.js", "Data-Aeson.html", "doc-index.html", "doc-index-A.html", "aeson.txt"):
        (site / name).write_text("x")
    (site / "src" / "Data.Aeson.html").write_text("<pre>module Data.Aeson</pre>")
    (site / "src" / "highlight.js").write_text("x")
    f = SiteFilter()

    def kind(rel: str) -> str | None:
        return f.kind(site / rel, rel, in_folder=True)

    assert kind("Data-Aeson.html") is None
    assert kind("doc-index.html") == kind("doc-index-A.html") == "search_index_pages"
    assert kind("src/Data.Aeson.html") == "haddock_source"
    assert kind("aeson.txt") == "site_assets"
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "src" / "page.html").write_text("x")
    (plain / "notes.txt").write_text("x")
    assert SiteFilter().kind(plain / "src" / "page.html", "src/page.html", in_folder=True) is None
    assert SiteFilter().kind(plain / "notes.txt", "notes.txt", in_folder=True) is None
