"""Man pages are documentation: libcurl4-doc ships libcurl's whole reference (482 option and function pages) as
``man3/*.3.gz`` roff only, and a folder ingest skipped all of them as "unsupported formats": 10 of 10 questions
about libcurl options were then "answered" from the 43 Markdown files left, none with its answer. The roff is now
read into sections (``.SH``/``.SS`` headings, ``.TP`` tags beside their text, no-fill blocks kept as lines, font
escapes dropped), a ``.so`` stub is left out as a redirect, the report names the suffixes it still skipped and the
pages stored only as other pages' copies."""

from __future__ import annotations

import gzip
from pathlib import Path

from click.testing import CliRunner

from admit.kb import KnowledgeBase
from admit.kb.parse import format_of, parse_document

PAGE = r""".\" **************************************************************************
.\" * a licence banner in comments: not text
.\" **************************************************************************
.TH CURLOPT_TIMEOUT 3 "January 02, 2023" "libcurl 7.88.1" "curl_easy_setopt options"
.SH NAME
CURLOPT_TIMEOUT \- maximum time the transfer is allowed to complete
.SH SYNOPSIS
.nf
#include <curl/curl.h>

CURLcode curl_easy_setopt(CURL *handle, CURLOPT_TIMEOUT, long timeout);
.fi
.SH DESCRIPTION
Pass a long as parameter containing \fItimeout\fP - the maximum time in seconds
that you allow the libcurl transfer operation to take.
.IP "Normally"
name lookups can take a considerable time.
.SS "Related options"
.TP
.B CURLOPT_CONNECTTIMEOUT
Only the connection phase\(emnot the whole transfer.
.TP
.BR CURLOPT_LOW_SPEED_LIMIT (3)
Abort a transfer that is too slow.
.de XX
.B this macro body is never text
..
.SH "SEE ALSO"
.BR CURLOPT_CONNECTTIMEOUT "(3), "
"""


def test_a_man_page_is_read_into_its_sections() -> None:
    doc = parse_document(PAGE, "man", fallback_title="x")
    assert doc.title == "CURLOPT_TIMEOUT(3)"
    assert doc.front_matter == {"version": "7.88.1"} and doc.site["generator"] == "man"
    by_heading = {s.headings: s.paragraphs for s in doc.sections}
    assert by_heading[("Name",)] == ("CURLOPT_TIMEOUT - maximum time the transfer is allowed to complete",)
    synopsis = by_heading[("Synopsis",)][0]
    assert synopsis.splitlines() == [
        "#include <curl/curl.h>",
        "",
        "CURLcode curl_easy_setopt(CURL *handle, CURLOPT_TIMEOUT, long timeout);",
    ]
    description = by_heading[("Description",)]
    assert description[0] == (
        "Pass a long as parameter containing timeout - the maximum time in seconds that you allow the libcurl "
        "transfer operation to take."
    )
    assert description[1] == "Normally: name lookups can take a considerable time."
    assert by_heading[("Description", "Related options")] == (
        "CURLOPT_CONNECTTIMEOUT: Only the connection phase\u2014not the whole transfer.",
        "CURLOPT_LOW_SPEED_LIMIT(3): Abort a transfer that is too slow.",
    )
    assert by_heading[("See also",)] == ("CURLOPT_CONNECTTIMEOUT(3),",)
    text = " ".join(p for s in doc.sections for p in s.paragraphs)
    assert "licence banner" not in text and "macro body" not in text and "\\f" not in text


def test_man_page_names_and_what_is_not_roff() -> None:
    assert [format_of(n) for n in ("ls.1", "SSL_new.3ssl", "curl.1", "guide.md", "notes.txt")] == [
        "man",
        "man",
        "man",
        "markdown",
        "text",
    ]
    assert format_of("example.c") is None and format_of("README") is None and format_of("archive.tar") is None
    plain = parse_document("Release notes\n\nNothing in roff here.\n", "man", fallback_title="notes")
    assert plain.title == "Release notes" and plain.sections[0].paragraphs == ("Nothing in roff here.",)
    stub = parse_document(".so man3/curl_easy_setopt.3\n", "man", fallback_title="x")
    assert stub.page_kind == "redirect" and stub.sections == ()


def _man_tree(tmp_path: Path) -> Path:
    root = tmp_path / "share"
    man3 = root / "man" / "man3"
    man3.mkdir(parents=True)
    (man3 / "CURLOPT_TIMEOUT.3.gz").write_bytes(gzip.compress(PAGE.encode()))
    (man3 / "curl_easy_setopt.3").write_text(
        PAGE.replace("CURLOPT_TIMEOUT", "curl_easy_setopt").replace("maximum time", "set options"), "utf-8"
    )
    (man3 / "CURLOPT_TIMEOUT_MS.3").write_text(".so man3/CURLOPT_TIMEOUT.3\n", "utf-8")
    ex = root / "doc" / "examples"
    ex.mkdir(parents=True)
    for name in ("simple.c", "multi.c", "Makefile.am"):
        (ex / name).write_text("int main(void) { return 0; }\n", "utf-8")
    return root


