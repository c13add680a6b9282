"""Fitting the answerability models (:mod:`admit.answerability`): cases from labelled lists, a logistic
regression and its two thresholds, figures per family (``scripts/fit_answerability.py`` and
``scripts/fit_cross_answerability.py`` are its command lines)."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from admit import answerability as an
from admit.answerability.features import KNOWN_FEATURES
from admit.answerability.reader import READER, reader_features, reader_texts
from admit.prune import setwise_model as sm
from fitlib.args import FitArgs, arg
from fitlib.data import TRAIN, VALID, Record, family, read_folder
from fitlib.setwise_data import setwise_items
from fitlib.vectors import VectorCache, setwise_texts

__all__ = [
    "RESEARCH_FILES",
    "TRAIN_FILES",
    "AnswerabilityArgs",
    "Cases",
    "cases",
    "figures",
    "fit_logistic",
    "fit_model",
    "run",
]

CASE_KINDS = (
    "answerable",
    "near miss",
    "answerable short",
    "near miss short",
    "gold only",
    "near miss distractors",
    "transplanted",
    "names what the list lacks",
)
"""The kinds of case :func:`cases` makes (gold removed: near misses; another question's list: transplanted; the
question joined to a name its list never mentions)."""
CASE_KIND = "case_kind"
"""The key of a case's kind (an index of :data:`CASE_KINDS`) among its features: read by the figures only."""

Case = tuple[dict[str, float], int]
"""A case's features and label (0 unanswerable, 1 answerable, 2 answerable with its gold all kept)."""
Cases = dict[str, list[Case]]
"""Cases by file (family)."""

TRAIN_FILES = (
    "devsplit_hotpotqa_distractor",
    "train_hotpotqa_distractor",
    "train_musique",
    "train_2wikimultihopqa",
    "docs_gorilla_apibench",
    "docs_gorilla_apizoo",
    "docs_restbench",
    "docs2_medquad",
    "docs2_doc2dial",
    "docs2_qmsum",
)
#: Research-use families: scored leave one family out, never in the shipped fit.
RESEARCH_FILES = ("docs_policyqa", "docs2_evidence_inference")


def injected_question(question: str, term: str, rng: random.Random) -> str:
    """The question asked of something the list never names: ``term`` (a name from another family's questions)
    joined to it as a product, integration or option would be ("How do I back up with Kerberos?")."""
    base = question.strip().rstrip("?.! ")
    joint = rng.choice(("with", "using", "in", "for", "through"))
    return f"{base} {joint} {term[:1].upper()}{term[1:]}?"  # a name, as a user writes it


def foreign_terms(rows: Sequence[Record], limit: int = 400) -> list[str]:
    """Names from these records' questions (capitalised words past the first, identifiers), a few hundred, lower-cased
    (as the text toolkit returns them: :func:`injected_question` writes them capitalised)."""
    from admit import _text as tx

    out: list[str] = []
    for r in rows:
        q = str(r["question"])
        first = set(tx.words(q)[:1])
        out.extend(w for w in sorted(tx.capitalised_tokens(q)) if w not in first and len(w) > 3)
        out.extend(sorted(tx.identifiers(q)))
    return list(dict.fromkeys(out))[:limit]


def _graded(
    question: str, keep: Sequence[Record], scorer: sm.SetwiseScorer, *, reader: bool = False
) -> tuple[dict[str, float] | None, dict[str, float], set[str]]:
    """The setwise features of what the pruner keeps of ``keep`` (``None`` under MIN_SETWISE_LIST), the lexical
    features of the whole list, and the kept ids; ``reader``: the setwise features also hold the sentence reader's
    (:func:`admit.answerability.reader.reader_features`, read with the scorer's embedder)."""
    items = setwise_items(keep)
    s = scorer.score(question, items)
    best = int(np.argmax(s.probs))
    kept = [j for j in range(len(items)) if s.grades[j] >= 3 or j == best]
    every = [f"{it.title}\n{it.text}" for it in items]
    texts = [every[j] for j in kept]
    fs = an.features(
        question,
        texts,
        dense=[s.dense[j] for j in kept],
        probs=[s.probs[j] for j in kept],
        expected_needed=s.expected_needed,
        pool=every,
    )
    if reader:
        fs.update(reader_features(question, texts, probs=[s.probs[j] for j in kept], embedder=scorer.embedder))
    fl = an.features(question, every, pool=every)
    return (fs if len(items) >= an.MIN_SETWISE_LIST else None), fl, {items[j].id for j in kept}


