"""Budget: the token ledger, counted with the target model's real tokenizer.

``evidence_budget = input_limit - instruction_tokens - conversation_tokens - answer_reserve - safety_margin``

The answer reserve comes first, from the query class's answer contract; chat formatting is counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from admit.backends.tokenizers import Tokenizer, count_chat
from admit.backends.tokenizers.base import count_by_lines
from admit.errors import RequestError
from admit.policy import Policy
from admit.types import Budget, Message

__all__ = ["compute_budget", "evidence_message_tokens"]


def compute_budget(
    tokenizer: Tokenizer,
    *,
    input_limit: int,
    instructions: str,
    conversation: Sequence[Message],
    question: str,
    policy: Policy,
) -> Budget:
    """Compute the ledger for one request.

    Instructions go in the system message; the conversation and the current question are user/assistant
    messages; the reply priming is charged once. The evidence block's own message overhead is charged when
    the block is counted (:func:`evidence_message_tokens`), so the block is counted exactly as sent.
    """
    if input_limit <= 0:
        raise RequestError(f"`input_limit` must be greater than 0, got {input_limit}.", field="input_limit")
    instr = count_chat(tokenizer, [Message(role="system", content=instructions)]) if instructions else 0
    conv = count_chat(tokenizer, [*conversation, Message(role="user", content=question)], priming=True)
    return Budget(
        input_limit=input_limit,
        instruction_tokens=instr,
        conversation_tokens=conv,
        answer_reserve=policy.answer_reserve,
        safety_margin=policy.safety_margin,
        evidence_ceiling=policy.evidence_ceiling,
        tokenizer=tokenizer.name,
    )


def evidence_message_tokens(tokenizer: Tokenizer, block: str) -> int:
    """Tokens the evidence block costs as its own user message (content plus chat overhead)."""
    if not block:
        return 0
    # what count_chat gives for one user message, with the block's lines counted once each (exact)
    return tokenizer.tokens_per_message + tokenizer.count("user") + count_by_lines(tokenizer, block)
