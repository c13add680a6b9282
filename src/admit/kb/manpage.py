"""Man pages: the roff source of ``man(7)`` and ``mdoc(7)`` pages (``curl_easy_setopt.3``, ``file.1.gz``) read
into sections.

Debian's ``-doc`` packages ship much of their reference as man pages only (libcurl's 480 option and function pages,
a library's ``man3``), so a folder of them is documentation like a built site. This reader knows the ``man``
macro package, not all of roff: ``.TH`` gives the title (``CURLOPT_URL(3)``) and the version where its source
field names one (``libcurl 7.88.1``); ``.SH`` and ``.SS`` are the headings; ``.TP`` and ``.IP`` tags are kept with
their paragraph (an option's name beside what it does); ``.nf``/``.fi`` and ``.EX``/``.EE`` keep their lines
(a synopsis, an example); font and size escapes are dropped and the common character escapes read (``\\-`` as
``-``, ``\\(em`` as a dash). A page that is only ``.so other.3`` is a redirect, as an HTML refresh is; a macro
definition, a conditional or another request is left out; a file with no request at all is plain text.

BSD's ``mdoc`` pages (``file``, ``dash``, OpenSSH's) are read too: ``.Dt`` is the title, ``.Sh``/``.Ss`` the
headings, ``.It`` a list item's tag, ``.Bd -literal`` a block of lines, and the inline macros are their text
(``.Op Fl e Ar testname`` reads ``[-e testname]``, ``.Xr stat 2`` reads ``stat(2)``, ``.Nm`` the page's name).

Linear in the page: every line is read once and each pattern is RE2 (:mod:`admit._linear`).
"""

from __future__ import annotations

from admit import _linear

__all__ = ["is_man_name", "parse_man"]

_MAN_SUFFIX = _linear.compile(r"\.[1-9][a-z0-9]{0,6}$", name="man.suffix")
# \f fonts (\fB, \f(CW, \f[B]), \s sizes (\s-1, \s+2, \s0, \s[+1]), \* strings, \n number registers, \k, \h,
# \v, \w, \o motions: dropped. Named characters \(xx and \[name] are read through _CHARS.
_ESCAPE = _linear.compile(
    r"\\(?:f(?:\([^\s]{2}|\[[^\]\s]{0,20}\]|.)"
    r"|s(?:\[[^\]\s]{0,8}\]|[-+]?\d{1,2})"
    r"|[*n](?:\([^\s]{2}|\[[^\]\s]{0,30}\]|.)"
    r"|[hvwokHSLlDbxXNRYZ]'[^'\n]{0,60}'"
    r"|\((..)"
    r"|\[([^\]\s]{1,30})\]"
    r"|(.))",
    name="man.escape",
)
_CHARS = {
    "em": "\u2014",
    "en": "\u2013",
    "hy": "-",
    "mi": "-",
    "bu": "\u2022",
    "aq": "'",
    "dq": '"',
    "lq": "\u201c",
    "rq": "\u201d",
    "oq": "\u2018",
    "cq": "\u2019",
    "co": "\u00a9",
    "rg": "\u00ae",
    "tm": "\u2122",
    "de": "\u00b0",
    "mu": "\u00d7",
    "->": "\u2192",
    "<-": "\u2190",
    "ga": "`",
    "ti": "~",
    "ha": "^",
    "rs": "\\",
    "sl": "/",
    "ba": "|",
    "or": "|",
    "lh": "",
    "rh": "",
    "at": "@",
    "sh": "#",
    "Do": "$",
    "ct": "\u00a2",
    "Eu": "\u20ac",
    "Po": "\u00a3",
    "ss": "\u00df",
}
_SINGLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", "`": "`", ".": ".", '"': ""}
"""A one-character escape read as text; any other (``\\&``, ``\\|``, ``\\^``, ``\\c``, ``\\%``, ``\\:``) is
dropped."""
_FONT_MACROS = frozenset({"B", "I", "SM", "SB", "BR", "RB", "BI", "IB", "IR", "RI", "CW", "R"})
_PARA_MACROS = frozenset({"PP", "P", "LP", "sp", "br", "HP", "RS", "RE", "in", "ti", "ne", "bp"})
_NOFILL_ON = frozenset({"nf", "EX"})
_NOFILL_OFF = frozenset({"fi", "EE"})
_MAX_HEADING = 120