def cases(
    row: Record,
    scorer: sm.SetwiseScorer,
    rng: random.Random,
    *,
    other: Record | None = None,
    foreign: Sequence[str] = (),
    reader: bool = False,
) -> list[tuple[str, dict[str, float] | None, dict[str, float], int]]:
    """(question, setwise features, lexical features, label) for lists with and without their gold chunks; the label
    is 2 for an answerable list whose gold chunks the pruner all kept.

    The two lists of a pair have the same length (the answerable one loses as many random distractors as the
    other loses gold chunks), so no feature can tell them apart by size; a second pair is short (the gold and one
    distractor against that many distractors), as a framework's top-2 or top-3 hands over; a third is the gold
    alone against as many distractors alone.

    Two unanswerable cases a user of documentation meets besides the near misses above: the question **transplanted**
    onto ``other``'s list (a question of the same family about another page or product), and the question
    **asking about a name the list never mentions** (one of ``foreign``, from another family's questions, joined to
    the question as an integration or option would be) beside its own gold.
    """
    cands = row["candidates"]
    gold = set(row["required"])
    others = [c for c in cands if c["id"] not in gold]
    k = len(gold & {c["id"] for c in cands})
    if k == 0 or len(others) < k + 1:
        return []
    drop = {c["id"] for c in rng.sample(others, k)}
    full_yes = [c for c in cands if c["id"] not in drop]
    short_no = rng.sample(others, k + 1)
    short_yes = [c for c in cands if c["id"] in gold] + [rng.choice(others)]
    rng.shuffle(short_yes)
    out = []
    gold_only = [c for c in cands if c["id"] in gold]
    q = row["question"]
    pairs = [("answerable", q, 1, full_yes), ("near miss", q, 0, others), ("answerable short", q, 1, short_yes)]
    pairs += [("near miss short", q, 0, short_no), ("gold only", q, 1, gold_only)]
    pairs.append(("near miss distractors", q, 0, rng.sample(others, k)))
    if other is not None and other["candidates"]:
        pairs.append(("transplanted", q, 0, list(other["candidates"])))
    texts = " ".join(f"{c.get('title') or ''} {c.get('text') or ''}" for c in cands).lower()
    absent = [t for t in foreign if t.lower() not in texts]
    if absent:
        pairs.append(("names what the list lacks", injected_question(q, rng.choice(absent), rng), 0, full_yes))
    for kind, question, label, keep in pairs:
        if not keep:
            continue
        fs, fl, kept_ids = _graded(question, keep, scorer, reader=reader)
        all_kept = label == 1 and gold <= kept_ids
        for f in (fs, fl):
            if f is not None:
                f[CASE_KIND] = CASE_KINDS.index(kind)  # for the figures per kind; no model reads it
        # the setwise model is used only on lists of MIN_SETWISE_LIST or more (an.assess): fit it on those
        out.append((question, fs, fl, 2 if all_kept else label))
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 400) -> tuple[np.ndarray, float]:
    """Newton's method on the L2-regularised log loss; returns (coef, bias) of standardised features."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        g = xb.T @ (p - y) + reg * w
        h = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


def states(model: an.AnswerabilityModel, rows: Sequence[Case]) -> np.ndarray:
    """The three-state verdict per case: 0 not answered, 1 unsure, 2 answered (the rule for short questions
    included, as :func:`admit.answerability.assess` applies it)."""
    return np.array([an.STATES.index(model.state(f)) for f, _ in rows], dtype=np.int64)


def figures(model: an.AnswerabilityModel, rows: Sequence[Case]) -> dict[str, Any]:
    """Per family: how often "not answered" is said of answerable lists whose gold the pruner kept (the false
    alarm a user acts on), of unanswerable lists (its recall), and how often each is "unsure"."""
    st = states(model, rows)
    y = np.array([lab for _, lab in rows])
    kept, no = y == 2, y == 0
    ps = np.array([model.probability(f) for f, _ in rows])

    def share(mask: np.ndarray, value: int) -> float:
        return round(float((st[mask] == value).mean()), 4) if mask.any() else float("nan")

    kinds = np.array([int(f.get(CASE_KIND, -1)) for f, _ in rows])
    by_kind = {
        name: {
            "cases": int((kinds == i).sum()),
            "not_answered": share(no & (kinds == i), 0),
            "unsure": share(no & (kinds == i), 1),
        }
        for i, name in enumerate(CASE_KINDS)
        if (no & (kinds == i)).any()
    }
    return {
        "cases": len(rows),
        "unanswerable_by_kind": by_kind,
        "answerable_kept": int(kept.sum()),
        "unanswerable": int(no.sum()),
        "not_answered_on_answerable_kept": share(kept, 0),
        "unsure_on_answerable_kept": share(kept, 1),
        "not_answered_on_unanswerable": share(no, 0),
        "unsure_on_unanswerable": share(no, 1),
        "brier": round(float(((ps - (y > 0)) ** 2).mean()), 4) if len(rows) else float("nan"),
    }


def fit_model(
    kind: str,
    data: Cases,
    families: Sequence[str],
    *,
    max_false_alarm: float,
    max_family_false_alarm: float,
    max_unsure: float,
    extra: Sequence[str] = (),
) -> an.AnswerabilityModel:
    """Logistic regression on the families' cases, then the two thresholds:

    * ``threshold`` ("not answered" below it): at most ``max_false_alarm`` of all the answerable lists whose gold was
      kept fall below it, and at most ``max_family_false_alarm`` of any one family's (so one family's scale does not
      set it for another, and none pays for the others);
    * ``answered_at`` ("answered" at or above it): the highest value that leaves at most ``max_unsure`` of all cases
      between the two thresholds: "unsure" is the exception, not the default.

    ``extra``: features read besides the kind's own (:data:`admit.answerability.features.KNOWN_FEATURES`).
    """
    feats = (*an.FEATURES[kind], *(f for f in extra if f not in an.FEATURES[kind]))
    tr = [c for k in families for c in data[k]]
    x = np.array([[f[n] for n in feats] for f, _ in tr])
    y = np.array([lab > 0 for _, lab in tr], dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    coef, bias = fit_logistic((x - mean) / scale, y)
    model = an.AnswerabilityModel(
        name=kind,
        features=feats,
        mean=tuple(round(float(v), 6) for v in mean),
        scale=tuple(round(float(v), 6) for v in scale),
        coef=tuple(round(float(v), 6) for v in coef),
        bias=round(bias, 6),
    )

    def kept_ps(rows: Sequence[Case]) -> np.ndarray:
        return np.sort([model.probability(f) for f, lab in rows if lab == 2 and not f.get("short_held")])

    lows = []
    pooled = kept_ps(tr)
    if len(pooled):
        lows.append(float(pooled[int(max_false_alarm * len(pooled))]))
    for k in families:
        p = kept_ps(data[k])
        if len(p) >= 20:
            lows.append(float(p[min(len(p) - 1, int(max_family_false_alarm * len(p)))]))
    thr = round(min(min(lows) if lows else 0.05, 0.5), 4)
    ps = np.sort([model.probability(f) for f, _ in tr if not f.get("short_held")])
    above = ps[ps >= thr]
    # the band [thr, hi) holds at most max_unsure of all cases: hi is the value max_unsure * n cases above thr
    room = int(max_unsure * len(ps))
    hi = float(above[min(room, len(above) - 1)]) if len(above) else thr
    return dataclasses.replace(model, threshold=thr, answered_at=round(max(hi, thr), 4))


@dataclass(frozen=True, kw_only=True)
class AnswerabilityArgs(FitArgs):
    """``scripts/fit_answerability.py``'s arguments."""

    train: str = arg(TRAIN)
    valid: str = arg(VALID)
    per_file: int = arg(40)
    valid_per_file: int = arg(40)
    cache_dir: str = arg("/tmp/answer_cache")
    out: str = arg(str(an.DEFAULT_PATH))
    no_write: bool = arg(False)
    dump: str = arg("", help="write every case's features and label (JSON) here")
    cases: str = arg("", help="read the cases of an earlier --dump instead of computing them")
    max_false_alarm: float = arg(0.05, help="at most this share of all answerable lists is 'not answered'")
    # no cap per family by default: in the API families (restbench, apibench) an answerable question routinely names
    # what no chunk holds (an artist, an image), and a cap there sets the threshold for every other family
    max_family_false_alarm: float = arg(1.0, help="... and at most this share of any one family's")
    max_unsure: float = arg(0.15, help="at most this share of all cases is 'unsure'")
    setwise_extra: str = arg("", help="comma-separated features the setwise model reads besides its own")
    reader: bool = arg(False, help="compute the sentence reader's features (admit.answerability.reader) for --dump")


