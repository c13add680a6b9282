"""The version a site's home page states, for the pages of the site that state none (:class:`HomeVersions`).

Apart from :mod:`admit.kb.docsite`, which :mod:`admit.kb.parse` reads: this reads pages with the parser, so it
sits above both (no import cycle in ``admit.kb``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from admit import _linear
from admit.kb.files import RefusedFileError, read_no_follow
from admit.kb.parse import parse_html

__all__ = ["HomeVersions"]

_SPHINX_VERSION = _linear.compile(
    r"""\bVERSION:\s*['"]([0-9][0-9A-Za-z.+_-]{0,39})['"]""", name="docsite.sphinx_version"
)
"""The release in Sphinx's ``_static/documentation_options.js`` (``VERSION: '7.2'``): Sphinx 4 and later write
it there only, not into the page."""

_LANG_SUFFIX = _linear.compile(r"^[a-z]{2}(?:[-_][a-z]{2,4})?$", name="docsite.lang_suffix")
"""A language before a page's ``.html`` (``en``, ``pt-br``, ``zh_cn``)."""


@dataclass(slots=True)
class HomeVersions:
    """The version a site's home page states, for the pages of the site that state none: ``index.html`` in
    the page's folder or the nearest folder above it that has one, up to the ingested folder. Each folder's
    home page is read once (without following links, at most ``max_bytes``); one that cannot be read or
    parsed gives no version.
    """

    max_bytes: int = 8 << 20
    _known: dict[tuple[Path, str], str] = field(default_factory=dict)

    def version_for(self, f: Path, root: Path) -> str:
        """The version ``f``'s home page states (``""``: none). A page named for its language
        (``dreq.en.html``, a DocBook build per language) has ``index.en.html`` as its home page, before
        ``index.html``."""
        parts = f.name.lower().split(".")
        lang = parts[-2] if len(parts) == 3 and _LANG_SUFFIX.match(parts[-2]) else ""
        homes = (f"index.{lang}.html", "index.html") if lang else ("index.html",)
        folder = f.parent
        walked: list[Path] = []
        version = ""
        while folder.is_relative_to(root):
            if (folder, lang) in self._known:
                version = self._known[(folder, lang)]
                break
            walked.append(folder)
            for home in homes:
                version = self._read(folder / home, root)
                if version:
                    break
            if not version:
                version = self._sphinx_options(folder, root)
            if version or folder == root:
                break
            folder = folder.parent
        for w in walked:
            self._known[(w, lang)] = version
        return version

    def _sphinx_options(self, folder: Path, root: Path) -> str:
        """The release Sphinx's ``_static/documentation_options.js`` in ``folder`` states (``""``: none)."""
        options = folder / "_static" / "documentation_options.js"
        try:
            target = options.resolve()
            if not target.is_relative_to(root) or not target.is_file() or target.stat().st_size > 64 << 10:
                return ""
            m = _SPHINX_VERSION.search(read_no_follow(target, root).decode("utf-8", "replace"))
        except (OSError, RefusedFileError):
            return ""
        return m.group(1) if m else ""

    def _read(self, home: Path, root: Path) -> str:
        try:
            target = home.resolve()
            if not target.is_relative_to(root) or not target.is_file() or target.stat().st_size > self.max_bytes:
                return ""
            doc = parse_html(read_no_follow(target, root).decode("utf-8-sig"), fallback_title="")
        except (OSError, RefusedFileError, ValueError):  # UnicodeDecodeError is a ValueError
            return ""
        return doc.site.get("version", "")
