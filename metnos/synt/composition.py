"""An accepted composition: recorded, hinted to the model, counted, and proposed for promotion.

Accepting a `compose` proposal writes an `EvolutionMove` of kind "compose" (its `before` holds
the proto-mnest as it was, so the move can be taken back) and marks the proto "composed". The
model then reads one line per composition whose executors it is offered ("to turn pdf into
text: pdf_ext then ocr_image", `hints`). `observe`, called after each turn with the executors
it ran in order, counts the turns that used the whole chain since it was accepted; after
`promote_after` of them the synt proposes making the chain one executor (kind "promote",
handled like a generation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos import i18n
from metnos.db.engine import session as db_session
from metnos.db.models import TurnStep
from metnos.evolution_settings import EvolutionSettings
from metnos.mnestoma.models import EvolutionMove, ProtoMnest
from metnos.proposals.models import Proposal
from metnos.proposals.store import Draft, on_accept, submit
from metnos.settings import get_settings
from metnos.synt import _common
from metnos.synt.compose import Chain, Need

KIND = "compose"


def propose(engine: Engine, proto: ProtoMnest, chain: Chain) -> Proposal | None:
    """Submit the compose proposal of `proto` and mark it "proposed"."""
    draft = Draft(kind=KIND, origin="proto_mnest", user_id=_common.OWNER,
                  title_key="PROPOSAL_SYNT_COMPOSE", target=proto.want,
                  vars={"capability": proto.want, "chain": chain.label()},
                  payload={"chain": list(chain.executors), "proto": proto.id})
    row = submit(engine, draft)
    _common.set_status(engine, proto.id, "proposed")
    return row


def accept(engine: Engine, proposal: Proposal) -> None:
    """The `compose` handler: record the composition as a move and mark the proto composed."""
    chain = [str(name) for name in proposal.payload.get("chain", [])]
    proto_id = str(proposal.payload.get("proto", ""))
    before = _common.set_status(engine, proto_id, "composed")
    settings = get_settings()
    label = " → ".join(chain)
    motivation = i18n.get("SYNT_COMPOSE_MOTIVATION", settings.lang, chain=label,
                          capability=before.want if before else "-")
    with db_session(engine) as db:
        move = EvolutionMove(
            kind=KIND, target=label, motivation=motivation,
            before={"proto_mnest": [before.model_dump(mode="json")] if before else []},
            after={"chain": chain, "proto": proto_id, "proposal": proposal.id,
                   "capability": before.want if before else "",
                   "have_kind": before.have_kind if before else "",
                   "want_kind": before.want_kind if before else ""})
        db.add(move)
        db.flush()
        move_id = move.id
    seq = _common.audit(settings, "synt.compose", action_id=move_id, outcome="accepted",
                        reason=label)
    with db_session(engine) as db:
        row = db.get(EvolutionMove, move_id)
        if row is not None:
            row.audit_seq = seq
            db.add(row)


def active(engine: Engine) -> list[EvolutionMove]:
    """The accepted compositions not taken back, oldest first."""
    with db_session(engine) as db:
        rows = db.exec(select(EvolutionMove).where(
            col(EvolutionMove.kind) == KIND, col(EvolutionMove.undone_by).is_(None))
            .order_by(col(EvolutionMove.created_at)))
        return list(rows.all())


def hints(engine: Engine, offered: Iterable[str], lang: str) -> list[str]:
    """One line for the system prompt per composition whose executors are all `offered`."""
    names = set(offered)
    lines = []
    for move in active(engine):
        chain = [str(n) for n in move.after.get("chain", [])]
        if chain and set(chain) <= names:
            lines.append(i18n.get("SYNT_COMPOSE_HINT", lang, chain=" → ".join(chain),
                                  have=move.after.get("have_kind") or "-",
                                  want=move.after.get("want_kind") or "-"))
    return lines


def observe(engine: Engine, settings: EvolutionSettings,
            executors_in_order: Sequence[str]) -> list[Proposal]:
    """After a turn: for each composition the turn used whole, count the turns since it was
    accepted that did; at `promote_after`, propose promoting it to one executor."""
    made = []
    for move in active(engine):
        chain = [str(n) for n in move.after.get("chain", [])]
        if len(chain) < 2 or not _contains(executors_in_order, chain):
            continue
        if _uses(engine, move, chain) < settings.promote_after:
            continue
        draft = Draft(kind="promote", origin="composition", user_id=_common.OWNER,
                      title_key="PROPOSAL_SYNT_PROMOTE", target=" → ".join(chain),
                      vars={"chain": " → ".join(chain),
                            "capability": move.after.get("capability") or "-"},
                      payload={"chain": chain, "proto": move.after.get("proto"),
                               "move": move.id})
        if (row := submit(engine, draft)) is not None:
            made.append(row)
    return made


def need_of(move_after: dict[str, Any]) -> Need:
    chain = [str(n) for n in move_after.get("chain", [])]
    return Need(src=chain[0] if chain else "", capability=str(move_after.get("capability", "")),
                have_kind=str(move_after.get("have_kind", "")),
                want_kind=str(move_after.get("want_kind", "")))


def _uses(engine: Engine, move: EvolutionMove, chain: list[str]) -> int:
    """Turns since `move` whose executed steps contain `chain` in order."""
    with db_session(engine) as db:
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
