"""The cheap test that skips most rules for ordinary text: does the text hold one of a rule's triggers?"""

from __future__ import annotations

from admit import _linear
from admit.security.base import Rule
from admit.security.rules import RULES

__all__ = ["Prefilter"]

_WORDS = _linear.simple(r"[a-z]+")  # one character class: linear on the stdlib engine, and fast


def _whole_word(rule: Rule, t: str) -> bool:
    """Whether trigger ``t`` of ``rule`` must be a whole word (short, alphabetic, of a case-folding rule)."""
    return rule.folds_case and len(t) <= 3 and t.isascii() and t.isalpha()


class _Index:
    """Every shipped rule's triggers, looked up at once: the whole-word ones in the word set, the others in
    two literal sets (one over the lower-cased text, one over the text as written)."""

    def __init__(self, rules: tuple[Rule, ...] | list[Rule]) -> None:
        folded: list[str] = []
        written: list[str] = []
        self.plan: dict[int, tuple[Rule, frozenset[str], frozenset[int], frozenset[int]]] = {}
        for r in rules:
            words = frozenset(t for t in r.triggers if _whole_word(r, t))
            rest = [t for t in r.triggers if not _whole_word(r, t)]
            into = folded if r.folds_case else written
            ids = frozenset(range(len(into), len(into) + len(rest)))
            into.extend(rest)
            self.plan[id(r)] = (r, words, ids if r.folds_case else frozenset(), frozenset() if r.folds_case else ids)
        self.folded = _linear.LiteralSet(folded)
        self.written = _linear.LiteralSet(written)


_INDEX: _Index | None = None


def _index() -> _Index:
    global _INDEX
    if _INDEX is None:
        _INDEX = _Index(RULES)
    return _INDEX


class Prefilter:
    """A normalised text, lower-cased and split into words once, asked rule by rule."""

    __slots__ = ("_folded", "_written", "low", "norm", "words")

    def __init__(self, norm: str) -> None:
        self.norm = norm
        """The normalised text."""
        self.low = norm.lower()
        """Lower-cased (what case-folding rules' triggers are looked for in)."""
        self.words = set(_WORDS.findall(self.low))
        """Its ASCII words (short triggers must be whole words: "ai" is not in "maintain")."""
        self._folded: set[int] | None = None
        self._written: set[int] | None = None

    def admits(self, rule: Rule) -> bool:
        """Whether ``rule`` can match at all (it has no triggers, or the text holds one)."""
        if not rule.triggers:
            return True
        index = _index()
        plan = index.plan.get(id(rule))
        if plan is not None and plan[0] is rule:  # a shipped rule: its triggers were looked up in one pass
            _, words, folded, written = plan
            if not words.isdisjoint(self.words):
                return True
            if folded:
                if self._folded is None:
                    self._folded = index.folded.present(self.low)
                if not folded.isdisjoint(self._folded):
                    return True
            if written:
                if self._written is None:
                    self._written = index.written.present(self.norm)
                if not written.isdisjoint(self._written):
                    return True
            return False
        fold = rule.folds_case
        hay = self.low if fold else self.norm
        for t in rule.triggers:
            if fold and len(t) <= 3 and t.isascii() and t.isalpha():
                if t in self.words:
                    return True
            elif t in hay:
                return True
        return False
