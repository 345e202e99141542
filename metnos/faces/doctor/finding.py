"""One thing the doctor looked at: what it found, in one line, and the fix when it is wrong."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from metnos.ground import i18n


@dataclass(frozen=True)
class Finding:
    """`ok`: True healthy, False a problem (then `fix` says what to do), None when the check
    does not apply or could not be made (`line` says why; `fix` may still advise)."""

    name: str
    ok: bool | None
    line: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def text(key: str, lang: str | None, /, **vars: Any) -> str:
    """The doctor's message `key` in `lang`."""
    return i18n.get(key, lang, **vars)


def size(n: int) -> str:
    """A byte count as a person reads it (1.4 GB, 320 MB, 12 kB)."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"
