"""Law 3's first line: untrusted content reaches a model only wrapped and marked as data.

`strip_control_tokens` removes what a chat template would read as structure (ChatML, Llama 2/3,
Gemma, Mistral, DeepSeek/Qwen, Hermes tool tags) and the invisible characters that hide text
(zero-width, bidi overrides, Unicode tag characters, C0/C1 controls but tab and newlines).
`wrap_untrusted` strips, removes every spelling of the wrapper's own tag, and wraps the text in
`<untrusted-data source=".." id="NONCE">` ... `</untrusted-data id="NONCE">`: the nonce is fresh
per block, so the data can neither close its block nor forge another one.

The user's own text is trusted and never passes through here.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["TAG", "strip_control_tokens", "wrap_untrusted"]

TAG = "untrusted-data"

# invisible or reordering characters: zero-width, bidi embeddings/overrides/isolates, word
# joiners, BOM, Mongolian vowel separator, soft hyphen, Unicode tags (ASCII smuggling),
# supplementary variation selectors; C0 (but \t \n \r), DEL and C1 controls
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\ufff9-\ufffb\U000e0000-\U000e007f\U000e0100-\U000e01ef"
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)

_TOKEN_PATTERNS = (
    r"<[|\uff5c][^<>\n]{0,64}?[|\uff5c]>",  # <|im_start|>, <|eot_id|>, <｜User｜> (DeepSeek)
    r"\[/?INST\]",  # Llama 2
    r"<</?SYS>>",
    r"</?s>",
    r"<(?:start|end)_of_turn>",  # Gemma
    r"<(?:bos|eos|pad|unk)>",
    r"\[/?(?:TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|SYSTEM_PROMPT|TOOL_CONTENT)\]",  # Mistral
    r"\[(?:BOS|EOS)\]",
    r"</?(?:tool_call|tool_response|tool_calls|function_call)>",  # Hermes / Qwen tool tags
)
_TOKENS = re.compile("|".join(_TOKEN_PATTERNS), re.IGNORECASE)
# any opening or closing spelling of the wrapper tag, whitespace and case included
_MARKER = re.compile(r"<\s*/?\s*" + re.escape(TAG) + r"(?:[^<>]{0,200}>)?", re.IGNORECASE)
_TOKENS_OR_MARKER = re.compile(f"{_TOKENS.pattern}|{_MARKER.pattern}", re.IGNORECASE)
_SOURCE_CHARS = re.compile(r"[^a-z0-9_.:-]")
_MAX_ROUNDS = 64


def strip_control_tokens(text: str) -> str:
    """`text` without chat-template control tokens and invisible control characters.

    Invisible characters go first (so `<|im_\u200bstart|>` is caught), then tokens, repeated
    until nothing changes (so `<|im_<|x|>start|>` cannot reassemble into a token).
    """
    return _until_stable(_TOKENS, _INVISIBLE.sub("", text))


def wrap_untrusted(text: str, *, source: str) -> str:
    """`text` stripped and wrapped as data in a block whose closing marker it cannot forge."""
    nonce = secrets.token_hex(8)
    # one pattern for both: removing a marker must not reassemble a token, nor the reverse
    body = _until_stable(_TOKENS_OR_MARKER, _INVISIBLE.sub("", text))
    label = _SOURCE_CHARS.sub("_", source.lower())[:40] or "unknown"
    return (f'<{TAG} source="{label}" id="{nonce}">\n{body}\n'
            f'</{TAG} id="{nonce}">')


def _until_stable(pattern: re.Pattern[str], text: str) -> str:
    for _ in range(_MAX_ROUNDS):
        stripped = pattern.sub("", text)
        if stripped == text:
            return text
        text = stripped
    # pathological nesting: drop every candidate character rather than loop on
    return pattern.sub("", text).replace("<", "").replace("[", "")
