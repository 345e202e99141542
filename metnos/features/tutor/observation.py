"""One observation of a read-only probe: when it was taken, until when it holds, what it saw.

An observation is small (its JSON at most `MAX_BYTES`) and holds only safe values: strings,
numbers, booleans and short lists or maps of them, never an object. Its `status` says how far
it can be trusted: `ok`, `partial` (some signals missing), `stale` (past its expiry) or
`unavailable` (the probe failed or timed out). Only an `ok` observation is `healthy`: a stale or
partial one is never presented as a sound state by omission. `cause` is set only when a signal
attests it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

Status = Literal["ok", "partial", "stale", "unavailable"]
STATUSES: tuple[Status, ...] = ("ok", "partial", "stale", "unavailable")
MAX_BYTES = 2048  # the serialised observation
MAX_ITEMS = 40  # items of one list or map fact
MAX_TEXT = 80  # characters of one string value

Scalar = str | int | float | bool | None
FactValue = Scalar | list[Scalar] | dict[str, Scalar]


@dataclass(frozen=True)
class Observation:
    probe: str
    taken_at: datetime
    expires_at: datetime
    source_version: str
    status: Status
    facts: dict[str, FactValue] = field(default_factory=dict)
    cause: str | None = None

    def as_of(self, now: datetime) -> Observation:
        """This observation read at `now`: past its expiry an ok or partial one is stale."""
        if self.status in ("ok", "partial") and now >= self.expires_at:
            return replace(self, status="stale")
        return self

    @property
    def healthy(self) -> bool:
        """Only a current, complete observation may be reported as it reads."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, object]:
        return {"probe": self.probe, "taken_at": self.taken_at.isoformat(),
                "expires_at": self.expires_at.isoformat(),
                "source_version": self.source_version, "status": self.status,
                "facts": dict(self.facts), "cause": self.cause}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"))


def observe(probe: str, facts: dict[str, object], *, now: datetime, ttl_s: float,
            source_version: str, status: Status = "ok",
            cause: str | None = None) -> Observation:
    """An observation of `facts` taken at `now`, cleaned and held within `MAX_BYTES`: values that
    are not safe are dropped and make it partial, and so does trimming it to size."""
    clean, dropped = safe_facts(facts)
    if dropped and status == "ok":
        status = "partial"
    obs = Observation(probe=probe, taken_at=now, expires_at=now + timedelta(seconds=ttl_s),
                      source_version=source_version, status=status, facts=clean,
                      cause=cause[:MAX_TEXT] if cause else None)
    return within_size(obs)


def unavailable(probe: str, *, now: datetime, source_version: str,
                cause: str | None = None) -> Observation:
    """A probe that failed or ran out of time: nothing observed."""
    return Observation(probe=probe, taken_at=now, expires_at=now,
                       source_version=source_version, status="unavailable", cause=cause)


def within_size(obs: Observation) -> Observation:
    """Drop the largest facts until the JSON fits in `MAX_BYTES` (then it is partial)."""
    while len(obs.to_json().encode("utf-8")) > MAX_BYTES and obs.facts:
        largest = max(obs.facts, key=lambda k: len(json.dumps(obs.facts[k])))
        facts = {k: v for k, v in obs.facts.items() if k != largest}
        obs = replace(obs, facts=facts,
                      status="partial" if obs.status == "ok" else obs.status)
    return obs


def safe_facts(facts: dict[str, object]) -> tuple[dict[str, FactValue], list[str]]:
    """The facts made of safe values, and the names of those dropped."""
    clean: dict[str, FactValue] = {}
    dropped: list[str] = []
    for name, value in facts.items():
        safe = _safe(value)
        if safe is _UNSAFE:
            dropped.append(name)
        else:
            clean[str(name)[:MAX_TEXT]] = safe  # type: ignore[assignment]
    return clean, dropped


_UNSAFE = object()


def _safe_scalar(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, datetime):
        return value.isoformat()
    return _UNSAFE


def _safe(value: object) -> object:
    if isinstance(value, dict):
        items = [(str(k)[:MAX_TEXT], _safe_scalar(v)) for k, v in list(value.items())[:MAX_ITEMS]]
        return _UNSAFE if any(v is _UNSAFE for _, v in items) else dict(items)
    if isinstance(value, (list, tuple, set, frozenset)):
        seq = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        items2 = [_safe_scalar(v) for v in seq[:MAX_ITEMS]]
        return _UNSAFE if any(v is _UNSAFE for v in items2) else items2
    return _safe_scalar(value)
