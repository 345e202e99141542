"""The nightly introvert steps (SPEC §7.3, arch §9 "tre passi introvertivi"): proposals only.

Three steps look at the mnestoma and the signed pool, each **inside one trace** (the newest
generation of `metnos.features.mnestoma.traces`; no fusion or generalisation across traces):

- *fuse* two executors A, B of one trace when the hand-off A→B dominates both: it carries at
  least `FUSE_SHARE` of A's outgoing weight and of B's incoming weight (self hand-offs left
  out), and at least `FUSE_MIN_WEIGHT` (a habit, not a coincidence), and their sandbox
  profiles are compatible: the same network need, no host `effect` on either, and risks at
  most one step apart (low/medium, medium/high);
- *generalise* `GENERALISE_MIN` or more executors of one trace with the same shape (the same
  types and kinds of the planner's inputs and of the outputs) into one parametric executor;
- *specialise* the hot executor of a trace (the most invocations) when its latest
  `SPECIALISE_RECENT` calls (steps that ran) are at least `SPECIALISE_MIN_CALLS` and one
  argument set (`TurnStep.args_digest`) makes at least `SPECIALISE_SHARE` of them; the
  measured benefit goes in the payload: the share, the calls, and the model calls that asked
  for that argument set (a specialised executor without arguments is matched by the
  embedded planner, so those would be saved). No measured saving, no proposal.

Only active executors of the admitted pool take part (quarantined and archived ones do not).
One run is one batch: its drafts carry the same `payload["batch"]`, so the owner gets them
together. A proposal made before (the same kind and `payload["subject"]`) is not made again.
Accepting one hands it to the synt's generation (its handler is the synt's). Each run leaves
one audit line.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.features.mnestoma.models import ExecutorUse, Mnest, Trace
from metnos.features.mnestoma.traces import current, system_audit
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import Draft, submit
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, TurnStep, new_id
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.executors.manifest import Manifest

ORIGIN = "introvert"
OWNER = "owner"  # the user of the owner token: the one proposals are for
AUDIT_ACTION = "introvert"
FUSE_SHARE = 0.6
FUSE_MIN_WEIGHT = 5.0
GENERALISE_MIN = 3
SPECIALISE_RECENT = 200
SPECIALISE_MIN_CALLS = 20
SPECIALISE_SHARE = 0.6
_RISK = {"low": 0, "medium": 1, "high": 2}
_RAN = ("done", "failed")


@dataclass
class IntrovertReport:
    batch: str
    proposals: list[Proposal] = field(default_factory=list)
    repeated: int = 0  # drafts already proposed once: not made again

    def kinds(self) -> list[str]:
        return [p.kind for p in self.proposals]


def run(engine: Engine, settings: Settings, manifests: Mapping[str, Manifest], *,
        audit: AuditLog | None = None) -> IntrovertReport:
    """One night's introvert steps over the admitted pool's `manifests` (name → manifest)."""
    report = IntrovertReport(batch=new_id())
    traces = in_session(engine, current)
    active = _active(engine, manifests)
    weights = _weights(engine)
    drafts: list[Draft] = []
    for trace in traces:
        members = [m for m in trace.members if m in active]
        drafts += fuse(trace, members, weights, manifests)
        drafts += generalise(trace, members, manifests)
        drafts += specialise(engine, trace, members, active)
    made = _made(engine)
    for draft in drafts:
        payload = {**draft.payload, "batch": report.batch}
        if (draft.kind, payload["subject"]) in made:
            report.repeated += 1
            continue
        row = in_session(engine, submit, Draft(kind=draft.kind, origin=ORIGIN, user_id=OWNER,
                                               title_key=draft.title_key, target=draft.target,
                                               vars=draft.vars, payload=payload))
        if row is not None:
            report.proposals.append(row)
    system_audit(settings, audit, AUDIT_ACTION, batch=report.batch, proposals=report.kinds(),
           repeated=report.repeated, traces=len(traces))
    return report


def fuse(trace: Trace, members: list[str], weights: Mapping[tuple[str, str], float],
         manifests: Mapping[str, Manifest]) -> list[Draft]:
    """Pairs of `members` whose hand-off dominates both and whose profiles fit (the module)."""
    inside = set(members)
    out: dict[str, float] = defaultdict(float)
    into: dict[str, float] = defaultdict(float)
    for (src, dst), weight in weights.items():
        if src != dst:
            out[src] += weight
            into[dst] += weight
    drafts = []
    for (a, b), weight in sorted(weights.items()):
        if a == b or a not in inside or b not in inside or weight < FUSE_MIN_WEIGHT:
            continue
        share_out, share_in = weight / out[a], weight / into[b]
        if min(share_out, share_in) < FUSE_SHARE or not compatible(manifests[a], manifests[b]):
            continue
        drafts.append(_draft("fuse", f"{a}→{b}", "MSG_INTROVERT_FUSE",
                             {"a": a, "b": b, "share": round(100 * min(share_out, share_in))},
                             {"subject": f"{a}+{b}", "executors": [a, b], "trace": trace.label,
                              "weight": weight, "share_out": round(share_out, 3),
                              "share_in": round(share_in, 3)}))
    return drafts


def compatible(a: Manifest, b: Manifest) -> bool:
    """One sandbox profile can serve both: the same network need, no host effect, risks at
    most one step apart."""
    return (a.sandbox.network == b.sandbox.network and a.effect is None and b.effect is None
            and abs(_RISK[a.risk] - _RISK[b.risk]) <= 1)


def shape(manifest: Manifest) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The types and kinds of the planner's inputs and of the outputs, in order."""
    inputs = sorted((i.type, i.kind or "") for i in manifest.inputs.values() if not i.host_set)
    outputs = sorted((o.type, o.kind or "") for o in manifest.outputs.values())
    return tuple(inputs), tuple(outputs)


