"""Evaluation harness: labelled datasets, metrics, sweeps and the Pareto front, reports, shadow replay.

``admit eval --data FILE --strategy NAME --sweep key=v1,v2 --out DIR`` and ``admit replay``; the library
entry points are :func:`run_eval` and :func:`replay_file`.
"""

from __future__ import annotations

from admit.eval.dataset import EvalRecord, PruneInput, load_dataset, load_datasets
from admit.eval.metrics import CostRates, QuestionResult, breakdowns, diagnose, percentile, summarize
from admit.eval.replay import ReplayLog, record_for_replay, replay_file
from admit.eval.sweep import Config, EvalOptions, EvalRun, expand_grid, parse_sweep, run_eval

__all__ = [
    "Config",
    "CostRates",
    "EvalOptions",
    "EvalRecord",
    "EvalRun",
    "PruneInput",
    "QuestionResult",
    "ReplayLog",
    "breakdowns",
    "diagnose",
    "expand_grid",
    "load_dataset",
    "load_datasets",
    "parse_sweep",
    "percentile",
    "record_for_replay",
    "replay_file",
    "run_eval",
    "summarize",
]