# mdoc(7): macros whose arguments are text as written (the macro name itself is no text)
_MDOC_PLAIN = frozenset(
    """Ar Cm Dv Em Er Ev Fa Fd Fn Ft Ic Li Ms Pa Sy Tn Va Vt Ad An Cd Ot Lk Mt No Ql Ux Bx At Nx Fx Ox Dx St
    Ta Ap Tg Nd Mt""".split()  # noqa: SIM905
)
_MDOC_QUOTES = {
    "Dq": ("\u201c", "\u201d"), "Sq": ("\u2018", "\u2019"), "Qq": ('"', '"'), "Op": ("[", "]"), "Oo": ("[", ""),
    "Oc": ("", "]"), "Pq": ("(", ")"), "Bq": ("[", "]"), "Aq": ("<", ">"), "Brq": ("{", "}"), "Do": ("\u201c", ""),
    "Dc": ("", "\u201d"), "Po": ("(", ""), "Pc": ("", ")"),
}  # fmt: skip
_MDOC_ALL = _MDOC_PLAIN | frozenset(_MDOC_QUOTES) | {"Fl", "Xr", "Nm", "Ns", "Pf", "In"}
_MDOC_PUNCT = frozenset({".", ",", ";", ":", "?", "!", ")", "]"})


def is_man_name(name: str) -> bool:
    """Whether a file's name (its ``.gz`` already removed) is a man page's: ``ls.1``, ``SSL_new.3ssl``."""
    return _MAN_SUFFIX.search(name) is not None


def _text(line: str) -> str:
    """A line's text with its escapes read (:data:`_ESCAPE`)."""
    if "\\" not in line:
        return line

    def one(m: _linear.Match) -> str:
        named = m.group(1) or m.group(2)
        if named is not None:
            return _CHARS.get(named, "")
        single = m.group(3)
        if single is not None:
            return _SINGLE.get(single, "")
        return ""

    return _ESCAPE.sub(one, line)


class _MdocWords:
    """The words of one mdoc line as they are built: brackets and quotes waiting to close, and whether the next
    word joins the last (``Ns``, ``Pf``, an opening bracket)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.closers: list[str] = []
        self.glue = False

    def emit(self, word: str) -> None:
        out = self.out
        if self.closers and word in _MDOC_PUNCT and out:
            out[-1] += "".join(reversed(self.closers))
            self.closers = []
        if out and (self.glue or word in _MDOC_PUNCT):
            out[-1] += word
        else:
            out.append(word)
        self.glue = False

    def dash(self) -> None:
        """``Fl Fl apple``: the first ``Fl`` is a dash the second's flag joins (``--apple``)."""
        if self.out and self.glue:
            self.out[-1] += "-"
        else:
            self.out.append("-")
        self.glue = True

    def quote(self, macro: str) -> None:
        opener, closer = _MDOC_QUOTES[macro]
        if opener:
            self.out.append(opener)
            self.glue = True
        if closer and macro not in {"Oc", "Dc", "Pc"}:
            self.closers.append(closer)
        elif closer and self.out:
            self.out[-1] += closer

    def text(self) -> str:
        if self.closers and self.out:
            self.out[-1] += "".join(reversed(self.closers))
        return " ".join(self.out)


def _mdoc_word(t: str, toks: list[str], i: int, name: str) -> tuple[str, int]:
    """The word token ``t`` stands for (``""``: none) and the index after the arguments it read from ``toks[i:]``."""
    nxt = toks[i] if i < len(toks) and toks[i] not in _MDOC_ALL else ""
    took = 1 if nxt else 0
    if t == "Fl":
        return "-" + nxt, i + took
    if t == "Xr":
        sect = toks[i + 1] if nxt and i + 1 < len(toks) and toks[i + 1] not in _MDOC_ALL else ""
        return (f"{nxt}({sect})" if sect else nxt), i + took + (1 if sect else 0)
    if t == "Nm":
        return (nxt, i + 1) if nxt and nxt not in _MDOC_PUNCT else (name, i)
    if t == "In":
        return (f"#include <{nxt}>" if nxt else ""), i + took
    if t in _MDOC_ALL:
        return "", i
    return t, i


