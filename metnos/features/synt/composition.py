"""An accepted composition: recorded, hinted to the model, counted, and proposed for promotion.

Accepting a `compose` proposal makes an evolution move of kind "compose" (H4's
`metnos.features.mnestoma.moves.apply`: the proto-mnest marked "composed", undone by
`metnos evolution undo`), whose target is the chain. The
model then reads one line per composition whose executors it is offered ("to turn pdf into
text: pdf_ext then ocr_image", `hints`). `observe`, called after each turn with the executors
it ran in order, counts the turns that used the whole chain since it was accepted; after
`promote_after` of them the synt proposes making the chain one executor (kind "promote",
handled like a generation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.features.mnestoma import moves
from metnos.features.mnestoma.models import EvolutionMove, ProtoMnest
from metnos.features.mnestoma.moves import RowChange
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import Draft, on_accept, submit
from metnos.features.synt import _common
from metnos.features.synt.compose import Chain
from metnos.features.synt.cost import estimate
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.audit import open_audit_log

KIND = "compose"
SEP = " → "


def propose(db: Session, proto: ProtoMnest, chain: Chain) -> Proposal | None:
    """Submit the compose proposal of `proto` and mark it "proposed"."""
    draft = Draft(kind=KIND, origin="proto_mnest", user_id=_common.OWNER,
                  title_key="PROPOSAL_SYNT_COMPOSE", target=proto.want,
                  vars={"capability": proto.want, "chain": chain.label()},
                  payload={"chain": list(chain.executors), "proto": proto.id})
    row = submit(db, draft)
    _common.set_status(db, proto.id, "proposed")
    return row


def accept(engine: Engine, proposal: Proposal) -> None:
    """The `compose` handler: the composition is an evolution move
    (`metnos.features.mnestoma.moves`, so `metnos evolution undo` takes it back) that marks the
    proto-mnest "composed"; its target is the chain ("A → B")."""
    chain = [str(name) for name in proposal.payload.get("chain", [])]
    proto_id = str(proposal.payload.get("proto", ""))
    settings = get_settings()
    with db_session(engine) as db:
        proto = db.get(ProtoMnest, proto_id)
    capability = proto.want if proto else "-"
    motivation = i18n.get("SYNT_COMPOSE_MOTIVATION", settings.lang, chain=SEP.join(chain),
                          capability=capability)
    audit = open_audit_log(settings)
    try:
        moves.apply(engine, KIND, SEP.join(chain), motivation,
                    [RowChange("proto_mnest", (proto_id,), {"status": "composed"})],
                    moves.Actor(audit, sender=_common.OWNER, channel=_common.CHANNEL),
                    reason=proposal.id)
    finally:
        audit.close()


def active(db: Session) -> list[EvolutionMove]:
    """The accepted compositions not taken back, oldest first."""
    rows = db.exec(select(EvolutionMove).where(
        col(EvolutionMove.kind) == KIND, col(EvolutionMove.undone_by).is_(None))
        .order_by(col(EvolutionMove.created_at)))
    return list(rows.all())


def hints(engine: Engine, offered: Iterable[str], lang: str) -> list[str]:
    """One line for the system prompt per composition whose executors are all `offered`."""
    names = set(offered)
    lines = []
    with db_session(engine) as db:
        for move in active(db):
            chain = chain_of(move)
            if chain and set(chain) <= names:
                proto = _proto_of(db, move)
                lines.append(i18n.get("SYNT_COMPOSE_HINT", lang, chain=move.target,
                                      have=proto.have_kind if proto else "-",
                                      want=proto.want_kind if proto else "-"))
    return lines


def chain_of(move: EvolutionMove) -> list[str]:
    return [name for name in move.target.split(SEP) if name]


def _proto_of(db: Session, move: EvolutionMove) -> ProtoMnest | None:
    """The proto-mnest the composition closed (the row its move changed)."""
    rows = move.after.get("proto_mnest", {}).get("rows", [])
    if not rows:
        return None
    return db.get(ProtoMnest, rows[0][0])


def observe(engine: Engine, settings: Settings,
            executors_in_order: Sequence[str]) -> list[Proposal]:
    """After a turn: for each composition the turn used whole, count the turns since it was
    accepted that did; at `promote_after`, propose promoting it to one executor, with the
    generation's expected cost (none above `synt_max_cost_usd`: audited once)."""
    made = []
    with db_session(engine) as db:
        for move in active(db):
            chain = chain_of(move)
            if len(chain) < 2 or not _contains(executors_in_order, chain):
                continue
            uses = _uses(db, move, chain)
            if uses < settings.evolution.promote_after:
                continue
            cost = estimate(settings)
            if cost.cost_usd is not None and cost.cost_usd > settings.evolution.synt_max_cost_usd:
                if uses == settings.evolution.promote_after:
                    _common.audit(settings, "synt.promote", decision="deny",
                                  reason="SYNT_OVER_COST_CAP", outcome=move.target)
                continue
            proto = _proto_of(db, move)
            draft = Draft(kind="promote", origin="composition", user_id=_common.OWNER,
                          title_key="PROPOSAL_SYNT_PROMOTE" if cost.cost_usd is not None
                          else "PROPOSAL_SYNT_PROMOTE_UNPRICED", target=move.target,
                          vars={"chain": move.target, "capability": proto.want if proto else "-",
                                "cost": cost.shown()},
                          payload={"chain": chain, "proto": proto.id if proto else None,
                                   "move": move.id, "cost_usd": cost.cost_usd})
            if (row := submit(db, draft)) is not None:
                made.append(row)
    return made


def _uses(db: Session, move: EvolutionMove, chain: list[str]) -> int:
    """Turns since `move` whose executed steps contain `chain` in order."""
    rows = db.exec(select(TurnStep.turn_id, TurnStep.seq, TurnStep.executor).where(
        col(TurnStep.created_at) >= move.created_at,
        col(TurnStep.executor).in_(chain),
        col(TurnStep.outcome).in_(("done", "failed")))
        .order_by(col(TurnStep.turn_id), col(TurnStep.seq))).all()
    by_turn: dict[str, list[str]] = {}
    for turn_id, _seq, executor in rows:
        by_turn.setdefault(turn_id, []).append(executor)
    return sum(1 for steps in by_turn.values() if _contains(steps, chain))


def _contains(steps: Sequence[str], chain: Sequence[str]) -> bool:
    """Whether `chain` occurs in `steps` in order (other steps may come between)."""
    it = iter(steps)
    return all(any(step == name for step in it) for name in chain)


on_accept(KIND, accept)
