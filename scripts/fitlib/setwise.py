"""The setwise fit, step by step: read and prepare the lists, fit on the training folder and score out of sample,
leave each family out, plot, refit what ships and write it (``scripts/fit_setwise.py`` is its command line)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admit.backends.embedders.minilm import FP32_NAME, INT8_NAME
from admit.prune import setwise_model as sm
from fitlib.args import FitArgs, arg
from fitlib.data import TRAIN, VALID, Record, family, read_folder
from fitlib.setwise_data import Question, augment, prepare_set
from fitlib.setwise_fit import GRADE_COMPRESSION, Fitted, TreeParams, fit_all
from fitlib.setwise_report import CURVES, plot, report
from fitlib.vectors import VectorCache

__all__ = ["SetwiseArgs", "run"]

HELD_TITLE = "Fitted on the training folder, scored on the validation folder (out of sample):"


@dataclass(frozen=True, kw_only=True)
class SetwiseArgs(FitArgs):
    """``scripts/fit_setwise.py``'s arguments."""

    train: str = arg(TRAIN)
    valid: str = arg(VALID)
    out: str = arg(
        "",
        help="the model file to write (default: the shipped setwise.json; for onnx-int8, setwise_int8.json beside it,"
        " which admit does not read: a trial fit never replaces the float32 trees)",
    )
    cache_dir: str = arg("/tmp/setwise_cache")
    encoder: str = arg(
        "auto",
        choices=("auto", "numpy", "onnx-fp32", "onnx-int8"),
        help="the MiniLM encoder of the vectors (onnx-int8 fits the model that int8 vectors read; keep one cache"
        " folder per encoder kind)",
    )
    ship: str = arg("train+valid", choices=("train+valid", "train"))
    lodo: bool = arg(False, help="leave-one-dataset-family-out figures")
    no_aug: bool = arg(False, help="no augmented training lists")
    exclude: str = arg("", help="comma-separated training file stems to leave out")
    stages: int = arg(2)
    iters: int = arg(200)
    lr: float = arg(0.08)
    leaves: int = arg(15)
    folds: int = arg(3, help="out-of-fold splits for the stacked stages")
    seed: int = arg(20261130)
    no_write: bool = arg(False, help="report only, do not write the model file")
    test_only: str = arg(
        "docs_policyqa",
        help="comma-separated training file stems never fitted on, only scored out of sample by the train-only and"
        " the shipped fit (docs_policyqa is research-use text: no shipped model may be fitted on it)",
    )
    drop_features: str = arg("", help="comma-separated base features set to 0 (ablation)")
    train_only_out: str = arg("", help="also write the train-only fit here")
    plot: str = arg("", help="draw the out-of-sample curves (and leave-one-out ones) to this PNG")
    lodo_only: str = arg("", help="comma-separated families: leave out only these with --lodo")

    @property
    def trees(self) -> TreeParams:
        """The trees' settings."""
        return TreeParams(stages=self.stages, iters=self.iters, lr=self.lr, leaves=self.leaves, folds=self.folds)


def _names(csv: str) -> set[str]:
    return set(filter(None, csv.split(",")))


@dataclass
class Lists:
    """The prepared lists: fitted on, validation, and training files never fitted on."""

    train: dict[str, list[Question]]
    valid: dict[str, list[Question]]
    held_out: dict[str, list[Question]]

    @property
    def scored(self) -> dict[str, list[Question]]:
        """Every list scored out of sample."""
        return {**self.valid, **self.held_out}


def read_rows(args: SetwiseArgs) -> tuple[dict[str, list[Record]], dict[str, list[Record]], dict[str, list[Record]]]:
    """(training, never-fitted training, validation) records by file; augmented lists added to the training ones."""
    excluded, test_only = _names(args.exclude), _names(args.test_only)
    all_train = read_folder(Path(args.train))
    train_rows = {k: v for k, v in all_train.items() if k not in excluded | test_only}
    held_rows = {k: v for k, v in all_train.items() if k in test_only and k not in excluded}
    valid_rows = read_folder(Path(args.valid))
    if train_rows and not args.no_aug:
        train_rows.update(augment(train_rows, args.seed))
    return train_rows, held_rows, valid_rows


def prepare_lists(
    rows: tuple[dict[str, list[Record]], dict[str, list[Record]], dict[str, list[Record]]],
    cache_dir: Path,
    encoder: str = "auto",
) -> Lists:
    """Embed and prepare every list (cached under ``cache_dir``); prints the counts."""
    train_rows, held_rows, valid_rows = rows
    vc = VectorCache(cache_dir / "vecs.npz", encoder)
    t0 = time.time()
    lists = Lists(
        train={k: prepare_set(k, v, vc, cache_dir) for k, v in train_rows.items()},
        valid={k: prepare_set(k, v, vc, cache_dir) for k, v in valid_rows.items()},
        held_out={k: prepare_set(k, v, vc, cache_dir) for k, v in held_rows.items()},
    )
    print(
        f"prepared {sum(map(len, lists.train.values()))} training and {sum(map(len, lists.valid.values()))} validation"
        f" lists in {time.time() - t0:.0f}s: "
        + ", ".join(f"{k} {len(v)}" for k, v in {**lists.train, **lists.valid}.items())
        + (f"; never fitted on: {', '.join(lists.held_out)}" if lists.held_out else "")
    )
    return lists


def drop_features(lists: Lists, names: set[str]) -> None:
    """Set the named base features to 0 in every list (an ablation)."""
    for name in names:
        col = sm.BASE_FEATURES.index(name)
        for qs in (*lists.train.values(), *lists.scored.values()):
            for q in qs:
                q.prep.base[:, col] = 0.0


