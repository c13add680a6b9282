"""Secrets in tool outputs: found by a maintained detector (Yelp's ``detect-secrets``) and admit's own patterns.

:func:`checked_text` is what a string becomes before anything looks at it: NFKC-normalised (fullwidth and
other compatibility forms folded: ``ＡＫＩＡ`` is ``AKIA``) and cleaned exactly as the renderer cleans it
(zero-width, bidi, tag and other invisible characters removed, line breaks made ``\\n``), so the detector
checks the very text the model will see, and a zero-width character inside a secret hides nothing.

:class:`SecretFinder` returns the spans of secrets in such a text: the ``detect-secrets`` plugins (AWS,
private keys, Basic auth, JWT, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI, Azure, Discord,
Telegram, Square, Mailchimp, OpenAI, IBM, Artifactory, Cloudant, SoftLayer, secret-keyword assignments and
base64 high-entropy strings), each reported value widened to the whole token it sits in, plus admit's
patterns (:data:`PATTERNS`, RE2) for shapes the detector does not know. The hex-entropy and public-IP plugins
are off: commit hashes, digests and addresses in configuration are not secrets.

``detect-secrets`` applies Python regular expressions; it only ever sees lines of at most
:data:`WINDOW` characters (longer lines are scanned in overlapping windows), so its work stays linear in the
text. Without the package (``pip install "admit[secrets]"``) only admit's patterns apply.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from admit import _deadline, _linear
from admit._clean import clean_text

__all__ = ["PATTERNS", "WINDOW", "SecretFinder", "checked_text", "fold_confusables", "is_secret_key"]

logger = logging.getLogger(__name__)

WINDOW = 2_000
"""Longest line ``detect-secrets`` is given (longer lines: overlapping windows)."""
_OVERLAP = 300

PATTERNS: Mapping[str, str] = {
    "aws_key_id": r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[0-9A-Z]{16}\b",
    "aws_secret": r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}",
    "private_key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.)*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    "github": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
    "gitlab": r"\bglpat-[A-Za-z0-9_-]{20,}",
    "slack": r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
    "stripe": r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    "openai_like": r"\bsk-(?:proj-|ant-(?:api|admin)[0-9]{2}-)?[A-Za-z0-9_-]{20,}",
    "google_api": r"\bAIza[0-9A-Za-z_-]{35}\b|\bGOCSPX-[A-Za-z0-9_-]{20,}",
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "sendgrid": r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
    "twilio": r"\bSK[0-9a-f]{32}\b",
    "npm": r"\bnpm_[A-Za-z0-9]{36}\b",
    "pypi": r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
    "shopify": r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
    "vault": r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",
    "square": r"\bsq0(?:csp|atp)-[A-Za-z0-9_-]{22,}",
    "telegram": r"\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}\b",
    "mailchimp": r"\b[0-9a-f]{32}-us[0-9]{1,2}\b",
    "url_credentials": r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"']{0,100}:[^\s@/\"']{1,200}@",
    "basic_auth": r"(?i)\bbasic\s+[A-Za-z0-9+/]{8,}={0,2}",
    "bearer": r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*",
    "azure_key": r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*[A-Za-z0-9+/%=&:._-]{20,}",
    "assignment": r"(?i)\b(?:[a-z0-9]+_)*(?:password|passwd|pwd|secret|secret_key|api_?key|access_?token"
    r"|auth_?token|refresh_?token|client_?secret|private_?key|token)\b[\"']?\s*[:=]\s*[\"']?[^\s\"',;]{6,}",
    "cli_flag": r"(?i)(?:^|\s)--?(?:password|passwd|pass|token|api[-_]?key|secret|client[-_]secret|access[-_]key"
    r"|auth[-_]token)(?:=|\s+)[\"']?[^\s\"']{6,}",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
}
"""admit's own secret shapes (name -> pattern, RE2), applied beside ``detect-secrets``."""

_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "apikey",
        "token",
        "credential",
        "credentials",
        "authorization",
        "privatekey",
        "secretkey",
        "accesskey",
        "secretaccesskey",
        "accesstoken",
        "refreshtoken",
        "authtoken",
        "clientsecret",
        "sessionkey",
        "connectionstring",
    }
)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.")
_TAIL_CHARS = _TOKEN_CHARS | {"="}  # base64 padding ends a token; it never starts one (``KEY=value``)


