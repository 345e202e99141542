"""The owner's scheduled tasks and their runs in the database (blocking calls: from a thread).

A run moves `due` (the flow run made it due) → `running` (the gateway took it: one taker) →
`done` or `failed` (the turn's outcome); the flow run waits for that end.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.db.engine import session
from metnos.db.models import utcnow
from metnos.schedules.models import ScheduledTask, ScheduleNotice, TaskRun


def add(engine: Engine, task: ScheduledTask) -> ScheduledTask:
    with session(engine) as db:
        db.add(task)
        db.commit()
        db.refresh(task)
    return task


def get(engine: Engine, task_id: str) -> ScheduledTask | None:
    with session(engine) as db:
        return db.get(ScheduledTask, task_id)


def by_action(engine: Engine, action_id: str) -> ScheduledTask | None:
    with session(engine) as db:
        return db.exec(select(ScheduledTask).where(ScheduledTask.action_id == action_id)).first()


def active(engine: Engine, user_id: str | None = None) -> list[ScheduledTask]:
    query = select(ScheduledTask).where(col(ScheduledTask.active).is_(True))
    if user_id is not None:
        query = query.where(ScheduledTask.user_id == user_id)
    with session(engine) as db:
        return list(db.exec(query.order_by(col(ScheduledTask.created_at))))


def deactivate(engine: Engine, task_id: str) -> bool:
    """Remove a task (the row stays, inactive); False when it was not active."""
    with session(engine) as db:
        done = db.execute(update(ScheduledTask).where(
            col(ScheduledTask.id) == task_id, col(ScheduledTask.active).is_(True))
            .values(active=False, removed_at=utcnow()))
        return bool(done.rowcount)  # type: ignore[attr-defined]


def make_due(engine: Engine, task_id: str, flow_run_id: str, attempt: int) -> str | None:
    """A firing of `task_id`: a due run's id, or None when the task is no longer active."""
    with session(engine) as db:
        task = db.get(ScheduledTask, task_id)
        if task is None or not task.active:
            return None
        run = TaskRun(task_id=task_id, flow_run_id=flow_run_id, attempt=attempt)
        db.add(run)
        db.commit()
        return run.id


def claim_due(engine: Engine, limit: int = 10) -> list[TaskRun]:
    """Due runs, now `running` (each taken by one caller), oldest first."""
    with session(engine) as db:
        ids = list(db.exec(select(TaskRun.id).where(TaskRun.status == "due")
                           .order_by(col(TaskRun.due_at)).limit(limit)))
        if not ids:
            return []
        taken = db.execute(update(TaskRun).where(col(TaskRun.id).in_(ids),
                                                 col(TaskRun.status) == "due")
                           .values(status="running").returning(col(TaskRun.id)))
        mine = [str(row[0]) for row in taken]
        db.commit()
        return list(db.exec(select(TaskRun).where(col(TaskRun.id).in_(mine))))


def finish(engine: Engine, run_id: str, status: str, *, turn_id: str | None = None,
           outbox_id: str | None = None, error: str | None = None) -> None:
    with session(engine) as db:
        db.execute(update(TaskRun).where(col(TaskRun.id) == run_id).values(
            status=status, turn_id=turn_id, outbox_id=outbox_id, error=error,
            finished_at=utcnow()))


def run(engine: Engine, run_id: str) -> TaskRun | None:
    with session(engine) as db:
        return db.get(TaskRun, run_id)


def runs_of(engine: Engine, task_id: str) -> list[TaskRun]:
    with session(engine) as db:
        return list(db.exec(select(TaskRun).where(TaskRun.task_id == task_id)
                            .order_by(col(TaskRun.due_at))))


def reported(engine: Engine, flow_run_ids: list[str], kind: str) -> set[str]:
    """Which of these flow runs were reported already as `kind` (missed, failed)."""
    if not flow_run_ids:
        return set()
    with session(engine) as db:
        return set(db.exec(select(ScheduleNotice.flow_run_id).where(
            col(ScheduleNotice.flow_run_id).in_(flow_run_ids), ScheduleNotice.kind == kind)))


def record_reported(engine: Engine, notices: list[ScheduleNotice]) -> None:
    with session(engine) as db:
        for notice in notices:
            db.merge(notice)


def last_run_at(engine: Engine, task_id: str) -> datetime | None:
    with session(engine) as db:
        return db.exec(select(TaskRun.due_at).where(TaskRun.task_id == task_id)
                       .order_by(col(TaskRun.due_at).desc()).limit(1)).first()