def compute_cases(
    train: dict[str, list[Record]],
    valid: dict[str, list[Record]],
    vc: VectorCache,
    rng: random.Random,
    *,
    reader: bool = False,
) -> dict[str, Cases]:
    """Every case's features and label, per model kind and file (``reader``: the sentence reader's features too)."""
    files = {**train, **valid}
    vc.fill(setwise_texts(r for rows in files.values() for r in rows))
    if reader:  # the sentences the reader reads of every candidate, in one batch (its own question's)
        vc.fill(
            t
            for rows in files.values()
            for r in rows
            for c in r["candidates"]
            for t in reader_texts(r["question"], f"{c.get('title') or ''}\n{c.get('text') or ''}")
        )
    scorer = sm.SetwiseScorer(embedder=vc)
    data: dict[str, Cases] = {"setwise": {}, "lexical": {}}
    for name, rows in files.items():
        foreign = foreign_terms([r for k, rr in files.items() if family(k) != family(name) for r in rr])
        rng.shuffle(foreign)
        got = [
            c
            for i, r in enumerate(rows)
            for c in cases(
                r,
                scorer,
                rng,
                other=rows[(i + 1) % len(rows)] if len(rows) > 1 else None,
                foreign=foreign,
                reader=reader,
            )
        ]
        data["setwise"][name] = [(fs, lab) for _, fs, _, lab in got if fs is not None]
        data["lexical"][name] = [(fl, lab) for _, _, fl, lab in got]
        print(f"  {name}: {len(got)} cases", file=sys.stderr)
    vc.save()
    return data


