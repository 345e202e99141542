"""The tables of memory and evolution (SPEC §7): the mnestoma, proto-mnests, the use clock,
each executor's use and lifecycle, the traces, and the log of evolutionary moves.

Time here is use, not the calendar (arch §10): `clock` columns hold the **use clock**, the
number of executor invocations the instance has made so far (`UseClock.clock`). Datetimes are
kept for people reading the history; no decision is taken on them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Column, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, new_id, utcnow

EXECUTOR_STATES = ("active", "quarantined", "archived")
WISH_SOURCES = ("model", "executor")
PROTO_STATUSES = ("open", "proposed", "composed", "generating", "generated", "closed")


class Mnest(SQLModel, table=True):
    """A hand-off A→B: B was called after the model had seen A's result in the same turn."""

    __tablename__ = "mnest"
    __table_args__ = (Index("mnest_dst", "dst"), Index("mnest_clock", "clock"))

    src: str = Field(primary_key=True)
    dst: str = Field(primary_key=True)
    weight: float = 0.0
    clock: int = 0  # the use clock at its last reinforcement
    created_at: datetime = _stamp(default_factory=utcnow)
    updated_at: datetime = _stamp(default_factory=utcnow)


class ProtoMnest(SQLModel, table=True):
    """"From `src` I wanted `want`, which no executor does": counted per (src, want).
    `why` is short and free of personal data (scrubbed before it is stored)."""

    __tablename__ = "proto_mnest"
    __table_args__ = (
        UniqueConstraint("src", "want", name="proto_mnest_pair"),
        CheckConstraint(f"source IN {WISH_SOURCES!r}", name="proto_mnest_source_valid"),
        CheckConstraint(f"status IN {PROTO_STATUSES!r}", name="proto_mnest_status_valid"),
    )

    id: str = Field(default_factory=new_id, primary_key=True)
    src: str  # the executor it came from ("" when the model wished before any step)
    want: str  # the missing capability, lower_snake_case ("ocr")
    have_kind: str = ""  # what there was (a manifest kind: "pdf")
    want_kind: str = ""  # what was wanted (a manifest kind: "text")
    why: str = ""
    source: str = "model"  # model (the `wish` tool) | executor (a manifest's [wishes])
    count: int = 0
    first_clock: int = 0
    last_clock: int = 0
    status: str = "open"
    created_at: datetime = _stamp(default_factory=utcnow)
    updated_at: datetime = _stamp(default_factory=utcnow)


class UseClock(SQLModel, table=True):
    """One row: the invocations made so far, and the clock of the ager's last cycle."""

    __tablename__ = "use_clock"

    id: int = Field(default=1, primary_key=True)
    clock: int = 0
    ager_clock: int = 0
    ager_cycles: int = 0


class ExecutorUse(SQLModel, table=True):
    """How much one executor is used, and where it is in its lifecycle."""

    __tablename__ = "executor_use"
    __table_args__ = (
        CheckConstraint(f"state IN {EXECUTOR_STATES!r}", name="executor_use_state_valid"),
    )

    name: str = Field(primary_key=True)
    invocations: int = 0
    window_uses: int = 0  # invocations since the ager's last cycle
    last_clock: int = 0  # the use clock at its last invocation
    state: str = "active"
    state_clock: int = 0  # the use clock when it entered `state`
    updated_at: datetime = _stamp(default_factory=utcnow)


class Trace(SQLModel, table=True):
    """A community of the mnestoma found by modularity (one row per trace per detection)."""

    __tablename__ = "trace"

    id: int | None = Field(default=None, primary_key=True)
    generation: int = Field(index=True)  # which detection it belongs to (the newest is used)
    label: str  # its heaviest executors, for people ("fs_read · pdf_ext · archive")
    members: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    weight: float = 0.0  # the sum of its internal mnests' weights
    modularity: float = 0.0  # of the whole partition
    detected_at: datetime = _stamp(default_factory=utcnow)


class EvolutionMove(SQLModel, table=True):
    """One evolutionary move and how to take it back (SPEC §7.6): `before` holds every row it
    touched as it was (table → list of rows as JSON, `None` for a row it created), so
    `evolution undo` restores the previous state exactly."""

    __tablename__ = "evolution_move"
    __table_args__ = (Index("evolution_move_created", "created_at"),
                      Index("evolution_move_kind", "kind", "undone_by"))

    id: str = Field(default_factory=new_id, primary_key=True)
    kind: str  # decay | quarantine | release | archive | restore | fuse | defuse | compose ...
    target: str  # what it moved (an executor, a pair, a proposal id)
    motivation: str  # why, in the words of the language the instance runs in
    before: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    after: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    clock: int = 0
    audit_seq: int | None = None
    undoes: str | None = None  # the move this one took back
    undone_by: str | None = None
    created_at: datetime = _stamp(default_factory=utcnow)