def generalise(trace: Trace, members: list[str],
               manifests: Mapping[str, Manifest]) -> list[Draft]:
    """Groups of at least `GENERALISE_MIN` same-shaped members (those with some input)."""
    groups: dict[Any, list[str]] = defaultdict(list)
    for name in sorted(members):
        found = shape(manifests[name])
        if found[0]:
            groups[found].append(name)
    return [_draft("generalise", "+".join(names), "MSG_INTROVERT_GENERALISE",
                   {"executors": ", ".join(names), "count": len(names)},
                   {"subject": "+".join(names), "executors": names, "trace": trace.label,
                    "shape": {"inputs": [list(i) for i in key[0]],
                              "outputs": [list(o) for o in key[1]]}})
            for key, names in groups.items() if len(names) >= GENERALISE_MIN]


def specialise(engine: Engine, trace: Trace, members: list[str],
               active: Mapping[str, int]) -> list[Draft]:
    """The trace's hot executor, when one argument set dominates its recent calls."""
    if not members:
        return []
    hot = max(members, key=lambda n: (active[n], n))
    with db_session(engine) as db:
        steps = list(db.exec(select(TurnStep).where(
            col(TurnStep.executor) == hot, col(TurnStep.outcome).in_(_RAN))
            .order_by(col(TurnStep.created_at).desc()).limit(SPECIALISE_RECENT)))
    if len(steps) < SPECIALISE_MIN_CALLS:
        return []
    digest, calls = Counter(s.args_digest for s in steps).most_common(1)[0]
    share = calls / len(steps)
    same = [s for s in steps if s.args_digest == digest]
    saved = len({(s.turn_id, s.think) for s in same if s.think > 0})
    if share < SPECIALISE_SHARE or saved == 0:
        return []
    return [_draft("specialise", hot, "MSG_INTROVERT_SPECIALISE",
                   {"executor": hot, "share": round(100 * share), "calls": len(steps),
                    "saved": saved},
                   {"subject": f"{hot}:{digest}", "executor": hot, "trace": trace.label,
                    "args_digest": digest, "args": _arguments(engine, same[0]),
                    "benefit": {"share": round(share, 3), "calls": len(steps), "same": calls,
                                "model_calls_saved": saved}})]


def _arguments(engine: Engine, step: TurnStep) -> dict[str, Any] | None:
    """The arguments of `step` as the model sent them (its tool call), if kept."""
    with db_session(engine) as db:
        rows = db.exec(select(ChatMessage).where(
            col(ChatMessage.turn_id) == step.turn_id, col(ChatMessage.role) == "assistant"))
        for message in rows:
            for call in message.tool_calls or []:
                if call.get("id") == step.call_id and step.call_id:
                    try:
                        args = json.loads(call.get("arguments") or "{}")
                    except ValueError:
                        return None
                    return args if isinstance(args, dict) else None
    return None


def _draft(kind: str, target: str, key: str, vars: dict[str, Any],
           payload: dict[str, Any]) -> Draft:
    return Draft(kind=kind, origin=ORIGIN, user_id=OWNER, title_key=key, target=target,
                 vars=vars, payload=payload)


def _active(engine: Engine, manifests: Mapping[str, Manifest]) -> dict[str, int]:
    """The admitted executors that are active → their invocations."""
    with db_session(engine) as db:
        rows = db.exec(select(ExecutorUse.name, ExecutorUse.state, ExecutorUse.invocations))
        used = {name: (state, n) for name, state, n in rows}
    return {name: used.get(name, ("active", 0))[1] for name in manifests
            if used.get(name, ("active", 0))[0] == "active"}


def _weights(engine: Engine) -> dict[tuple[str, str], float]:
    with engine.connect() as conn:
        rows = conn.execute(select(col(Mnest.src), col(Mnest.dst), col(Mnest.weight))
                            .where(col(Mnest.weight) > 0)).all()
    return {(src, dst): float(weight) for src, dst, weight in rows}


def _made(engine: Engine) -> set[tuple[str, str]]:
    """(kind, subject) of every introvert proposal ever made."""
    with db_session(engine) as db:
        rows = db.exec(select(Proposal.kind, Proposal.payload).where(
            col(Proposal.origin) == ORIGIN))
        return {(kind, str(payload.get("subject"))) for kind, payload in rows}

