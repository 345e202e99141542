"""The mnestoma as people read it (`GET /api/mnestoma`, `metnos mnestoma show`, the web page,
the picture): its mnests (the heaviest first), each executor's use and state, the
proto-mnests and the newest traces, as plain JSON-ready dicts."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, func, select

from metnos.features.mnestoma.models import ExecutorUse, Mnest, ProtoMnest, Trace, UseClock
from metnos.mechanisms.executors.registry import Registry

MAX_MNESTS = 5000


def snapshot(db: Session, registry: Registry, limit: int = 200) -> dict[str, Any]:
    """The mnestoma now: at most `limit` mnests (the heaviest, then the most recent), every
    admitted or used executor, the proto-mnests (most counted first), the newest traces."""
    limit = max(1, min(limit, MAX_MNESTS))
    clock = db.get(UseClock, 1)
    total = db.exec(select(func.count()).select_from(Mnest)).one()
    mnests = db.exec(select(Mnest).order_by(col(Mnest.weight).desc(),
                                             col(Mnest.clock).desc(), col(Mnest.src),
                                             col(Mnest.dst)).limit(limit)).all()
    uses = {row.name: row for row in db.exec(select(ExecutorUse)).all()}
    protos = db.exec(select(ProtoMnest).order_by(col(ProtoMnest.count).desc(),
                                                 col(ProtoMnest.src),
                                                 col(ProtoMnest.want))).all()
    newest = db.exec(select(func.max(Trace.generation))).one()
    traces = db.exec(select(Trace).where(col(Trace.generation) == newest)
                     .order_by(col(Trace.weight).desc())).all() if newest is not None else []
    names = sorted({*registry.names(), *uses})
    return {
        "clock": clock.clock if clock is not None else 0,
        "ager_clock": clock.ager_clock if clock is not None else 0,
        "mnest_count": int(total),
        "mnests": [{"src": m.src, "dst": m.dst, "weight": m.weight, "clock": m.clock,
                    "updated_at": m.updated_at.isoformat()} for m in mnests],
        "executors": [_executor(name, uses.get(name), name in registry) for name in names],
        "proto_mnests": [{"id": p.id, "src": p.src, "want": p.want, "have_kind": p.have_kind,
                          "want_kind": p.want_kind, "why": p.why, "source": p.source,
                          "count": p.count, "status": p.status, "last_clock": p.last_clock}
                         for p in protos],
        "traces": [{"id": t.id, "generation": t.generation, "label": t.label,
                    "members": list(t.members), "weight": t.weight,
                    "modularity": t.modularity} for t in traces],
    }


def _executor(name: str, use: ExecutorUse | None, admitted: bool) -> dict[str, Any]:
    return {"name": name, "admitted": admitted,
            "invocations": use.invocations if use is not None else 0,
            "window_uses": use.window_uses if use is not None else 0,
            "last_clock": use.last_clock if use is not None else 0,
            "state": use.state if use is not None else "active"}
