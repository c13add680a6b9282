"""Store URLs, parsed once and rebuilt losslessly: IPv6 hosts keep their brackets, userinfo is never dropped
silently, and query values stay encoded (``%26host%3Devil`` is one value, never a new parameter).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from admit.errors import ConfigError

__all__ = ["pg_dsn", "qdrant_target"]


def _host(hostname: str | None) -> str:
    if not hostname:
        return ""
    return f"[{hostname}]" if ":" in hostname else hostname


def qdrant_target(url: str) -> tuple[str, str, str | None]:
    """``qdrant://host:6333/collection`` (or ``qdrant+https://``) -> ``(server URL, collection, api_key)``.

    Raises:
        ConfigError: The URL carries a user or password (Qdrant authenticates with ``?api_key=``), or no host.
    """
    u = urlsplit(url)
    if u.username is not None or u.password is not None:
        raise ConfigError(
            f"qdrant URL {u.scheme}://...@{_host(u.hostname)}: a user or password is not used by Qdrant; "
            "pass the key as ?api_key=... instead."
        )
    if not u.hostname:
        raise ConfigError(f"qdrant URL {url!r} has no host; use qdrant://host:6333/collection.")
    q = dict(parse_qsl(u.query, keep_blank_values=True))
    try:
        port = u.port or 6333
    except ValueError as exc:
        raise ConfigError(f"qdrant URL {url!r}: {exc}") from exc
    scheme = "https" if u.scheme == "qdrant+https" else "http"
    collection = u.path.strip("/") or q.get("collection", "admit_chunks")
    return f"{scheme}://{_host(u.hostname)}:{port}", collection, q.get("api_key")


def pg_dsn(url: str) -> tuple[str, str]:
    """``postgresql://user:pw@host:port/db?table=t&sslmode=require`` -> ``(dsn without table, table)``.

    The user, password, host (IPv6 in brackets), port and database are kept exactly as given; the other query
    parameters are decoded once and encoded again, so a value holding ``&`` or ``=`` stays one value.
    """
    u = urlsplit(url)
    pairs = parse_qsl(u.query, keep_blank_values=True)
    table = "admit_chunks"
    rest: list[tuple[str, str]] = []
    for k, v in pairs:
        if k == "table":
            table = v
        else:
            rest.append((k, v))
    query = urlencode(rest, quote_via=quote)
    return urlunsplit((u.scheme, u.netloc, u.path, query, "")), table
