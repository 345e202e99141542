"""Accepted generations waiting for the `synt` flow: one small JSON file each, by proposal.

Accepting a proposal that asks for a new executor hands it to the synt: `generate` (a need
nothing composes), `promote` (an accepted composition used often), and the introvert steps'
`fuse`, `generalise` and `specialise` (`metnos.features.mnestoma.introvert`). The handler writes
`METNOS_HOME/synt/jobs/<proposal id>.json` with the need (from the proto-mnest, or from the
manifests of the executors it is about) and the executors a signed result would stand in for
(`fuses`: a promotion's chain, a fusion's pair, a generalisation's group); the flow runs the
pending ones and marks each `done` or `failed`, so nothing is generated twice.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from sqlalchemy.engine import Engine

from metnos.features.mnestoma.models import ProtoMnest
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import on_accept
from metnos.features.synt import _common
from metnos.features.synt.candidates import synt_dir
from metnos.features.synt.compose import Need
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.executors.registry import load_registry

KINDS = ("generate", "promote", "fuse", "generalise", "specialise")
_FUSING = ("promote", "fuse", "generalise")


@dataclass(frozen=True)
class Job:
    id: str  # the accepted proposal's
    kind: str
    need: Need
    why: str = ""
    proto: str | None = None
    fuses: tuple[str, ...] = ()
    status: str = "pending"  # pending | done | failed


def jobs_dir(settings: Settings) -> Path:
    return synt_dir(settings) / "jobs"


def accept(engine: Engine, proposal: Proposal) -> None:
    """The handler of every kind in KINDS: the next synt run generates for it."""
    settings = get_settings()
    job = job_of(engine, settings, proposal)
    save(settings, job)
    if job.proto:
        in_session(engine, _common.set_status, job.proto, "generating")
    _common.audit(settings, f"synt.{proposal.kind}", outcome="accepted", action_id=proposal.id,
                  reason=job.need.capability)


def job_of(engine: Engine, settings: Settings, proposal: Proposal) -> Job:
    payload = proposal.payload
    if proposal.kind in ("generate", "promote"):
        with db_session(engine) as db:
            proto = db.get(ProtoMnest, str(payload.get("proto", "")))
        if proto is None:
            raise LookupError(f"proposal {proposal.id}: no proto-mnest")
        chain = tuple(str(n) for n in payload.get("chain", []))
        return Job(proposal.id, proposal.kind,
                   Need(proto.src, proto.want, proto.have_kind, proto.want_kind),
                   proto.why, proto.id, chain if proposal.kind == "promote" else ())
    names = [str(n) for n in payload.get("executors", [])] or [str(payload.get("executor"))]
    manifests = {s.name: s.manifest for s in load_registry(settings).admitted}
    first, last = manifests.get(names[0]), manifests.get(names[-1])
    capability = f"{proposal.kind}_{'_'.join(names)}"[:41]
    need = Need(names[0], capability, _input_kind(first), _output_kind(last))
    return Job(proposal.id, proposal.kind, need, proposal.kind,
               fuses=tuple(names) if proposal.kind in _FUSING else ())


def save(settings: Settings, job: Job) -> None:
    folder = jobs_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    data = {**asdict(job), "fuses": list(job.fuses)}
    (folder / f"{job.id}.json").write_text(json.dumps(data, sort_keys=True) + "\n")


def load(settings: Settings, job_id: str) -> Job:
    data = json.loads((jobs_dir(settings) / f"{job_id}.json").read_text())
    return Job(data["id"], data["kind"], Need(**data["need"]), data.get("why", ""),
               data.get("proto"), tuple(data.get("fuses", [])), data.get("status", "pending"))


def pending(settings: Settings) -> list[str]:
    """The ids of the jobs not run yet, oldest first."""
    folder = jobs_dir(settings)
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))
    return [p.stem for p in files if load(settings, p.stem).status == "pending"]


def finish(settings: Settings, job: Job, ok: bool) -> None:
    save(settings, replace(job, status="done" if ok else "failed"))


def _input_kind(manifest: Manifest | None) -> str:
    if manifest is None:
        return ""
    return next((s.kind for s in manifest.inputs.values()
                 if s.kind and s.is_required and not s.host_set), "")


def _output_kind(manifest: Manifest | None) -> str:
    if manifest is None:
        return ""
    return next((o.kind for o in manifest.outputs.values() if o.kind), "")


for _kind in KINDS:
    on_accept(_kind, accept)