def _mdoc_text(macro: str, args: list[str], name: str) -> str:
    """An mdoc line's text: its macros read (``Fl e Ar x`` -> ``-e x``), quotes and brackets around what they
    enclose, punctuation joined to the word before it."""
    words = _MdocWords()
    toks = [macro, *args]
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t == "Fl" and i < len(toks) and toks[i] == "Fl":
            words.dash()
        elif t in {"Ns", "Pf"}:
            words.glue = True
        elif t in _MDOC_QUOTES:
            words.quote(t)
        else:
            word, i = _mdoc_word(t, toks, i, name)
            if word:
                words.emit(word)
    return _text(words.text())


def _args(rest: str) -> list[str]:
    """A request's arguments: split on spaces, a double-quoted argument kept whole (``""`` inside is a quote)."""
    out: list[str] = []
    i, n = 0, len(rest)
    while i < n:
        while i < n and rest[i] in " \t":
            i += 1
        if i >= n:
            break
        if rest[i] == '"':
            j = i + 1
            buf: list[str] = []
            while j < n:
                if rest[j] == '"':
                    if j + 1 < n and rest[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(rest[j])
                j += 1
            out.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and rest[j] not in " \t":
                j += 1
            out.append(rest[i:j])
            i = j
    return out


class _Reader:
    """The state of one page's walk: the headings, the paragraph being built, the sections done."""

    def __init__(self) -> None:
        self.sections: list[tuple[tuple[str, ...], list[str]]] = []
        self.headings: tuple[str, ...] = ()
        self.lines: list[str] = []
        self.nofill = False
        self.tag_next = False
        self.pending_heading: int = 0
        self.name = ""  # mdoc: the page's name, from its first .Nm with an argument

    def flush(self) -> None:
        text = ("\n" if self.nofill else " ").join(x for x in self.lines if x.strip() or self.nofill).strip()
        self.lines = []
        if not text:
            return
        if not self.sections or self.sections[-1][0] != self.headings:
            self.sections.append((self.headings, []))
        self.sections[-1][1].append(text)

    def heading(self, level: int, text: str) -> None:
        self.flush()
        text = " ".join(text.split())[:_MAX_HEADING]
        if not text:
            self.pending_heading = level
            return
        if level == 1:
            self.headings = (_title_case(text),)
        else:
            self.headings = (*self.headings[:1], text)

    def add(self, text: str) -> None:
        if self.pending_heading:
            level, self.pending_heading = self.pending_heading, 0
            self.heading(level, text)
            return
        if self.tag_next:  # .TP: the next line is the tag, kept on a line of its own above its body
            self.tag_next = False
            self.flush()
            self.lines.append(text + ":" if text and not text.endswith(":") else text)
            return
        self.lines.append(text)


def _title_case(heading: str) -> str:
    """``SEE ALSO`` -> ``See also`` (man pages shout their section names); a heading with lower case kept."""
    if heading.upper() != heading or not any(c.isalpha() for c in heading):
        return heading
    return heading[:1] + heading[1:].lower()


def _request(r: _Reader, name: str, rest: str, meta: dict[str, str]) -> None:
    """One request line (``.SH NAME``) applied to the walk."""
    args = _args(rest)
    if name == "TH":
        if args:
            meta["title"] = _text(args[0]) + (f"({_text(args[1])})" if len(args) > 1 and args[1] else "")
        if len(args) > 3:
            meta["source"] = _text(args[3])
    elif name in {"SH", "SS"}:
        r.heading(1 if name == "SH" else 2, _text(" ".join(args)))
    elif name in _FONT_MACROS:
        joiner = "" if len(name) == 2 and name not in {"SM", "SB", "CW"} else " "
        text = _text(joiner.join(args))
        if text:
            r.add(text)
        elif not args:  # .B alone sets the font of the next line
            return
    elif name == "TP":
        r.flush()
        r.tag_next = True
    elif name == "IP":
        r.flush()
        tag = _text(args[0]) if args else ""
        if tag and tag not in {"\u2022", "*", "-", "o"}:
            r.lines.append(tag + ":")
        elif tag:
            r.lines.append(tag)
    elif name in _NOFILL_ON:
        r.flush()
        r.nofill = True
    elif name in _NOFILL_OFF:
        r.flush()
        r.nofill = False
    elif name in _PARA_MACROS:
        if name == "br" and r.nofill:
            return
        r.flush()
    elif name in {"UR", "MT"}:  # a link's target: the text that follows is what a reader sees
        return
    else:
        _mdoc_request(r, name, args, meta)


def _mdoc_request(r: _Reader, name: str, args: list[str], meta: dict[str, str]) -> None:
    """One mdoc(7) request; any it does not know is layout."""
    if name == "Dt":
        if args:
            meta["title"] = args[0] + (f"({args[1]})" if len(args) > 1 else "")
    elif name in {"Sh", "Ss"}:
        r.heading(1 if name == "Sh" else 2, _text(" ".join(args)))
    elif name in {"Pp", "Lp"}:
        r.flush()
    elif name == "Bd":
        r.flush()
        r.nofill = "-literal" in args or "-unfilled" in args
    elif name == "Ed":
        r.flush()
        r.nofill = False
    elif name == "It":
        r.flush()
        tag = _mdoc_text("No", args, r.name) if args else ""
        if tag:
            r.lines.append(tag + ":")
    elif name in {"Bk", "Ek", "Bl", "El", "Os", "Dd"}:
        return
    elif name in _MDOC_ALL:
        if name == "Nm" and args and not r.name and args[0] not in _MDOC_ALL:
            r.name = args[0]
        if name == "Nd":
            r.add("- " + _mdoc_text("No", args, r.name))
            return
        text = _mdoc_text(name, args, r.name)
        if text:
            r.add(text)
    # any other request (.ad, .hy, .ds, .ie, .if, .el, .ta, .UE ...) is layout, not text


def parse_man(text: str) -> tuple[str, str, list[tuple[tuple[str, ...], list[str]]], str | None] | None:
    """A man page's ``(title, source, sections, redirect)``, or ``None`` when the text holds no roff request.

    ``title`` is ``NAME(SECTION)`` from ``.TH`` (empty without one), ``source`` its fourth field (``libcurl
    7.88.1``), ``sections`` each heading path with its paragraphs, ``redirect`` the page a ``.so`` stub names.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    meta: dict[str, str] = {}
    r = _Reader()
    requests = 0
    skip_to: str | None = None  # inside .de NAME ... ".." : a macro definition, not text
    redirect: str | None = None
    for raw in lines:
        if skip_to is not None:  # ".." ends a definition, as does ".  ." (indented inside a conditional)
            if raw.strip() == skip_to or (skip_to == ".." and raw[:1] == "." and raw[1:].strip() == "."):
                skip_to = None
            continue
        if raw[:1] in {".", "'"}:
            body = raw[1:].lstrip(" \t")
            if body.startswith(('\\"', "\\#")) or not body:
                continue  # a comment, or a bare "."
            name, _, rest = body.partition(" ")
            name, _, tab_rest = name.partition("\t")
            rest = (tab_rest + " " + rest).strip() if tab_rest else rest
            requests += 1
            if name in {"de", "de1", "am", "ig"}:
                skip_to = ".." if name != "ig" or not rest.strip() else "." + rest.split()[0]
                continue
            if name == "so":
                redirect = rest.strip()
                continue
            _request(r, name, rest, meta)
            continue
        if raw.startswith('\\"'):
            continue
        if not raw.strip():
            if r.nofill:
                r.lines.append("")
            else:
                r.flush()
            continue
        r.add(_text(raw))
    r.flush()
    if not requests:
        return None
    sections = [(h, p) for h, p in r.sections if p]
    return meta.get("title", ""), meta.get("source", ""), sections, redirect
