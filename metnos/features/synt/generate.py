"""Generate, only when no composition closes the need: the cost first, then the seven stages.

`propose` puts the expected cost (`metnos.features.synt.cost`) in a `generate` proposal; nothing is
spent before the owner accepts it, and no proposal is made above `synt_max_cost_usd` (an
audit line says so). Accepting writes a job (`metnos.features.synt.jobs`); the `synt` flow then runs
`generate` on it: (1) spec, (2) manifest, (3) sandbox profile, (4) code,
(5) tests — each a model stage (`metnos.features.synt.stages`) checked in code (`checks`) — (6) the
tests inside the sandbox (`trial`) and (7) the review, code checks then the model. Only a
candidate whose tests all passed and whose review approved lands in
`METNOS_HOME/executors/<name>/`; any other attempt is kept under `synt/failed/`.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from metnos.features.mnestoma.models import ProtoMnest
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import Draft, on_accept, submit
from metnos.features.synt import _common, candidates, checks, jobs, trial
from metnos.features.synt.compose import Need
from metnos.features.synt.cost import estimate
from metnos.features.synt.jobs import Job
from metnos.features.synt.stages import Invalid, StageFailed, Stager
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import ManifestError
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, Manifest, parse_manifest
from metnos.mechanisms.executors.registry import Registry
from metnos.mechanisms.llm.port import LLMPort, configured


class Refused(Exception):
    """A candidate refused without a retry (a near-duplicate, a review that says no)."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    name: str | None
    folder: Path | None
    stage: str | None = None  # where it stopped
    detail: str = ""


def propose(settings: Settings, engine: Engine, proto: ProtoMnest,
            kind: str = "generate", chain: list[str] | None = None) -> Proposal | None:
    """The generation proposal with its expected cost; None above the cap (audited), or
    while no model is configured (the proto-mnest stays open: nothing could generate)."""
    if not configured(settings.llm):
        return None
    cost = estimate(settings)
    cap = settings.evolution.synt_max_cost_usd
    if cost.cost_usd is not None and cost.cost_usd > cap:
        _common.audit(settings, "synt.generate", decision="deny", reason="SYNT_OVER_COST_CAP",
                      outcome=f"{cost.cost_usd:.4f}>{cap:.4f}")
        in_session(engine, _common.set_status, proto.id, "closed")
        return None
    key = "PROPOSAL_SYNT_GENERATE" if cost.cost_usd is not None else \
        "PROPOSAL_SYNT_GENERATE_UNPRICED"
    draft = Draft(kind=kind, origin="proto_mnest", user_id=_common.OWNER, title_key=key,
                  target=proto.want, vars={"capability": proto.want, "cost": cost.shown()},
                  payload={"proto": proto.id, "cost_usd": cost.cost_usd, "model": cost.model,
                           "chain": chain or []})
    with db_session(engine) as db:
        row = submit(db, draft)
        _common.set_status(db, proto.id, "proposed")
    return row


