"""The cheap test that skips most rules for ordinary text: does the text hold one of a rule's triggers?"""

from __future__ import annotations

from admit import _linear
from admit.security.base import Rule

__all__ = ["Prefilter"]

_WORDS = _linear.simple(r"[a-z]+")  # one character class: linear on the stdlib engine, and fast


class Prefilter:
    """A normalised text, lower-cased and split into words once, asked rule by rule."""

    __slots__ = ("low", "norm", "words")

    def __init__(self, norm: str) -> None:
        self.norm = norm
        """The normalised text."""
        self.low = norm.lower()
        """Lower-cased (what case-folding rules' triggers are looked for in)."""
        self.words = set(_WORDS.findall(self.low))
        """Its ASCII words (short triggers must be whole words: "ai" is not in "maintain")."""

    def admits(self, rule: Rule) -> bool:
        """Whether ``rule`` can match at all (it has no triggers, or the text holds one)."""
        if not rule.triggers:
            return True
        fold = rule.folds_case
        hay = self.low if fold else self.norm
        for t in rule.triggers:
            if fold and len(t) <= 3 and t.isascii() and t.isalpha():
                if t in self.words:
                    return True
            elif t in hay:
                return True
        return False
