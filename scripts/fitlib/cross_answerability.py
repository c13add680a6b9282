"""The ``cross`` answerability model: cases from the cross model's scores of the lists a cross fit kept out of
sample, fitted as :mod:`fitlib.answerability` fits the others (``scripts/fit_cross_answerability.py``)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from admit import answerability as an
from fitlib.answerability import RESEARCH_FILES, Case, Cases, figures, fit_model
from fitlib.args import FitArgs, arg
from fitlib.cross_cache import CACHE_LAYERS, StateCache, build_caches
from fitlib.cross_data import EXCLUDE, List_, ListSpec, load_lists
from fitlib.cross_torch import Joint, score_lists
from fitlib.data import TRAIN, VALID

__all__ = ["CrossAnswerabilityArgs", "cases", "run"]


@dataclass(frozen=True, kw_only=True)
class CrossAnswerabilityArgs(FitArgs):
    """``scripts/fit_cross_answerability.py``'s arguments (the data ones as the cross fit's)."""

    model: str = arg(required=True)
    fit_args: str = arg("", help="the fit log whose data arguments rebuild the same lists")
    train: str = arg(TRAIN)
    valid: str = arg(VALID)
    cache_dir: str = arg("/tmp/admit_cross")
    per_file: int = arg(0)
    negatives: int = arg(4)
    test_sample: int = arg(150)
    self_supervised: bool = arg(False)
    ss_per_file: int = arg(1500)
    seed: int = arg(0)
    max_false_alarm: float = arg(0.03)
    max_family_false_alarm: float = arg(0.08)
    max_unsure: float = arg(0.15)
    write: str = arg("", help="add the model to this answerability.json")
    scores: str = arg("", help="cache of the cross scores (JSON)")

    def lists(self) -> ListSpec:
        """The cross fit's lists (its research-use families excluded, as it excludes them)."""
        return ListSpec.of(self, exclude=",".join(EXCLUDE))


def cases(lst: List_, scores: np.ndarray) -> list[Case]:
    """The gold with the best-scored other chunk against as many best-scored others, and the gold alone against
    as many others alone."""
    gold = [i for i in range(len(lst.y)) if lst.y[i] > 0]
    others = sorted((i for i in range(len(lst.y)) if lst.y[i] == 0), key=lambda i: -scores[i])
    k = len(gold)
    if not k or len(others) < k + 1:
        return []
    sets = ((2, [*gold, others[0]]), (0, others[: k + 1]), (2, gold), (0, others[:k]))
    out = []
    for label, kept in sets:
        f = an.features(lst.question, [lst.passages[i] for i in kept], cross=[float(scores[i]) for i in kept])
        out.append((f, label))
    return out


def _model_k(path: Path) -> int:
    with np.load(path, allow_pickle=False) as z:
        return int(json.loads(bytes(z["meta"]).decode("utf-8"))["bottom_layers"])


def _scores(
    args: CrossAnswerabilityArgs, evals: dict[str, list[List_]], qc: StateCache, pc: StateCache, k: int
) -> dict[str, list[float]]:
    cache = Path(args.scores) if args.scores else None
    if cache is not None and cache.exists():
        return dict(json.loads(cache.read_text()))
    model = Joint(k, "cpu", 0)
    model.load(Path(args.model))
    out: dict[str, list[float]] = {}
    for name, lists in evals.items():
        for lst, s in zip(lists, score_lists(model, lists, qc, pc, "cpu"), strict=True):
            out[f"{name}:{lst.qid}"] = [float(v) for v in s]
    if cache is not None:
        cache.write_text(json.dumps(out))
    return out


def _write(path: Path, model: an.AnswerabilityModel, report: dict[str, Any], fitted_on: dict[str, int]) -> None:
    """Add the cross model and its figures to an ``answerability.json``."""
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["models"]["cross"] = model.to_json()
    stored.setdefault("meta", {}).setdefault("figures", {})["cross"] = report
    stored["meta"]["cross_fitted_on"] = fitted_on
    path.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    print(f"wrote the cross model into {path}", file=sys.stderr)


def run(args: CrossAnswerabilityArgs) -> int:
    """Score the lists, fit on the shippable families, score leave one family out, write (``--write``)."""
    k = _model_k(Path(args.model))
    train, evals = load_lists(args.lists())
    qc, pc = build_caches(Path(args.cache_dir), CACHE_LAYERS, train, evals)
    scores = _scores(args, evals, qc, pc, k)
    data: Cases = {}
    for name, lists in evals.items():
        fam = name.split(" ")[0]
        data[fam] = [c for lst in lists for c in cases(lst, np.asarray(scores[f"{name}:{lst.qid}"]))]
        print(f"  {fam}: {len(data[fam])} cases", file=sys.stderr)
    limits: dict[str, Any] = {
        "max_false_alarm": args.max_false_alarm,
        "max_family_false_alarm": args.max_family_false_alarm,
        "max_unsure": args.max_unsure,
    }
    fit_on = [f for f in data if f not in RESEARCH_FILES]
    model = fit_model("cross", data, fit_on, **limits)
    report: dict[str, Any] = {"thresholds": [model.threshold, model.answered_at], "leave_one_family_out": {}}
    for fam in data:
        rest = [f for f in fit_on if f != fam]
        m = fit_model("cross", data, rest, **limits) if fam in fit_on and rest else model
        report["leave_one_family_out"][fam] = figures(m, data[fam])
    print(json.dumps(report, indent=1))
    if args.write:
        _write(Path(args.write), model, report, {f: len(data[f]) for f in fit_on})
    return 0