def test_a_folder_of_man_pages_is_ingested_and_the_report_names_what_it_skipped(tmp_path: Path) -> None:
    from admit.cli import main

    root = _man_tree(tmp_path)
    kb = KnowledgeBase("memory://", embedder="fake:16")
    rep = kb.ingest([root], tenant="t")
    sources = {s.source_id for s in kb.store.list_sources()}
    assert sources == {"man/man3/CURLOPT_TIMEOUT", "man/man3/curl_easy_setopt"}
    assert [Path(p).name for p, kind in rep.left_out] == ["CURLOPT_TIMEOUT_MS.3"]  # the .so stub
    assert rep.skipped_line() == "skipped 3 file(s) of unsupported formats (2 .c, 1 .am)"
    rows = kb.store.get_source_chunks("man/man3/CURLOPT_TIMEOUT", "t")
    assert any(r.title == "CURLOPT_TIMEOUT(3) › Description" and "maximum time in seconds" in r.text for r in rows)
    assert {r.version for r in rows} == {"7.88.1"}
    out = CliRunner().invoke(main, ["ingest", str(root), "--kb", str(tmp_path / "m.kb"), "--access", "tenant:t"])
    assert out.exit_code == 0, out.output
    assert "skipped 3 file(s) of unsupported formats (2 .c, 1 .am)" in out.output


def test_a_page_stored_only_as_copies_of_another_is_named(tmp_path: Path) -> None:
    from admit.cli import main

    root = tmp_path / "man3"
    root.mkdir()
    (root / "a.3").write_text(PAGE, "utf-8")
    (root / "b.3").write_text(PAGE, "utf-8")  # the same page under a second name: every chunk a copy
    kb = KnowledgeBase("memory://", embedder="fake:16")
    rep = kb.ingest([root], tenant="t")
    assert rep.sources_added == 1 and rep.sources_unchanged == 1
    assert [Path(p).name for p in rep.copies_only] == ["b.3"]
    assert kb.ingest([root], tenant="t").sources_unchanged == 2  # the same on a second run
    out = CliRunner().invoke(main, ["ingest", str(root), "--kb", str(tmp_path / "c.kb"), "--access", "tenant:t"])
    assert "1 page stored only as copies" in out.output and "b.3" in out.output


MDOC = r""".\" $File: file.man,v 1.147 $
.Dd October 26, 2022
.Dt FILE 1
.Os
.Sh NAME
.Nm file
.Nd determine file type
.Sh SYNOPSIS
.Nm
.Bk -words
.Op Fl bcdE
.Op Fl Fl mime-type
.Op Fl e Ar testname
.Ek
.Sh DESCRIPTION
.Nm
tests each argument, as
.Xr stat 2
reports it; the words
.Dq text
and
.Dq data .
.Bl -tag -width indent
.It Fl b , Fl Fl brief
Do not prepend filenames to output lines.
.El
.Bd -literal -offset indent
file -b /etc/passwd
file -i x.png
.Ed
"""


def test_an_mdoc_page_is_read_with_its_macros_as_text() -> None:
    """BSD's mdoc pages (file, dash, OpenSSH's): ``.Sh`` headings and inline macros, not only ``man``'s."""
    doc = parse_document(MDOC, "man", fallback_title="x")
    assert doc.title == "FILE(1)"
    by_heading = {s.headings: s.paragraphs for s in doc.sections}
    assert by_heading[("Name",)] == ("file - determine file type",)
    assert by_heading[("Synopsis",)] == ("file [-bcdE] [--mime-type] [-e testname]",)
    assert by_heading[("Description",)] == (
        "file tests each argument, as stat(2) reports it; the words \u201ctext\u201d and \u201cdata\u201d.",
        "-b, --brief: Do not prepend filenames to output lines.",
        "file -b /etc/passwd\nfile -i x.png",
    )


def test_a_macro_defined_inside_a_conditional_ends_at_its_indented_dot() -> None:
    """Asciidoctor's man pages (perf's) define ``.am URL`` inside ``.if \\n[.g] \\{\\`` and end it with ``.  .``:
    read as ``..``, or the whole page was skipped as the macro's body."""
    page = (
        '.TH "PERF\\-KWORK" "1" "2026-09-07" "perf" "perf Manual"\n'
        ".if \\n[.g] \\{\\\n.  am URL\n.    ad l\n.  .\n.\\}\n"
        '.SH "NAME"\nperf-kwork \\- Tool to trace kernel work\n'
    )
    doc = parse_document(page, "man", fallback_title="x")
    assert doc.title == "PERF-KWORK(1)"
    assert [(s.headings, s.paragraphs) for s in doc.sections] == [
        (("Name",), ("perf-kwork - Tool to trace kernel work",))
    ]
