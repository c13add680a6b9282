"""``admit adapt``: fit the answerability thresholds to one knowledge base, without labels (:mod:`admit.kb.adapt`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from admit.cli._common import echo_json, handle_errors, json_option, open_kb, stdout_console

if TYPE_CHECKING:
    from admit.answerability.adaptation import Adaptation
    from admit.kb import KnowledgeBase

__all__ = ["adapt_cmd", "run_adapt", "summary"]


@click.command("adapt")
@click.option("--kb", "kb_path", required=True, envvar="ADMIT_KB", help="Target knowledge base file or store URL.")
@click.option(
    "--sections",
    type=click.IntRange(min=10),
    default=150,
    show_default=True,
    help="The most sections pseudo-questions are built from.",
)
@click.option("--seed", type=int, default=13, show_default=True, help="The sampling and paraphrase seed.")
@click.option("--show", is_flag=True, help="Show the stored adaptation (and whether it is stale); fit nothing.")
@click.option("--clear", is_flag=True, help="Remove the stored adaptation: the shipped thresholds decide again.")
@click.option(
    "--cut/--no-cut",
    default=False,
    show_default=True,
    help="Fit the setwise pruner's cut (keep_most) too (off by default: on the measured sites it raised the useful "
    "share 2 points and lost an answer); --no-cut fits the verdict only and the pruner keeps its shipped cut.",
)
@click.option(
    "--short-cut/--no-short-cut",
    "short",
    default=True,
    show_default=True,
    help="Fit the setwise pruner's short-chunk cut (short_below): the largest word count under which a short chunk "
    "that neither the retriever's first two nor half the list's best probability reach is left out while the "
    "sections of 97% of the pseudo-questions stay admitted.",
)
@json_option("the adaptation")
@handle_errors
def adapt_cmd(
    kb_path: str, sections: int, seed: int, show: bool, clear: bool, cut: bool, short: bool, as_json: bool
) -> None:
    """Fit the answerability verdict's thresholds to this knowledge base's own documentation.

    Builds answerable pseudo-questions from the ingested chunks (headings, lead sentences, definition terms,
    option lines; paraphrased), and unanswerable ones (the same with their section removed from the candidates,
    and questions about other products), asks them through the real search path and sets the thresholds where
    they separate the two. The result is stored in the knowledge base with its date, chunk count and figures;
    every search of it then uses it, and the trace names it. Re-run it when the knowledge base changed: an
    adaptation over 20% of whose chunks changed is marked stale and no longer used.
    """
    from admit.kb import KnowledgeBase

    if show and clear:
        raise click.UsageError("--show and --clear do not go together.")
    kb = open_kb(kb_path, None)
    assert isinstance(kb, KnowledgeBase)
    try:
        if clear:
            kb.clear_adaptation()
            click.echo(f"{kb_path}: adaptation removed; the shipped thresholds decide")
            return
        if show:
            ad = kb.check_adaptation()
            if as_json:
                echo_json(ad.as_dict() if ad is not None else None)
            else:
                click.echo(summary(ad) if ad is not None else f"{kb_path}: not adapted (shipped thresholds)")
            return
        ad = run_adapt(kb, sections=sections, seed=seed, quiet=as_json, cut=cut, short=short)
    finally:
        kb.close()
    if as_json:
        echo_json(ad.as_dict())
    else:
        stdout_console().print(summary(ad), highlight=False, markup=False)


def run_adapt(
    kb: KnowledgeBase,
    *,
    sections: int = 150,
    seed: int = 13,
    quiet: bool = False,
    cut: bool = False,
    short: bool = True,
) -> Adaptation:
    """Adapt ``kb`` (a progress line on stderr every 50 questions unless ``quiet``) and return the adaptation."""
    from admit.kb.adapt import AdaptOptions, adapt

    def progress(done: int, total: int) -> None:
        if not quiet and (done % 50 == 0 or done == total):
            click.echo(f"  adapt: {done}/{total} questions asked", err=True)

    ad, _ = adapt(kb, AdaptOptions(sections=sections, seed=seed, cut=cut, short=short), progress=progress)
    return ad


def _rate(fig: Any, kind: str, key: str = "not_answered") -> str:
    try:
        return f"{float(fig[kind][key]):.0%}"
    except (KeyError, TypeError, ValueError):
        return "-"


def _cut_figures(cut: Any) -> str:
    """What a fitted cut kept on the pseudo-questions (``figures["cut"]`` or ``figures["short_cut"]``), one clause."""
    return (
        f"the section of {cut.get('gold_kept', '-')} of {cut.get('questions', '-')} answerable pseudo-questions; "
        f"{cut.get('chunks', '-')} chunks a question, uncut {cut.get('chunks_uncut', '-')}"
    )


def summary(ad: Adaptation) -> str:
    """The adaptation in a few lines: when, on what, the thresholds, and "not answered" before and after."""
    f = ad.figures
    q = f.get("questions", {})
    lines = [
        f"{ad.label()}" + (f"; STALE, not used: {ad.stale} (run `admit adapt` again)" if ad.stale else ""),
        f"  pseudo-questions: {q.get('answerable', 0)} answerable (paraphrased), {q.get('near_miss', 0)} near misses, "
        f"{q.get('foreign', 0)} about other products",
    ]
    for name, (lo, hi) in sorted(ad.thresholds.items()):
        lines.append(f"  {name}: not answered below {lo:.3f}, answered from {hi:.3f}")
    for name, floor in sorted(ad.similarity_floor.items()):
        lines.append(f"  {name}: not answered when the best passage's similarity to the question is below {floor:.2f}")
    if ad.vocabulary:
        from admit.answerability.terms import KB_ABSENT_MIN  # here: `admit --help` imports no numpy

        lines.append(
            f"  not answered when {KB_ABSENT_MIN} or more of the question's words are nowhere in this knowledge base "
            f"({len(ad.vocabulary):,} words)"
        )
    if ad.pages:
        lines.append(
            f"  not answered when the question names one of this knowledge base's {len(ad.pages):,} pages and no "
            "retrieved candidate is from it (unsure when none admitted is)"
        )
    for name, params in sorted(ad.prune_params.items()):
        if params.get("keep_most"):
            lines.append(
                f"  {name} pruner: keeps at most its {params['keep_most']} most probable chunks above the threshold "
                f"({_cut_figures(f.get('cut', {}))})"
            )
        if params.get("short_below"):
            lines.append(
                f"  {name} pruner: leaves out chunks of fewer than {params['short_below']} words that neither the "
                f"retriever's first two nor half the list's best probability reach "
                f"({_cut_figures(f.get('short_cut', {}))})"
            )
    for label, key in (("shipped thresholds", "shipped"), ("adapted", "fitted"), ("adapted, held out", "two_fold")):
        fig = f.get(key, {})
        lines.append(
            f"  {label}: not answered on {_rate(fig, 'answerable')} of answerable, {_rate(fig, 'near_miss')} of near "
            f"misses, {_rate(fig, 'foreign')} of other products'; unsure {_rate(fig, 'answerable', 'unsure')} / "
            f"{_rate(fig, 'near_miss', 'unsure')} / {_rate(fig, 'foreign', 'unsure')}"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(adapt_cmd())
