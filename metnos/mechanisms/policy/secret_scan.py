"""Law 2's eyes: find the instance's secrets in any JSON value, plain or encoded.

A `SecretScanner` knows the secret *values* of one instance (the owner token, the LLM API key,
`*_TOKEN`/`*_KEY`/`*_SECRET`/`*_PASSWORD` environment values, the files under `secrets/` and the
private keys under `keys/`) plus a few generic patterns (PEM, OpenSSH and PuTTY private keys).
It reports secrets by NAME only; a value never leaves this module.

How an encoded secret is caught, cheaply (plain substring search, one pass per needle):
- each secret becomes several lower-cased needles: itself, its hex, its URL-quoted form, and
  the stable middle of its base64 (standard and URL-safe alphabets) at each of the 3 byte
  alignments, so it is found inside a longer base64 blob too;
- the text is lower-cased once, and when it contains `%` its URL-decoded forms (up to 3 rounds,
  for double encoding) are searched as well, and all of them again without whitespace (MIME
  line breaks in base64, a spaced-out secret);
- all strings of a value (keys included) are joined with NUL, which no needle contains, and
  searched at once: thousands of small strings cost one scan.
Not caught (by design, documented): secrets reversed, split between fields, spaced out or
encoded some other way. The first defence is that a secret never reaches a model.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from metnos.ground.settings import Settings

MIN_SECRET_CHARS = 8
REDACTED = "[REDACTED]"
ENV_SUFFIXES = ("_TOKEN", "_KEY", "_SECRET", "_PASSWORD")
_MAX_FILE_BYTES = 1_000_000
_PARTIAL_CAP = 4096  # the most characters a stream holds back
_URL_ROUNDS = 3
_B64_URLSAFE = str.maketrans("+/", "-_")
# generic patterns: (name, literal); encoded like any secret, so a base64 body is caught too
# ("openssh-key-v1" is the start of every OpenSSH private key, "b3BlbnNzaC1rZXktdjE" in base64)
PATTERNS: tuple[tuple[str, str], ...] = (
    ("pem_private_key", "PRIVATE KEY-----"),
    ("openssh_private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("openssh_private_key", "openssh-key-v1"),
    ("putty_private_key", "PuTTY-User-Key-File-"),
)


class SecretScanner:
    """Finds and redacts known secrets in nested JSON values (dicts, lists, strings)."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        """`secrets`: (name, value) pairs; values shorter than 8 characters are ignored."""
        self._needles: dict[str, set[str]] = {}
        for name, value in [*secrets, *PATTERNS]:
            value = value.strip()
            if len(value) < MIN_SECRET_CHARS:
                continue
            for needle in _encodings(value):
                self._needles.setdefault(needle, set()).add(name)
        # longest first: a needle that contains another is searched (and redacted) first
        self._order = sorted(self._needles, key=len, reverse=True)

    @classmethod
    def for_instance(
        cls,
        settings: Settings,
        environ: Mapping[str, str] = os.environ,
        *,
        home_dir: Path | None = None,
    ) -> SecretScanner:
        """The scanner of one instance; `home_dir` adds `~/.ssh/id_*` private keys."""
        found: list[tuple[str, str]] = []
        with contextlib.suppress(OSError):  # not initialised yet: nothing to protect there
            found.append(("owner_token", settings.owner_token()))
        if settings.llm.api_key is not None:
            found.append(("llm_api_key", settings.llm.api_key.get_secret_value()))
        if settings.telegram.bot_token is not None:  # it may live in metnos.toml
            found.append(("telegram_bot_token", settings.telegram.bot_token.get_secret_value()))
        found.extend(_env_secrets(environ))
        found.extend(_file_secrets(settings.secrets_dir, "secrets", private_only=False))
        found.extend(_file_secrets(settings.keys_dir, "keys", private_only=True))
        if home_dir is not None:
            found.extend(_file_secrets(home_dir / ".ssh", "ssh", private_only=True,
                                       prefix="id_"))
        return cls(found)

    @property
    def needle_count(self) -> int:
        return len(self._needles)

    def find(self, value: Any) -> list[str]:
        """Sorted names of the secrets in `value` (nested JSON); never the values."""
        return sorted(self._names(self._hits(_joined(value))))

    def redact(self, value: Any) -> tuple[Any, list[str]]:
        """`value` with each secret occurrence replaced by `[REDACTED]`, and the names found.

        A string where a secret survives in-place replacement (e.g. partly URL-encoded) is
        replaced whole by `[REDACTED]`. An unchanged value is returned as is (same object).
        """
        hits = self._hits(_joined(value))
        if not hits:
            return value, []
        pattern = re.compile("|".join(re.escape(n) for n in hits), re.IGNORECASE)
        return _map_strings(value, lambda s: self._redact_str(s, hits, pattern)), sorted(
            self._names(hits))

    def partial_tail(self, text: str) -> int:
        """How many characters at the end of `text` could be the start of a secret (of one of
        its needles): a stream holds those back until the next piece tells."""
        low, longest = text.lower(), 0
        if len(low) != len(text):  # a few characters lower-case to two: keep the positions
            low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
        for needle in self._order:
            p = max(0, len(low) - len(needle) + 1, len(low) - _PARTIAL_CAP) - 1
            while (p := low.find(needle[0], p + 1)) != -1 and len(low) - p > longest:
                if needle.startswith(low[p:]):
                    longest = len(low) - p
                    break
        return longest

    # -- internals ------------------------------------------------------------------------
    def _hits(self, text: str, only: Iterable[str] | None = None) -> list[str]:
        if not text:
            return []
        haystacks = _haystacks(text)
        return [n for n in (self._order if only is None else only)
                if any(n in hay for hay in haystacks)]

    def _names(self, needles: Iterable[str]) -> set[str]:
        return {name for needle in needles for name in self._needles[needle]}

    def _redact_str(self, text: str, hits: list[str], pattern: re.Pattern[str]) -> str:
        if not self._hits(text, hits):
            return text
        out = pattern.sub(REDACTED, text)
        if not self._hits(out, hits):
            return out
        decoded = pattern.sub(REDACTED, _url_decoded(out)[-1])
        return decoded if not self._hits(decoded, hits) else REDACTED


def _encodings(value: str) -> set[str]:
    """The lower-cased needles of one secret: plain, hex, URL-quoted, base64 at 3 alignments."""
    raw = value.encode("utf-8")
    out = {value, raw.hex(), quote(value, safe=""), quote(value)}
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        stable = encoded[4 if shift else 0:(shift + len(raw)) // 3 * 4]
        if len(stable) >= MIN_SECRET_CHARS:
            out.update((stable, stable.translate(_B64_URLSAFE)))
    return {n.lower() for n in out if len(n) >= MIN_SECRET_CHARS}


def _haystacks(text: str) -> list[str]:
    """Lower-cased `text`, its URL-decodings, and all of them without whitespace (MIME-wrapped
    base64 breaks lines every 76 characters; a spaced-out secret is still the secret)."""
    out = [text.lower()]
    if "%" in text:
        out.extend(d.lower() for d in _url_decoded(text)[1:])
    squeezed = ["".join(hay.split()) for hay in out]
    return out + [hay for hay, orig in zip(squeezed, out, strict=True) if len(hay) != len(orig)]


def _url_decoded(text: str) -> list[str]:
    """`text` and its successive URL-decodings while they change (at most 3 rounds)."""
    forms = [text]
    for _ in range(_URL_ROUNDS):
        nxt = unquote(forms[-1])
        if nxt == forms[-1]:
            break
        forms.append(nxt)
    return forms


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _joined(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\0".join(_strings(value))


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {(fn(k) if isinstance(k, str) else k): _map_strings(v, fn)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_strings(v, fn) for v in value)
    return value


def _env_secrets(environ: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    for name, value in environ.items():
        if name.upper().endswith(ENV_SUFFIXES) and len(value.strip()) >= MIN_SECRET_CHARS:
            yield f"env:{name}", value


def _file_secrets(
    folder: Path, label: str, *, private_only: bool, prefix: str = ""
) -> Iterator[tuple[str, str]]:
    """Each file's whole content and each line of 8+ characters (PEM armour lines aside),
    and, for a `user:password` line (`secrets/prefect.auth`), the password on its own."""
    try:
        paths = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    except OSError:
        return
    for path in paths:
        if private_only and (path.suffix == ".pub" or not path.name.startswith(prefix)):
            continue
        text = _read_small(path)
        if text is None:
            continue
        name = f"{label}/{path.relative_to(folder).as_posix()}"
        yield name, text
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= MIN_SECRET_CHARS and not line.startswith("-----"):
                yield name, line
                _, colon, secret = line.partition(":")  # `user:password`: the password too
                if colon and len(secret) >= MIN_SECRET_CHARS:
                    yield name, secret


def _read_small(path: Path) -> str | None:
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
