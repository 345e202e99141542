"""The owner's scheduled tasks and what became of each run (SPEC §12), in Metnos's database.

`ScheduledTask` is the source of truth: the Prefect deployment `owner-task/scheduled` carries
one schedule per active task (slug `task-<id>`, parameters `{"task_id": id}`), made to agree
with this table at every start of `deployments.serve`. `TaskRun` is one firing: the flow run
makes it due, the gateway turns it into a turn and delivers the reply. `ScheduleNotice` records
each Prefect flow run already reported as missed or failed, so nothing is reported twice.
All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, new_id, utcnow

RUN_STATUSES = ("due", "running", "done", "failed")


class ScheduledTask(SQLModel, table=True):
    __tablename__ = "scheduled_task"

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:10], primary_key=True)
    user_id: str = Field(index=True)
    cron: str  # five fields, in `timezone`
    timezone: str
    when_text: str  # as the owner said it ("every Monday at 8")
    text: str  # what Metnos does then: a message from the owner
    channel: str  # where the reply goes: web | telegram | cli
    address: str  # the chat session it goes to
    lang: str
    created_at: datetime = _stamp(default_factory=utcnow)
    active: bool = True
    removed_at: datetime | None = _stamp(default=None, nullable=True)
    action_id: str | None = Field(default=None, index=True)  # the chat step that set it (undo)


class TaskRun(SQLModel, table=True):
    __tablename__ = "scheduled_task_run"
    __table_args__ = (CheckConstraint(f"status IN {RUN_STATUSES!r}",
                                      name="scheduled_task_run_status_valid"),)

    id: str = Field(default_factory=new_id, primary_key=True)
    task_id: str = Field(index=True)
    flow_run_id: str
    attempt: int = 1
    status: str = Field(default="due", index=True)
    due_at: datetime = _stamp(default_factory=utcnow)
    turn_id: str | None = None
    outbox_id: str | None = None
    finished_at: datetime | None = _stamp(default=None, nullable=True)
    error: str | None = None  # an i18n key


class ScheduleNotice(SQLModel, table=True):
    __tablename__ = "schedule_notice"

    flow_run_id: str = Field(primary_key=True)
    kind: str = Field(primary_key=True)  # "missed" | "failed": a missed run may fail later
    deployment: str
    due_at: datetime | None = _stamp(default=None, nullable=True)
    reported_at: datetime = _stamp(default_factory=utcnow)
    outbox_id: str | None = None
