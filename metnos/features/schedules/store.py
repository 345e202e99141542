"""The owner's scheduled tasks and their runs in the database (blocking calls: from a thread;
each takes the caller's unit of work, `metnos.ground.db.engine.session`).

A run moves `due` (the flow run made it due) → `running` (the gateway took it: one taker) →
`done` or `failed` (the turn's outcome); the flow run waits for that end.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlmodel import Session, col, select

from metnos.features.schedules.models import ScheduledTask, ScheduleNotice, TaskRun
from metnos.ground.db.models import utcnow


def add(db: Session, task: ScheduledTask) -> ScheduledTask:
    db.add(task)
    db.flush()
    db.refresh(task)
    return task


def get(db: Session, task_id: str) -> ScheduledTask | None:
    return db.get(ScheduledTask, task_id)


def by_action(db: Session, action_id: str) -> ScheduledTask | None:
    return db.exec(select(ScheduledTask).where(ScheduledTask.action_id == action_id)).first()


def active(db: Session, user_id: str | None = None) -> list[ScheduledTask]:
    query = select(ScheduledTask).where(col(ScheduledTask.active).is_(True))
    if user_id is not None:
        query = query.where(ScheduledTask.user_id == user_id)
    return list(db.exec(query.order_by(col(ScheduledTask.created_at))))


def deactivate(db: Session, task_id: str) -> bool:
    """Remove a task (the row stays, inactive); False when it was not active."""
    done = db.execute(update(ScheduledTask).where(
        col(ScheduledTask.id) == task_id, col(ScheduledTask.active).is_(True))
        .values(active=False, removed_at=utcnow()))
    return bool(done.rowcount)  # type: ignore[attr-defined]


def make_due(db: Session, task_id: str, flow_run_id: str, attempt: int) -> str | None:
    """A firing of `task_id`: a due run's id, or None when the task is no longer active."""
    task = db.get(ScheduledTask, task_id)
    if task is None or not task.active:
        return None
    run = TaskRun(task_id=task_id, flow_run_id=flow_run_id, attempt=attempt)
    db.add(run)
    db.flush()
    return run.id


def claim_due(db: Session, limit: int = 10) -> list[TaskRun]:
    """Due runs, now `running` (each taken by one caller), oldest first."""
    ids = list(db.exec(select(TaskRun.id).where(TaskRun.status == "due")
                       .order_by(col(TaskRun.due_at)).limit(limit)))
    if not ids:
        return []
    taken = db.execute(update(TaskRun).where(col(TaskRun.id).in_(ids),
                                             col(TaskRun.status) == "due")
                       .values(status="running").returning(col(TaskRun.id)))
    mine = [str(row[0]) for row in taken]
    return list(db.exec(select(TaskRun).where(col(TaskRun.id).in_(mine))))


def finish(db: Session, run_id: str, status: str, *, turn_id: str | None = None,
           outbox_id: str | None = None, error: str | None = None) -> None:
    db.execute(update(TaskRun).where(col(TaskRun.id) == run_id).values(
        status=status, turn_id=turn_id, outbox_id=outbox_id, error=error,
        finished_at=utcnow()))


def run(db: Session, run_id: str) -> TaskRun | None:
    return db.get(TaskRun, run_id)


def runs_of(db: Session, task_id: str) -> list[TaskRun]:
    return list(db.exec(select(TaskRun).where(TaskRun.task_id == task_id)
                        .order_by(col(TaskRun.due_at))))


def reported(db: Session, flow_run_ids: list[str], kind: str) -> set[str]:
    """Which of these flow runs were reported already as `kind` (missed, failed)."""
    if not flow_run_ids:
        return set()
    return set(db.exec(select(ScheduleNotice.flow_run_id).where(
        col(ScheduleNotice.flow_run_id).in_(flow_run_ids), ScheduleNotice.kind == kind)))


def record_reported(db: Session, notices: list[ScheduleNotice]) -> None:
    for notice in notices:
        db.merge(notice)


def last_run_at(db: Session, task_id: str) -> datetime | None:
    return db.exec(select(TaskRun.due_at).where(TaskRun.task_id == task_id)
                   .order_by(col(TaskRun.due_at).desc()).limit(1)).first()