def checked_text(text: str) -> str:
    """``text`` as it is checked for secrets and then shown: NFKC, then the renderer's cleaning."""
    if text.isascii():
        return clean_text(text)
    return clean_text(unicodedata.normalize("NFKC", text))


def is_secret_key(key: str) -> bool:
    """Whether an object key names a secret: its last word (or last two) is one (``db_password``,
    ``SecretAccessKey``, ``apiKey``); ``token_type``, ``max_tokens``, ``secret_ref`` are not."""
    words: list[str] = []
    cur = ""
    prev = ""
    for ch in checked_text(key):
        if ch.isalnum():
            if ch.isupper() and prev and (prev.islower() or prev.isdigit()):
                words.append(cur)
                cur = ""
            cur += ch.lower()
        elif cur:
            words.append(cur)
            cur = ""
        prev = ch
    if cur:
        words.append(cur)
    words = [w for w in words if w]
    if not words:
        return False
    tail = [words[-1], "".join(words[-2:]), "".join(words[-3:])]
    return any(t in _SECRET_WORDS for t in tail) or "".join(words) in _SECRET_WORDS


@lru_cache(maxsize=1)
def _plugins() -> tuple[Any, ...] | None:
    try:
        from detect_secrets.settings import default_settings, get_plugins
    except ImportError:
        logger.info('detect-secrets is not installed (pip install "admit[secrets]"): admit patterns only')
        return None
    with default_settings():
        plugins = tuple(
            p for p in get_plugins() if type(p).__name__ not in ("HexHighEntropyString", "IPPublicDetector")
        )
    return plugins


_PLUGIN_LOCK = threading.Lock()  # detect-secrets keeps per-process settings; its plugins are not re-entrant


class SecretFinder:
    """Spans of secrets in checked text (:func:`checked_text`): ``detect-secrets`` plus :data:`PATTERNS`."""

    def __init__(self, patterns: Mapping[str, str] | None = None, *, use_detector: bool = True) -> None:
        """``patterns``: name -> RE2 pattern (default :data:`PATTERNS`); ``use_detector``: run ``detect-secrets``."""
        self.patterns = tuple(
            (name, _linear.compile(p, name=f"secrets.{name}")) for name, p in (patterns or PATTERNS).items()
        )
        self.plugins = _plugins() if use_detector else None

    def spans(self, text: str, *, _depth: int = 0) -> list[tuple[int, int, str]]:
        """``(start, end, kind)`` of every secret found, merged where they overlap, in order.

        Beside the patterns and ``detect-secrets``, three checks that do not depend on a list of shapes: the text
        is matched again with look-alike letters folded (Cyrillic and Greek homoglyphs -> Latin, one for one, so
        the spans stay the text's own); every token of 20+ characters whose character mix and entropy are a
        random key's is a secret (``entropy``: UUIDs, hex digests and git SHAs are not); and a base64 token that
        decodes to text holding a secret is one (``base64:KIND``)."""
        found: list[tuple[int, int, str]] = []
        folded = fold_confusables(text)
        for name, pat in self.patterns:
            found.extend((m.start(), m.end(), name) for m in pat.finditer(folded))
        if self.plugins is not None:
            found.extend(self._detector_spans(folded))
        found.extend(_entropy_spans(folded))
        if _depth < 2:
            found.extend(self._base64_spans(folded, _depth))
        found.sort()
        merged: list[tuple[int, int, str]] = []
        for s, e, k in found:
            if merged and s <= merged[-1][1]:
                ps, pe, pk = merged[-1]
                merged[-1] = (ps, max(pe, e), pk)
            else:
                merged.append((s, e, k))
        return merged

    def _base64_spans(self, text: str, depth: int) -> Iterator[tuple[int, int, str]]:
        for m in _B64_TOKEN.finditer(text):
            token = m.group(0)
            decoded = _b64_text(token)
            if decoded is None:
                continue
            inner = self.spans(checked_text(decoded), _depth=depth + 1)
            if inner:
                yield m.start(), m.end(), f"base64:{inner[0][2]}"

    def _detector_spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        offset = 0
        for line in text.split("\n"):
            for w_start in range(0, max(len(line), 1), WINDOW - _OVERLAP):
                window = line[w_start : w_start + WINDOW]
                _deadline.checkpoint()
                for value, kind in self._scan(window):
                    base = offset + w_start
                    i = window.find(value)
                    while i >= 0 and value:
                        s, e = _widen(text, base + i, base + i + len(value))
                        yield s, e, kind
                        i = window.find(value, i + len(value))
                if w_start + WINDOW >= len(line):
                    break
            offset += len(line) + 1

    def _scan(self, line: str) -> list[tuple[str, str]]:
        assert self.plugins is not None
        out: list[tuple[str, str]] = []
        with _PLUGIN_LOCK:
            for plugin in self.plugins:
                try:
                    for secret in plugin.analyze_line(filename="tool_output.yaml", line=line, line_number=1):
                        value = secret.secret_value
                        if isinstance(value, str) and len(value) >= 4 and not _looks_like_code(value):
                            out.append((value, "detect_secrets:" + _kind(secret.type)))
                except Exception:  # a plugin's failure must not leak the row: admit's patterns still apply
                    logger.debug("detect-secrets plugin %s failed", type(plugin).__name__, exc_info=True)
        return out