async def generate(settings: Settings, engine: Engine, registry: Registry,
                   job: Job) -> Outcome:
    """The seven stages for one accepted job; its proto-mnest, if any, ends "generated" or
    "closed", the job "done" or "failed"."""
    if not configured(settings.llm):
        return Outcome(False, None, None, detail="no model is configured")
    need, evo = job.need, settings.evolution
    stager = Stager(LLMPort.for_instance(settings), evo.synt_tier, settings.lang, need, job.why,
                    max_cost_usd=evo.synt_max_cost_usd)
    work = candidates.synt_dir(settings) / "work" / f"{job.id}-{int(time.time())}"
    record: dict[str, Any] = {"need": {**need.__dict__, "proto": job.proto, "why": job.why},
                              "kind": job.kind, "job": job.id, "fuses": list(job.fuses),
                              "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        name, folder = await _stages(stager, settings, registry, need, work, record)
    except (StageFailed, Refused) as exc:
        stage = exc.stage if isinstance(exc, StageFailed) else "review"
        jobs.finish(settings, job, ok=False)
        return _failed(settings, engine, job.proto, stager, work, record, stage, str(exc))
    target = candidates.home_executors(settings) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    record.update(stages=stager.results, log=stager.log, cost_usd=round(stager.spent_usd, 6),
                  calls=stager.calls)
    shutil.move(str(folder), target)
    candidates.write_record(target, record)
    if job.proto:
        in_session(engine, _common.set_status, job.proto, "generated")
    jobs.finish(settings, job, ok=True)
    _common.audit(settings, "synt.candidate", outcome="written", reason=name,
                  cost_usd=stager.spent_usd)
    in_session(engine, submit, Draft(kind="candidate", origin="proto_mnest", user_id=_common.OWNER,
                                     title_key="PROPOSAL_SYNT_CANDIDATE", target=name,
                                     vars={"name": name, "capability": need.capability},
                                     payload={"name": name, "proto": job.proto}))
    return Outcome(True, name, target)


async def _stages(stager: Stager, settings: Settings, registry: Registry, need: Need,
                  work: Path, record: dict[str, Any]) -> tuple[str, Path]:
    taken = set(registry.names()) | {r.name for r in registry.refused}
    home = candidates.home_executors(settings)
    taken |= {p.name for p in home.iterdir()} if home.is_dir() else set()
    spec = await stager.ask("spec", lambda a: checks.spec(a, taken))
    name = spec["name"]
    folder = work / name
    folder.mkdir(parents=True)
    admitted = [s.manifest for s in registry.admitted]

    def manifest_check(answer: dict[str, Any]) -> str:
        text = answer.get("manifest_toml")
        if not isinstance(text, str) or "[sandbox]" in text:
            raise Invalid("manifest_toml must be the manifest as TOML text, without [sandbox]")
        manifest = _parse(folder, text, {})
        checks.manifest(manifest, need, name)
        if (twin := checks.near_duplicate(manifest, admitted)) is not None:
            raise Refused(f"a near-duplicate of {twin}")
        return text

    text = await stager.ask("manifest", manifest_check)
    first = _parse(folder, text, {})
    profile = await stager.ask("profile", lambda a: checks.profile(
        a, spec["network"], first.side_effects))
    code = await stager.ask("code", lambda a: checks.code(a, profile.network))
    cases = await stager.ask("tests", checks.cases)
    (folder / first.entry).write_text(code, encoding="utf-8")
    manifest = _parse(folder, text, profile.model_dump(mode="json"))
    report = await trial.run_cases(folder, manifest, cases)  # stage 6
    record["tests"] = report
    record["profile"] = profile.model_dump(mode="json")
    if report["failed"]:
        raise StageFailed("sandbox_tests", f"{report['failed']} of {len(cases)} cases failed")
    _review(manifest, code, spec["network"], need, name, admitted)
    review = await stager.ask("review", _approval, manifest=_read(folder / MANIFEST_FILE),
                              code=code, report=report)
    if not review["approve"]:
        raise Refused(f"the review said no: {review['notes']}")
    return name, folder


def _review(manifest: Manifest, code: str, network: bool, need: Need, name: str,
            admitted: list[Manifest]) -> None:
    """Stage 7's code checks, on the assembled folder."""
    try:
        checks.manifest(manifest, need, name)
        checks.profile(manifest.sandbox.model_dump(mode="json"), network, manifest.side_effects)
    except Invalid as exc:
        raise Refused(str(exc)) from exc
    if problems := checks.code_problems(code, manifest.sandbox.network):
        raise Refused("; ".join(problems))
    if (twin := checks.near_duplicate(manifest, admitted)) is not None:
        raise Refused(f"a near-duplicate of {twin}")


def _approval(answer: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(answer.get("approve"), bool):
        raise Invalid("approve must be true or false")
    return {"approve": answer["approve"], "notes": str(answer.get("notes", ""))[:1000]}


def _parse(folder: Path, text: str, profile: dict[str, Any]) -> Manifest:
    """Write the manifest (with `[sandbox]` from `profile`) and parse it for real."""
    entry = folder / "main.py"
    if not entry.exists():
        entry.write_text("# placeholder until the code stage\n", encoding="utf-8")
    path = folder / MANIFEST_FILE
    path.write_text(text.rstrip() + "\n" + _sandbox_toml(profile), encoding="utf-8")
    try:
        return parse_manifest(path)
    except ManifestError as exc:
        raise Invalid(f"the manifest is not valid: {exc.vars.get('detail', exc.key)}") from exc


def _sandbox_toml(profile: dict[str, Any]) -> str:
    if not profile:
        return ""
    import json

    lines = ["", "[sandbox]"]
    for key in ("read", "write", "network", "timeout_s", "memory_mb"):
        if key in profile:
            lines.append(f"{key} = {json.dumps(profile[key])}")
    return "\n".join(lines) + "\n"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _failed(settings: Settings, engine: Engine, proto_id: str | None, stager: Stager,
            work: Path,
            record: dict[str, Any], stage: str, detail: str) -> Outcome:
    """Keep the attempt under synt/failed/, close the proto, one audit line; never proposed."""
    kept = candidates.synt_dir(settings) / "failed" / work.name
    kept.parent.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    record.update(stages=stager.results, log=stager.log, cost_usd=round(stager.spent_usd, 6),
                  failed_at=stage, detail=detail[:1000])
    shutil.move(str(work), kept)
    candidates.write_record(kept, record)
    if proto_id:
        in_session(engine, _common.set_status, proto_id, "closed")
    _common.audit(settings, "synt.candidate", decision="deny", reason=f"SYNT_FAILED_{stage}",
                  outcome="not_proposed", cost_usd=stager.spent_usd)
    return Outcome(False, None, None, stage=stage, detail=detail)


def accept_candidate(engine: Engine, proposal: Proposal) -> None:
    """The `candidate` handler: accepting is the owner's signature (the gateway must then
    reload its registry: `Runtime.reload_registry`)."""
    from metnos.ground.settings import get_settings

    candidates.sign(get_settings(), engine, str(proposal.payload.get("name", "")))


on_accept("candidate", accept_candidate)
