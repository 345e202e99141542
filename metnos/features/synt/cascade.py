"""One round of the synt (the `synt/check` deployment): due proto-mnests are answered by a
composition when the pool has one, else by a generation proposal with its cost; accepted
generations are then run. No model is called before a generation was accepted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.features.mnestoma.models import ProtoMnest
from metnos.features.synt import _common, composition, generate, jobs
from metnos.features.synt.compose import Need, find_chain, pool
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import Registry, load_registry


@dataclass
class Round:
    composed: list[str] = field(default_factory=list)  # proto ids given a compose proposal
    to_generate: list[str] = field(default_factory=list)  # given a generate proposal
    skipped: list[str] = field(default_factory=list)  # over the cost cap, or already proposed

    def to_json(self) -> dict[str, list[str]]:
        return {"composed": self.composed, "to_generate": self.to_generate,
                "skipped": self.skipped}


def due(db: Session, threshold: int) -> list[ProtoMnest]:
    """Open proto-mnests that recurred at least `threshold` times, most frequent first."""
    rows = db.exec(select(ProtoMnest).where(
        col(ProtoMnest.status) == "open", col(ProtoMnest.count) >= threshold)
        .order_by(col(ProtoMnest.count).desc(), col(ProtoMnest.id)))
    return list(rows.all())


def check(settings: Settings, engine: Engine, registry: Registry) -> Round:
    """Compose or propose a generation for each due proto-mnest."""
    result = Round()
    manifests = pool(registry, _common.inactive(engine))
    for proto in in_session(engine, due, settings.evolution.proto_threshold):
        need = Need(proto.src, proto.want, proto.have_kind, proto.want_kind)
        chain = find_chain(need, manifests)
        if chain is not None:
            made = in_session(engine, composition.propose, proto, chain)
            (result.composed if made else result.skipped).append(proto.id)
            continue
        made = generate.propose(settings, engine, proto)
        (result.to_generate if made else result.skipped).append(proto.id)
    return result


def check_instance(settings: Settings) -> dict[str, list[str]]:
    """`check` on the instance's database and registry (what the `synt/check` run does)."""
    engine = make_engine(database_url(settings))
    try:
        return check(settings, engine, load_registry(settings)).to_json()
    finally:
        engine.dispose()


def pending_instance(settings: Settings) -> list[str]:
    """The accepted generations not run yet (job ids)."""
    return jobs.pending(settings)


async def generate_instance(settings: Settings, job_id: str) -> dict[str, Any]:
    """One accepted generation on the instance (the `synt` flow's generation task)."""
    job = jobs.load(settings, job_id)
    if job.status != "pending":  # a retried task whose first try finished the job
        return {"ok": job.status == "done", "name": None, "stage": None, "detail": job.status}
    engine = make_engine(database_url(settings))
    try:
        outcome = await generate.generate(settings, engine, load_registry(settings), job)
    finally:
        engine.dispose()
    return {"ok": outcome.ok, "name": outcome.name, "stage": outcome.stage,
            "detail": outcome.detail}