def write_models(
    args: AnswerabilityArgs, data: dict[str, Cases], train: dict[str, list[Record]], valid: dict[str, list[Record]]
) -> None:
    """Fit both models, score them leave one family out, write the file."""
    limits = {
        "max_false_alarm": args.max_false_alarm,
        "max_family_false_alarm": args.max_family_false_alarm,
        "max_unsure": args.max_unsure,
    }
    fit_on = [k for k in train if k in TRAIN_FILES]
    out: dict[str, Any] = {"version": 2, "models": {}, "meta": {"trained_on": {k: len(train[k]) for k in fit_on}}}
    report: dict[str, Any] = {}
    extra = {"setwise": tuple(f for f in args.setwise_extra.split(",") if f), "lexical": ()}
    unknown = [f for f in extra["setwise"] if f not in KNOWN_FEATURES]
    if unknown:
        raise SystemExit(f"unknown features {unknown}")
    for kind in ("setwise", "lexical"):
        model = fit_model(kind, data[kind], fit_on, **limits, extra=extra[kind])
        out["models"][kind] = model.to_json()
        # leave one family out: each family scored by a model (and thresholds) fitted without it
        lofo = {}
        for k in [*train, *valid]:
            m = (
                fit_model(kind, data[kind], [f for f in fit_on if f != k], **limits, extra=extra[kind])
                if k in fit_on
                else model
            )
            lofo[k] = figures(m, data[kind][k])
        report[kind] = {"thresholds": [model.threshold, model.answered_at], "leave_one_family_out": lofo}
    out["meta"]["figures"] = report
    out["meta"]["validated_on"] = {k: len(v) for k, v in valid.items()}
    print(json.dumps(report, indent=1))
    if not args.no_write:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)


def run(args: AnswerabilityArgs) -> None:
    """Sample the lists, compute (or read) the cases, fit and write both models."""
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    vc = VectorCache(cache / "vecs.npz")
    rng = random.Random(20261201)
    train_all = read_folder(Path(args.train))
    wanted = (*TRAIN_FILES, *RESEARCH_FILES)
    train = {k: rng.sample(v, min(args.per_file, len(v))) for k, v in train_all.items() if k in wanted}
    valid_all = read_folder(Path(args.valid))
    valid = {k: rng.sample(v, min(args.valid_per_file, len(v))) for k, v in valid_all.items()}
    if args.cases and Path(args.cases).exists():  # the features of an earlier run (--dump): refit only
        data = json.loads(Path(args.cases).read_text())
    else:
        reader = args.reader or any(f in READER for f in args.setwise_extra.split(","))
        data = compute_cases(train, valid, vc, rng, reader=reader)
    if args.dump:
        Path(args.dump).write_text(json.dumps(data))
    write_models(args, data, train, valid)