_CONFUSABLES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеорсхуѕіјԁһӏԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧοναρτυχκιɡℓ",
    "ABESIJKMHOPCTXYaeopcxysijdhlqwABEZHIKMNOPTYXovaptuxkigl",
)
"""Look-alike letters folded to the Latin ones they imitate (one character for one: spans stay in place). NFKC
has already folded fullwidth and other compatibility forms (:func:`checked_text`)."""


def fold_confusables(text: str) -> str:
    """``text`` with Cyrillic and Greek look-alikes of Latin letters folded to them (same length)."""
    return text if text.isascii() else text.translate(_CONFUSABLES)


_TOKEN = _linear.compile(r"[A-Za-z0-9+/=_\-.~]{20,512}", name="secrets.entropy_token")
_B64_TOKEN = _linear.compile(r"[A-Za-z0-9+/_-]{24,1000}={0,2}", name="secrets.base64_token")
_HEX = frozenset("0123456789abcdefABCDEF-")


def _entropy(s: str) -> float:
    import math
    from collections import Counter

    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _entropy_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Tokens of 20+ characters that look random: upper and lower case letters and digits, no long word, and
    the entropy of a random key of their length. Hex strings (UUIDs, digests, git SHAs) are never flagged."""
    for m in _TOKEN.finditer(text):
        token = m.group(0).strip("=.-_~")
        if len(token) < 20 or set(token) <= _HEX:
            continue
        body = token.split(".") if token.count(".") >= 2 else [token]  # a JWT-like a.b.c: its longest part
        part = max(body, key=len)
        if len(part) < 20:
            continue
        has = (any(c.isupper() for c in part), any(c.islower() for c in part), any(c.isdigit() for c in part))
        if not all(has) or _longest_alpha_run(part) > 12:
            continue
        import math

        if _entropy(part) >= min(4.3, math.log2(len(part)) - 0.45):
            yield m.start(), m.end(), "entropy"


def _longest_alpha_run(s: str) -> int:
    best = cur = 0
    for ch in s:
        cur = cur + 1 if ch.isalpha() and ch.islower() else 0
        best = max(best, cur)
    return best


def _b64_text(token: str) -> str | None:
    """The text a base64 token decodes to, when it is mostly printable; else ``None``."""
    import base64
    import binascii

    t = token.replace("-", "+").replace("_", "/")
    t += "=" * (-len(t) % 4)
    try:
        raw = base64.b64decode(t, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        out = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for ch in out if ch.isprintable() or ch in "\n\r\t")
    return out if out and printable >= 0.9 * len(out) else None


def _looks_like_code(value: str) -> bool:
    """A keyword assignment whose value is code or a reference, not a secret (``forms.CharField(...)``,
    ``vault://kv/app``, ``${DB_PASSWORD}``), or an earlier redaction."""
    return any(mark in value for mark in ("(", ")", "${", "://", "[redacted:"))


def _kind(secret_type: str) -> str:
    return "_".join(secret_type.lower().replace("(", " ").replace(")", " ").split())


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole token a reported value sits in (a plugin may report only a prefix, ``ghp``)."""
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
        if end - start > 4096:
            break
    while end < len(text) and text[end] in _TAIL_CHARS:
        end += 1
        if end - start > 4096:
            break
    return start, end