def fit_train_only(args: SetwiseArgs, lists: Lists) -> tuple[Fitted, dict[str, Any]]:
    """The fit on the training folder and its out-of-sample figures (written too with ``--train-only-out``)."""
    t0 = time.time()
    fitted = fit_all([q for qs in lists.train.values() for q in qs], args.trees)
    print(
        f"fitted on the training folder in {time.time() - t0:.0f}s; cut points {fitted.model.cuts};"
        f" keep bounds {fitted.model.keep_bounds}",
        flush=True,
    )
    held = report(fitted.model, lists.scored, HELD_TITLE)
    if args.train_only_out:
        tpath = Path(args.train_only_out)
        tmeta: dict[str, Any] = {"trained_on": {k: len(v) for k, v in lists.train.items()}, "out_of_sample": held}
        tpath.write_text(json.dumps(_with_meta(fitted.model, tmeta).to_json()) + "\n", encoding="utf-8")
        print(f"wrote the train-only fit to {tpath}")
    return fitted, held


def _with_meta(m: sm.SetwiseModel, meta: dict[str, Any]) -> sm.SetwiseModel:
    return sm.SetwiseModel(stages=m.stages, coverage=m.coverage, cuts=m.cuts, meta=meta, keep_bounds=m.keep_bounds)


def leave_one_family_out(args: SetwiseArgs, lists: Lists) -> dict[str, Any]:
    """Per family of train + valid: fitted on every other family, scored on it."""
    everything = {**lists.train, **lists.valid}
    only = _names(args.lodo_only)
    lodo: dict[str, Any] = {}
    for fam in sorted({family(k) for k in everything if not k.startswith("aug_")}):
        if only and fam not in only:
            continue
        rest = [
            q
            for k, qs in everything.items()
            if family(k) != fam and not (k.startswith("aug_") and fam in k)
            for q in qs
        ]
        test = {k: qs for k, qs in everything.items() if family(k) == fam and not k.startswith("aug_")}
        m = fit_all(rest, args.trees).model
        lodo[fam] = report(m, test, f"Leave {fam} out (fitted on every other family of train + valid):")
    return lodo


def draw(path: Path, valid_names: set[str]) -> None:
    """The out-of-sample curves and the left-out families' (not the validation files again)."""
    panels = dict(CURVES[HELD_TITLE])
    for title, sets in CURVES.items():
        if title.startswith("Leave "):
            panels.update({f"{k} (left out)": v for k, v in sets.items() if k not in valid_names})
    plot(panels, path, "out of sample: fitted on ../shared/train only (or leaving the family out)")


def ship_meta(args: SetwiseArgs, lists: Lists, held: dict[str, Any], lodo: dict[str, Any]) -> dict[str, Any]:
    """The shipped model's ``meta``: how it was fitted and the out-of-sample figures."""
    p = args.trees
    fitted_on = lists.train | (lists.valid if args.ship == "train+valid" else {})
    return {
        "embedder": INT8_NAME if args.encoder == "onnx-int8" else FP32_NAME,
        "passage_words": sm.PASSAGE_WORDS,
        "fit": {"stages": p.stages, "iters": p.iters, "lr": p.lr, "leaves": p.leaves, "augmented": not args.no_aug},
        "trained_on": {k: len(v) for k, v in fitted_on.items()},
        "out_of_sample": {"fitted_on": sorted(lists.train), "scored_on": held},
        "leave_one_family_out": lodo,
        "cut_rule": "grade g (2..5) when coverage_before < cuts[g-2]; cuts put the mean out-of-fold training"
        f" compression at {GRADE_COMPRESSION} for grades 2..5; each threshold's keep count clamped to keep_bounds",
        "never_fitted_on": sorted(lists.held_out),
    }


def out_path(args: SetwiseArgs) -> Path:
    """The model file to write: ``--out``, else the shipped ``setwise.json`` for float32 vectors and
    ``setwise_int8.json`` beside it for ``--encoder onnx-int8`` (a fit on int8 vectors never replaces the float32
    trees unasked)."""
    if args.out:
        return Path(args.out)
    default = sm.DEFAULT_MODEL_PATH
    return default.with_name("setwise_int8.json") if args.encoder == "onnx-int8" else default


def ship(args: SetwiseArgs, lists: Lists, fitted: Fitted, meta: dict[str, Any]) -> None:
    """Refit on train + valid (``--ship train+valid``) or keep the train-only fit; write the model file."""
    t0 = time.time()
    out = out_path(args)
    if args.ship == "train+valid":
        flat = [q for qs in (*lists.train.values(), *lists.valid.values()) for q in qs]
        model = fit_all(flat, args.trees, meta).model
        print(f"refitted on train + valid in {time.time() - t0:.0f}s; cut points {model.cuts}")
        if lists.held_out:
            meta["never_fitted_on_scores"] = report(model, lists.held_out, "The shipped fit on files it never saw:")
    else:
        model = _with_meta(fitted.model, meta)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


def run(args: SetwiseArgs) -> int:
    """The whole fit; 2 when a folder holds no list."""
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    rows = read_rows(args)
    if not rows[0] or not rows[2]:
        print("no data: --train and --valid must hold *.jsonl(.gz) files", file=sys.stderr)
        return 2
    lists = prepare_lists(rows, cache_dir, args.encoder)
    drop_features(lists, _names(args.drop_features))
    fitted, held = fit_train_only(args, lists)
    lodo = leave_one_family_out(args, lists) if args.lodo else {}
    if args.plot:
        draw(Path(args.plot), set(rows[2]))
    if not args.no_write:
        ship(args, lists, fitted, ship_meta(args, lists, held, lodo))
    return 0
