"""A scripted LLM shipped for tests: canned replies, a function of the prompt, errors and delays."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from admit.backends.llms.base import CompleteOptions, LLMReply
from admit.backends.llms.spec import LLMSpec
from admit.errors import ConfigError
from admit.types import Message

__all__ = ["SPEC", "FakeCall", "FakeLLM"]

Reply = str | BaseException
Script = Reply | Sequence[Reply] | Callable[[Sequence[Message], Mapping[str, Any] | None], Reply]


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeCall:
    """One recorded call."""

    messages: tuple[Message, ...]
    """The messages sent."""
    json_schema: Mapping[str, Any] | None
    """The schema asked for."""
    max_tokens: int
    """The completion bound."""

    @property
    def prompt(self) -> str:
        """All message contents joined."""
        return "\n".join(m.content for m in self.messages)


class FakeLLM:
    """``FakeLLM('{"C1": 5}')``, ``FakeLLM(["bad", '{"C1": 5}'])`` (one reply per call, the last repeats),
    ``FakeLLM(lambda messages, schema: ...)``. A reply that is an exception is raised.

    Tokens are counted as whitespace-separated words, so usage is deterministic.
    """

    name = "fake"

    def __init__(
        self,
        script: Script = "{}",
        *,
        model: str = "fake",
        sleep_s: float = 0.0,
        finish_reason: str = "stop",
    ) -> None:
        """Create the scripted model."""
        self._script = script
        self.model = model
        self.sleep_s = sleep_s
        self.finish_reason = finish_reason
        self.calls: list[FakeCall] = []
        self._lock = threading.Lock()

    def complete(self, messages: Sequence[Message], **opts: Unpack[CompleteOptions]) -> LLMReply:
        """Return (or raise) the scripted reply."""
        json_schema, max_tokens = opts.get("json_schema"), opts.get("max_tokens", 512)
        t0 = time.perf_counter()
        with self._lock:
            idx = len(self.calls)
            self.calls.append(FakeCall(messages=tuple(messages), json_schema=json_schema, max_tokens=max_tokens))
        if self.sleep_s:
            time.sleep(self.sleep_s)
        s = self._script
        if callable(s) and not isinstance(s, BaseException):
            reply: Reply = s(messages, json_schema)
        elif isinstance(s, str | BaseException):
            reply = s
        else:
            seq = list(s)
            reply = seq[min(idx, len(seq) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        prompt_tokens = sum(len(m.content.split()) + 4 for m in messages)
        return LLMReply(
            text=reply,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(reply.split()),
            latency_s=time.perf_counter() - t0,
            model=self.model,
            finish_reason=self.finish_reason,
            structured="json_schema" if json_schema is not None else "prompt",
        )


def _build(target: str, **kwargs: Any) -> FakeLLM:
    if target:
        raise ConfigError(f"LLM spec 'fake:{target}': the fake LLM takes no target; write fake.")
    return FakeLLM(**kwargs)


SPEC = LLMSpec(name="fake", build=_build, usage="fake", summary="the scripted test model (answers {})")
"""The ``fake`` backend's spec."""
