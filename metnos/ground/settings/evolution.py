"""The `[notify]` and `[evolution]` settings groups (SPEC §7, §12).

`[notify]`: where and when Metnos may speak on its own (a `notify` step, a proposal, a digest):
quiet hours are enforced in code before delivery and before any model call of a proactive path.
`[evolution]`: the mnestoma, the synt, the ager, the traces and the Vaglio. The ager's numbers
count **invocations** (the use clock), never days: a sleeping system does not age.
Environment variables are `METNOS_NOTIFY_<FIELD>` and `METNOS_EVOLUTION_<FIELD>`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group

_QUIET_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-3]):[0-5]\d$")


class NotifySettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_NOTIFY_")

    quiet_hours: str = Field(
        "21:00-07:00", description="Local time span (HH:MM-HH:MM, may cross midnight) in "
        "which nothing is delivered on Metnos's own initiative: it waits for the end. "
        "Empty: no quiet hours.")
    channel: Literal["auto", "telegram", "web", "cli"] = Field(
        "auto", description="The owner's preferred channel for notifications, the mail digest "
        "and proposals; auto: a channel a person reads: their Telegram chat when paired, else "
        "the web chat, a terminal (metnos chat) only when it is the only one ever used.")

    @field_validator("quiet_hours")
    @classmethod
    def _span(cls, value: str) -> str:
        value = value.strip()
        if value and not _QUIET_RE.match(value):
            raise ValueError("quiet_hours must look like 21:00-07:00 (or be empty)")
        return value


class EvolutionSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_EVOLUTION_")

    enabled: bool = Field(True, description="Record hand-offs and wishes, and propose.")
    proto_threshold: int = Field(
        5, ge=1, le=1000, description="Recurrences of one proto-mnest (from A, wanted X) "
        "that start the synt cascade.")
    promote_after: int = Field(
        3, ge=1, le=1000, description="Uses of one accepted composition after which Metnos "
        "proposes to make it one executor.")
    ager_every: int = Field(50, ge=1, le=100_000,
                            description="Invocations between two cycles of the ager.")
    decay: float = Field(1.0, gt=0, description="Weight a mnest loses per ager cycle when it "
                         "was not reinforced in the last `ager_every` invocations (linear).")
    quarantine_after: int = Field(
        500, ge=1, description="Invocations without use after which an executor goes to "
        "quarantine (it stays in the pool; routing leaves it out).")
    archive_after: int = Field(
        1000, ge=1, description="Invocations in quarantine after which the ager proposes "
        "archiving the executor (only the owner archives).")
    route_above: int = Field(
        12, ge=1, description="Above this many executors, only the executors of the traces "
        "relevant to the message (plus the core) reach the model's tool list.")
    route_core: list[str] = Field(
        default_factory=lambda: ["fs_find", "fs_read", "notify"],
        description="Executors always offered to the model when routing is on.")
    traces_every_days: int = Field(7, ge=1, le=365,
                                   description="How often the traces are detected anew.")
    threshold: float = Field(
        0.5, ge=0, le=1, description="Score (alignment with TELOS.md after the bother "
        "budget) a proposal needs to reach the owner; under it, the silent register.")
    bother_window_h: float = Field(24.0, gt=0, description="The bother budget's window.")
    bother_factor: float = Field(
        0.5, gt=0, le=1, description="The score is multiplied by this once for every "
        "proposal delivered in the window and left unanswered or dismissed.")
    schedule_quota: int = Field(
        6, ge=0, description="Runs of accepted schedules that may notify in the window "
        "(their own quota: the owner consented to the rhythm).")
    ignore_after_h: float = Field(
        48.0, gt=0, description="A delivered proposal left unanswered this long is ignored.")
    habit_days: int = Field(
        21, ge=2, le=365, description="Days of turns looked at for habits (\"as usual?\").")
    habit_min: int = Field(
        5, ge=2, le=100, description="Days one habit must have happened on (the same chain "
        "of tools on the same kind of thing, at a similar time) before Metnos offers it.")
    habit_window_min: int = Field(
        45, ge=5, le=360, description="How far from its usual time of day a habit may happen "
        "and still count (minutes either side).")
    habit_lead_min: int = Field(
        30, ge=1, le=360, description="How long before a habit's usual time the \"as "
        "usual?\" proposal is made (never in quiet hours).")
    judge_tier: Literal["fast", "wise", "frontier"] = Field(
        "fast", description="Model tier of the Vaglio's judge (its own context and prompt).")
    synt_tier: Literal["fast", "wise", "frontier"] = Field(
        "wise", description="Model tier of the synt's generation stages.")
    synt_max_cost_usd: float = Field(
        2.0, ge=0, description="Largest expected cost of one generation the owner is asked "
        "to accept; above it the synt does not propose generating.")
