"""False positives of the injection flags on benign technical, security and multilingual writing no one fitted to.

Benign text from this machine's Debian documentation, split **by source** (a package's doc site, a man page's
section and language) into a *calibration* half and a *held-out* half by a hash of the source's name, so no
source is both used to choose a threshold and scored:

* documentation prose from the unpacked Debian ``-doc`` sites under ``/work/debdocs`` (``--debdocs``): paragraphs
  and list items of their HTML pages (security manuals such as python-cryptography's and privoxy's among them);
* English man pages (``/usr/share/man/man{1,5,7,8}``; gpg, apt-secure, chpasswd, iptables-like tools);
* translated man pages (``/usr/share/man/<lang>/``: German, French, Spanish, Russian, Japanese, Chinese, ...).

``python bench/bench_injection_benign.py`` prints, per group and half, how many passages the rules flag (and which
rules fire), and with ``--learned`` how many the learned detector flags at its shipped threshold and at the
threshold that keeps the calibration half at ``--target`` false positives (``--cache`` keeps the vectors).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import html
import random
import re
from collections.abc import Iterator
from pathlib import Path

from admit.security import scan

MAN = Path("/usr/share/man")
_TAG = re.compile(r"<[^>]+>")
_BLOCK = re.compile(r"<(p|li|dd|td)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_ROFF_ESC = re.compile(r"\\f[BIRP]|\\f\(..|\\\(..|\\[-&e|^]|\\s[-+]?\d|\\\*\(..|\\\*.")


def half(source: str) -> str:
    """``calib`` or ``heldout``: a stable split of sources by a hash of their name."""
    return "calib" if hashlib.sha1(source.encode()).digest()[0] % 2 == 0 else "heldout"


def _clean(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def html_paragraphs(site: Path) -> Iterator[str]:
    for p in sorted(site.rglob("*.html")):
        if any(part in ("_modules", "genindex", "search") for part in p.parts) or p.name.startswith("genindex"):
            continue
        try:
            raw = p.read_text("utf-8", errors="replace")
        except OSError:
            continue
        for m in _BLOCK.finditer(raw):
            t = _clean(html.unescape(_TAG.sub(" ", m.group(2))))
            if 80 <= len(t) <= 1500:
                yield t


def man_paragraphs(path: Path) -> Iterator[str]:
    try:
        raw = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return
    buf: list[str] = []
    for line in raw.splitlines():
        if line.startswith((".", "'")):
            macro = line.split(maxsplit=1)[0] if line.strip() else ""
            if macro in (".PP", ".P", ".LP", ".SH", ".SS", ".TP", ".IP", ".sp", ".Pp", ".Sh", ".It"):
                if buf:
                    yield _clean(" ".join(buf))
                buf = []
            continue
        buf.append(_ROFF_ESC.sub("", line).replace("\\", ""))
    if buf:
        yield _clean(" ".join(buf))


def corpus(debdocs: Path, per_source: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    """``(group, source, half, text)`` rows, at most ``per_source`` sampled paragraphs per source."""
    rows: list[tuple[str, str, str, str]] = []

    def take(group: str, source: str, paras: list[str], n: int = per_source) -> None:
        paras = sorted({p for p in paras if 80 <= len(p) <= 1500})
        for t in rng.sample(paras, min(n, len(paras))):
            rows.append((group, source, half(source), t))

    for site in sorted(p for p in debdocs.iterdir() if p.is_dir() and p.name != "cache"):
        group = "security_docs" if site.name in SECURITY_SITES else "technical_docs"
        take(group, site.name, list(html_paragraphs(site)), 5 * per_source if group == "security_docs" else per_source)
    for sec in ("man1", "man5", "man7", "man8"):
        pages = sorted((MAN / sec).glob("*.gz"))
        # one source per page name: a page's paragraphs are all calibration or all held out
        by_page: dict[str, list[str]] = collections.defaultdict(list)
        for p in pages:
            by_page[p.name.split(".")[0]].extend(man_paragraphs(p))
        for name, paras in by_page.items():
            group = "security_man" if any(w in name for w in SECURITY_MAN) else "man_en"
            take(group, f"man:{name}", paras[:40])
    for lang in sorted(d.name for d in MAN.iterdir() if d.is_dir() and not d.name.startswith("man")):
        for p in sorted((MAN / lang).rglob("*.gz")):
            take("multilingual_man", f"man:{lang}:{p.name.split('.')[0]}", list(man_paragraphs(p))[:40])
    return rows


GROUP_CAP = {"technical_docs": 400, "security_docs": 300, "man_en": 300, "security_man": 300, "multilingual_man": 500}
"""Rows kept per group (sampled), to bound the run."""


def cap_groups(rows: list[tuple[str, str, str, str]], rng: random.Random) -> list[tuple[str, str, str, str]]:
    out: list[tuple[str, str, str, str]] = []
    for g in sorted({r[0] for r in rows}):
        part = [r for r in rows if r[0] == g]
        out += rng.sample(part, min(len(part), GROUP_CAP.get(g, 300)))
    return sorted(out)


SECURITY_SITES = {"python-cryptography-doc", "privoxy", "borgbackup-doc", "libatinject-jsr330-api-java-doc"}
SECURITY_MAN = (
    "gpg", "ssh", "secure", "passwd", "pam", "sudo", "su", "login", "shadow", "faillog", "iptables", "nft", "key",
    "cert", "openssl", "tls", "audit", "chage", "selinux", "apparmor", "firewall",
)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--debdocs", default="/work/debdocs")
    ap.add_argument("--per-source", type=int, default=12, help="paragraphs sampled per source")
    ap.add_argument("--learned", action="store_true", help="score the learned detector too (encodes with MiniLM)")
    ap.add_argument("--target", type=float, default=0.01, help="false-positive share on the calibration half")
    ap.add_argument("--cache", default="", help="an .npz keeping the vectors between runs")
    ap.add_argument("--show", type=int, default=0, help="print this many flagged held-out passages")
    args = ap.parse_args()
    rng = random.Random(47)
    rows = corpus(Path(args.debdocs), args.per_source, rng)
    rows = cap_groups(rows, rng)
    rule_flags = [scan(t) for _, _, _, t in rows]
    fired: collections.Counter[str] = collections.Counter()
    print(f"{'group':<18} {'half':<8} {'rows':>5} {'rules':>6}")
    for g in sorted({r[0] for r in rows}):
        for h in ("calib", "heldout"):
            idx = [i for i, r in enumerate(rows) if r[0] == g and r[2] == h]
            hit = [i for i in idx if rule_flags[i]]
            print(f"{g:<18} {h:<8} {len(idx):>5} {len(hit):>6}")
    for fl in rule_flags:
        fired.update({f.rule for f in fl})
    print("rules that fire:", dict(fired.most_common()))
    shown = 0
    for (g, s, _h, t), fl in zip(rows, rule_flags, strict=True):
        if fl and shown < args.show:
            shown += 1
            print(f"  [{g} {s} {','.join(f.rule for f in fl)}] {t[:240]}")
    if args.learned:
        learned_report(rows, rule_flags, args)


def learned_report(
    rows: list[tuple[str, str, str, str]], rule_flags: list[list[object]], args: argparse.Namespace
) -> None:
    import numpy as np

    from admit.security.learned import LearnedDetector

    det = LearnedDetector.load()
    texts = [t for *_, t in rows]
    scores = _scores(det, texts, args.cache)
    shipped = _shipped_flags(det, texts, args.cache)
    calib = np.array([r[2] == "calib" for r in rows])
    neg = np.sort(scores[calib])
    tuned = float(neg[min(len(neg) - 1, int((1 - args.target) * len(neg)))] + 1e-6)
    print(f"learned: shipped threshold {det.threshold:.3f}; threshold for {args.target:.1%} on calibration {tuned:.3f}")
    print(f"{'group':<18} {'half':<8} {'rows':>5} {'shipped':>8} {'tuned':>6} {'rules|tuned':>12}")
    for g in [*sorted({r[0] for r in rows}), "ALL"]:
        for h in ("calib", "heldout"):
            idx = [i for i, r in enumerate(rows) if (g == "ALL" or r[0] == g) and r[2] == h]
            a = sum(shipped[i] for i in idx)
            b = sum(scores[i] >= tuned for i in idx)
            c = sum(bool(rule_flags[i]) or scores[i] >= tuned for i in idx)
            print(f"{g:<18} {h:<8} {len(idx):>5} {a:>8} {b:>6} {c:>12}")


def _shipped_flags(det: object, texts: list[str], cache: str) -> list[bool]:
    """Whether the shipped model flags each text: a window at or above its threshold (the language bucket's, where
    the model has one per bucket, issue 47 item 8; else the one threshold)."""
    from admit.security.learned import LearnedDetector

    assert isinstance(det, LearnedDetector)

    class _Cached:  # the vectors _scores cached, read back
        def embed(self, flat: list[str]) -> object:
            import numpy as np

            with np.load(cache) as z:
                return z["vec"]

    if not hasattr(det, "margins"):  # a tree before issue 47 item 8: one threshold
        import numpy as np

        return [bool(v >= det.threshold) for v in np.asarray(_scores(det, texts, cache))]
    if not cache:
        from admit.backends.embedders import resolve_embedder

        return [bool(m >= 0) for m in det.margins(texts, resolve_embedder("minilm"))]
    return [bool(m >= 0) for m in det.margins(texts, _Cached())]


def _scores(det: object, texts: list[str], cache: str) -> object:
    import numpy as np

    from admit.backends.embedders import resolve_embedder
    from admit.security.learned import LearnedDetector, windows

    assert isinstance(det, LearnedDetector)
    flat: list[str] = []
    spans = []
    for t in texts:
        w = windows(t)
        spans.append((len(flat), len(flat) + len(w)))
        flat.extend(w)
    key = hashlib.sha1("\x00".join(flat).encode()).hexdigest()
    vec = None
    if cache and Path(cache).exists():
        z = np.load(cache)
        if str(z["key"]) == key:
            vec = z["vec"]
    if vec is None:
        vec = np.asarray(resolve_embedder("minilm").embed(flat), dtype=np.float32)
        if cache:
            np.savez(cache, key=key, vec=vec)
    p = det.probabilities(vec, flat)
    return np.array([p[a:b].max() for a, b in spans])


if __name__ == "__main__":
    main()
