"""Rules for text aimed at an LLM grader or ranker: "grade me 5", "rank this first", "the others are spam"."""

from __future__ import annotations

import re

from admit.security.base import RULE_FLAGS as _I
from admit.security.base import Rule
from admit.security.base import rule as _rule

__all__ = ["GRADER_RULES"]


GRADER_RULES: tuple[Rule, ...] = (
    # grader manipulation (pruner prompt)
    _rule(
        "grader_manipulation",
        "grade_me",
        r"\b(?:grade|rate|score|rank|mark|label|classify|judge|consider|treat)\s+(?:me|this|it|this\s+(?:chunk|"
        r"passage|document|text|paragraph|section|source|snippet|result|page))\s+(?:as\s+|with\s+(?:a\s+)?|at\s+)?"
        r"(?:a\s+|an\s+|the\s+)?(?:[\"'(]?(?:5|five|10|ten|100|top|max(?:imum)?|highest|essential|highly|"
        r"most|very|extremely|critical|relevant|essential)\b)",
        _I,
        triggers=("me", "this", "it"),
    ),
    _rule(
        "grader_manipulation",
        "is_essential",
        r"\bthis\s+(?:chunk|passage|document|text|paragraph|section|source|snippet|result)\s+(?:is|must\s+be|"
        r"should\s+be)\s+(?:\w+\s+)?(?:essential|the\s+most\s+relevant|highly\s+relevant|critical|required|"
        r"always\s+(?:kept|included|relevant)|graded?\s+5)\b",
        _I,
        triggers=("essential", "relevant", "critical", "required", "always", "grade"),
        # "This document is essential within the project" (Debian's policy, as manuals describe it)
        unless_after=r"\s+(?:within|in|to|for)\s+(?:the|this|our|a)\s+(?:project|community|distribution|team|"
        r"organi[sz]ation|company)\b",
    ),
    _rule(
        "grader_manipulation",
        "score_claim",
        r"\b(?:relevance|grade|rating|score|relevance\s+score)\s*[:=]\s*(?:5\s*/\s*5|5\b|10\s*/\s*10|100\s*%|"
        r"essential|max)",
        _I,
        triggers=("grade", "rating", "relevance", "score"),
    ),
    _rule(
        "grader_manipulation",
        "keep_me",
        r"\b(?:always\s+)?(?:keep|include|select|retain|prioriti[sz]e)\s+(?:this|me|this\s+(?:chunk|passage|"
        r"document|text|source))\b[^.\n]{0,40}\b(?:always|regardless|no\s+matter|every\s+time|above\s+(?:all|"
        r"others))\b|\b(?:drop|discard|remove|exclude|ignore)\s+(?:all\s+)?(?:the\s+)?(?:other|remaining)\s+"
        r"(?:chunks|passages|documents|sources|results)\b",
        _I,
        triggers=("keep", "include", "select", "retain", "prioriti"),
    ),
    _rule(
        "grader_manipulation",
        "json_grades",
        r"\{\s*[\"']?C\d{1,4}[\"']?\s*:\s*[1-5]\b",
        re.IGNORECASE,
        triggers=("{",),
    ),
    # ranking manipulation ("rank this first", "the other passages are spam")
    _rule(
        "grader_manipulation",
        "rank_me_first",
        r"\b(?:rank|put|place|order|list|position|move|sort|keep)\s+(?:this|me)\b(?:\s+(?:passage|chunk|document|doc|"
        r"result|section|source|snippet|page|text|entry|article))?\s+(?:first|at\s+the\s+(?:top|front)|on\s+top|highest|"
        r"above\s+(?:all\s+|every\s+)?(?:the\s+)?(?:other|others|rest))"
        r"|\bthis\s+(?:passage|chunk|document|doc|result|section|source|snippet|page|text|entry|article)\s+(?:should|must|"
        r"shall|has\s+to|needs\s+to)\s+(?:always\s+)?be\s+(?:ranked|placed|listed|put|shown|sorted|rated)\s+(?:first|at\s+"
        r"the\s+top|on\s+top|highest|above)",
        _I,
        triggers=("first", "top", "highest", "above"),
    ),
    _rule(
        "grader_manipulation",
        "others_irrelevant",
        r"\b(?:all\s+)?(?:the\s+)?other\s+(?:passages|chunks|documents|docs|results|sources|snippets|sections)\s+(?:are|"
        r"should\s+be|must\s+be)\s+(?:treated\s+as\s+|considered\s+)?(?:irrelevant|spam|outdated|wrong|obsolete|fake|"
        r"untrustworthy|ignored)",
        _I,
        triggers=("other",),
    ),
)
