"""The owner's side of the Tutor's feedback (SPEC §10): the reported gaps grouped by cause and
by the proximity of their questions (counts and sections, never a question's text, never who),
and the counterfactual check of the remembered 👍: each must still point at a section of the
admitted catalog with the content it was associated at, else it is dropped (counted).

`metnos tutor feedback-check` and `gaps` (the CLI), and the catalog upkeep flow, call these.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlmodel import Session, col, delete, select

from metnos.features.tutor.catalog import Catalog, CatalogUnavailable, open_catalog, section_hash
from metnos.features.tutor.feedback import cosines, from_blob
from metnos.features.tutor.feedback_models import TutorAnswer, TutorAssociation, TutorGap
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog

GROUP = 0.75  # gaps within this cosine of a group's first one are grouped with it (NEAR less
              # a margin: a group gathers one topic's rewordings, tests/tutor/test_feedback.py)


@dataclass(frozen=True)
class GapGroup:
    """Gaps of one cause whose questions are near each other: counts and sections only."""

    cause: str
    count: int
    sections: list[str]  # "id@lang", the most frequent first
    langs: list[str]
    first: datetime
    last: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "count": self.count, "sections": self.sections,
                "langs": self.langs, "first": self.first.isoformat(),
                "last": self.last.isoformat()}


@dataclass(frozen=True)
class CheckReport:
    version: str  # the catalog checked against
    kept: int
    dropped: int
    expired: int  # pending answers past their expiry, deleted
    dropped_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "kept": self.kept, "dropped": self.dropped,
                "expired": self.expired}


def gap_groups(db: Session, threshold: float = GROUP) -> list[GapGroup]:
    """The gaps grouped by cause, then greedily by the proximity of their questions (a gap
    joins the first group whose first question is within `threshold`), largest first."""
    rows = db.exec(select(TutorGap).order_by(col(TutorGap.created_at),
                                             col(TutorGap.id))).all()
    groups: list[tuple[str, np.ndarray | None, list[TutorGap]]] = []
    for row in rows:
        vector = from_blob(row.vector) if row.vector else None
        for cause, seed, members in groups:
            if cause != row.cause:
                continue
            if (vector is None and seed is None) or (
                    vector is not None and seed is not None
                    and float(cosines(seed.reshape(1, -1), vector)[0]) >= threshold):
                members.append(row)
                break
        else:
            groups.append((row.cause, vector, [row]))
    out = []
    for cause, _, members in groups:
        counted = Counter(s for m in members for s in m.sections)
        out.append(GapGroup(cause, len(members), [s for s, _ in counted.most_common()],
                            sorted({m.lang for m in members}), members[0].created_at,
                            members[-1].created_at))
    return sorted(out, key=lambda g: (-g.count, g.cause, g.first))


def check(engine: Engine, catalog: Catalog, audit: AuditLog | None = None) -> CheckReport:
    """The counterfactual check: every association must still point at a section of the
    current catalog with the content it was associated at; the others are dropped (counted,
    never used). Answers past their rating time are deleted too."""
    current = {(s.id, s.lang): section_hash(s) for s in catalog.sections}
    with db_session(engine) as db:
        rows = db.exec(select(TutorAssociation)).all()
        stale = [r for r in rows if current.get((r.section_id, r.lang)) != r.content_hash]
        for row in stale:
            db.delete(row)
        expired = db.exec(delete(TutorAnswer).where(
            col(TutorAnswer.expires_at) <= utcnow())).rowcount
    report = CheckReport(catalog.version, len(rows) - len(stale), len(stale), int(expired or 0),
                         [r.id for r in stale if r.id is not None])
    if audit is not None:
        audit.append(action="tutor.feedback_check", decision="info",
                     outcome=f"kept={report.kept} dropped={report.dropped}",
                     args=report.to_dict())
    return report


def check_instance(settings: Settings) -> CheckReport | None:
    """`check` on the instance's database against its admitted catalog (the CLI, the
    upkeep flow); None when no catalog is admitted: nothing can be compared, nothing is
    dropped (and nothing is used: the Tutor steps aside without one)."""
    from metnos.ground.db.engine import database_url, make_engine
    from metnos.mechanisms.audit import open_audit_log

    try:
        catalog = open_catalog(settings.home)
    except CatalogUnavailable:
        return None
    engine = make_engine(database_url(settings))
    try:
        return check(engine, catalog, open_audit_log(settings))
    finally:
        engine.dispose()
