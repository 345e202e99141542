"""Token counts without the network, whatever the model string says.

litellm's `token_counter` picks a Hugging Face tokenizer for some model names (any name with
`llama-3`, `llama-2`, `replicate`, Cohere's command-r) and downloads it from huggingface.co
at run time; offline it retries for about 20 s before falling back. Importing litellm also
takes seconds. So Metnos counts with tiktoken alone, reading the encodings from the copies
litellm ships in its wheel (`litellm_core_utils/tokenizers/`, found without importing
litellm), each file's SHA-256 checked: no download, ever, and litellm is never imported here.

OpenAI's own models (as tiktoken's model table names them: gpt-4o, gpt-4.1, o3, ...) count in
`o200k_base`; every other model in `cl100k_base`, an estimate: it counts more tokens than
o200k_base and about as many as Llama 3's tokenizer on European text, so a budget held in it
holds for them. When a file or tiktoken is missing, a character estimate (3 characters a
token, on the high side) serves, logged once.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["count_messages", "count_text", "encoding_for", "encoding_path"]


@dataclass(frozen=True)
class _Encoding:
    file: str  # tiktoken caches a file under the SHA-1 of its URL: litellm's copy's name
    sha256: str
    pattern: str  # the split pattern and special tokens, as in tiktoken_ext/openai_public.py
    special: dict[str, int]


_ENCODINGS = {
    "cl100k_base": _Encoding(
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
         "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}),
    "o200k_base": _Encoding(
        "fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join((
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""", r"""\s+""")),
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}
DEFAULT = "cl100k_base"
PER_MESSAGE = 4  # the role and the separators a chat template adds around each message
_CHARS_PER_TOKEN = 3
_CACHED = 4096

_lock = threading.Lock()
_counters: dict[str, Callable[[str], int]] = {}


def encoding_for(model: str | None) -> str:
    """The encoding that counts for `model` (a litellm model string, provider prefix and
    all): o200k_base for the OpenAI models tiktoken's table maps to it, else cl100k_base."""
    name = (model or "").rsplit("/", 1)[-1]
    if not name:
        return DEFAULT
    from tiktoken.model import encoding_name_for_model  # a table lookup, nothing loaded

    try:
        found = encoding_name_for_model(name)
    except KeyError:
        return DEFAULT
    return "o200k_base" if found.startswith("o200k") else DEFAULT


def encoding_path(encoding: str = DEFAULT) -> Path | None:
    """litellm's bundled copy of `encoding`, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)))
    path = path / "litellm_core_utils" / "tokenizers" / _ENCODINGS[encoding].file
    return path if path.is_file() else None


def count_text(text: str, model: str | None = None) -> int:
    """Tokens of `text` for `model` (special-token spellings count as plain text)."""
    if not text:
        return 0
    return _counter(encoding_for(model))(text)


def count_messages(messages: Iterable[Mapping[str, Any]], model: str | None = None) -> int:
    """Tokens of OpenAI-format messages: contents, tool calls, names and a per-message
    overhead."""
    encode = _counter(encoding_for(model))
    total = 0
    for message in messages:
        total += PER_MESSAGE + encode(str(message.get("content") or ""))
        calls = message.get("tool_calls")
        if calls:
            total += encode(json.dumps(calls, ensure_ascii=False))
        if message.get("name"):
            total += encode(str(message["name"]))
    return total


def _counter(encoding: str) -> Callable[[str], int]:
    found = _counters.get(encoding)
    if found is None:
        with _lock:
            found = _counters.get(encoding)
            if found is None:
                found = _counters[encoding] = _load(encoding)
    return found


def _load(name: str) -> Callable[[str], int]:
    spec = _ENCODINGS[name]
    path = encoding_path(name)
    try:
        if path is None:
            raise FileNotFoundError(f"litellm's bundled {name} file")
        import tiktoken

        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != spec.sha256:
            raise ValueError(f"{path} is not {name} (SHA-256 differs)")
        ranks = {base64.b64decode(token): int(rank)
                 for token, rank in (line.split() for line in data.splitlines() if line)}
        encoding = tiktoken.Encoding(name=name, pat_str=spec.pattern, mergeable_ranks=ranks,
                                     special_tokens=spec.special)
    except (ImportError, OSError, ValueError) as exc:
        log.warning("tokens.estimate encoding=%s reason=%s: %d characters a token",
                    name, exc, _CHARS_PER_TOKEN)
        return _estimate

    @lru_cache(maxsize=_CACHED)  # a session's earlier messages are counted at every turn
    def encode(text: str) -> int:
        return len(encoding.encode_ordinary(text)) if text else 0

    return encode


def _estimate(text: str) -> int:
    return -(-len(text) // _CHARS_PER_TOKEN)
