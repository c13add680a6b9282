"""Reading a document without following links: what ingest opens is what the folder walk saw.

The walk (:func:`admit.kb.ingest.ingest_paths`) decides which files lie inside an ingested folder; between that
decision and the read, a file could be swapped for a symbolic link to somewhere else. :func:`read_no_follow`
closes that gap: it opens the path one component at a time from the folder, each with ``O_NOFOLLOW``
(a link anywhere on the way fails the open), and checks the opened descriptor itself: a regular file, with one
name only (a hard link can give a file outside the folder a name inside it: refused, reported as a link).
"""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

from admit.errors import InputError

__all__ = ["COMPRESSED_SUFFIX", "RefusedFileError", "document_name", "page_text", "read_no_follow"]

COMPRESSED_SUFFIX = ".gz"
"""A document compressed with gzip (``changelog.html.gz``: Debian compresses a package's larger documentation
files) is read as the document it holds."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open; fstat refuses it next
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class RefusedFileError(OSError):
    """A file that is not read: a link (symbolic on the way, or a second hard link) or not a regular file."""


def _open_under(root: Path, rel: Path) -> int:
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in rel.parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(rel.parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def read_no_follow(path: Path, root: Path | None = None) -> bytes:
    """The bytes of ``path`` (inside ``root`` when given), opened without following any link.

    Args:
        path: An absolute path with no links in it (the walk resolved it).
        root: The ingested folder ``path`` was found under (``None``: a file named on its own; only its last
            component is opened with ``O_NOFOLLOW``).

    Raises:
        RefusedFileError: A link was met on the way (the file was swapped after the walk), the file has
            more than one hard link, or it is not a regular file.
        OSError: It cannot be read.
    """
    try:
        if root is not None and os.open in os.supports_dir_fd and _NOFOLLOW:
            fd = _open_under(root, path.relative_to(root))
        else:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        if Path(path).is_symlink() or exc.errno in {getattr(os, "ELOOP", -1), getattr(os, "ENOTDIR", -1)}:
            raise RefusedFileError(f"{path}: a symbolic link on the way (changed after the folder walk)") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedFileError(f"{path}: not a regular file")
        if st.st_nlink > 1:
            raise RefusedFileError(f"{path}: has {st.st_nlink} hard links (one may lie outside the folder)")
        chunks: list[bytes] = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def document_name(name: str) -> str:
    """A file's name as the document it holds: ``changelog.html.gz`` -> ``changelog.html``."""
    if name.lower().endswith(COMPRESSED_SUFFIX) and "." in name[: -len(COMPRESSED_SUFFIX)]:
        return name[: -len(COMPRESSED_SUFFIX)]
    return name


def page_text(raw: bytes, name: str, max_bytes: int) -> str:
    """A document's text from its file's bytes: a ``.gz`` file's (:data:`COMPRESSED_SUFFIX`) decompressed, at
    most ``max_bytes`` of it, then UTF-8 (a byte-order mark dropped).

    Raises:
        ValueError: Not gzip data, or it decompresses to over ``max_bytes`` (a small file that would fill the
            memory is refused, not read), or not UTF-8 (:class:`UnicodeDecodeError`).
    """
    if document_name(name) != name:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            raw = d.decompress(raw, max_bytes + 1)
        except zlib.error as exc:
            raise InputError(f"not gzip data ({exc})") from exc
        if len(raw) > max_bytes or d.unconsumed_tail:
            raise InputError(
                f"decompresses to over the {max_bytes:,}-byte cap per file (raise --max-file-mb to read it)"
            )
    return raw.decode("utf-8-sig")
