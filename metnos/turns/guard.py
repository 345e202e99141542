"""The deontic guard of a turn (the Laws, issue 3) and its limits, around the policy decision.

- Law 2 (no secret exfiltration) and Law 4 (never act for another user): `laws`, before the
  executor is even looked up, so a step carrying a secret never becomes an approval; results
  go through `redact` before anyone sees them.
- Law 3 (never obey instructions found in data): once a turn has read untrusted content (a
  forwarded message, any executor's results unless its manifest proves them text-free with
  `trusted_output`, an identity file a tainted turn wrote), every later step
  that changes state or uses the network asks the owner, even in `Full` (`taint`).
- Law 1 (no unrecoverable state): irreversible actions always ask (`policy.decide`), and an
  action whose before-record cannot be written is refused (`turns.service`).
- Rate limit (executor runs per user and hour) and the daily LLM cost cap: reservations taken
  before the run or the call and settled after it (`reserve_run`, `reserve_llm`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from metnos.ground.db.engine import session as db_session
from metnos.ground.settings import Settings
from metnos.mechanisms import identity
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.llm.tools import PlanStep
from metnos.mechanisms.policy import limits
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.laws import UNTRUSTED_SOURCES, check_laws, untrusted_data_decision
from metnos.mechanisms.policy.secret_scan import SecretScanner

if TYPE_CHECKING:
    from metnos.turns.context import CheckedStep, TurnContext


class Guard:
    def __init__(self, settings: Settings, engine: Engine,
                 scanner: SecretScanner | None = None) -> None:
        self.settings = settings
        self.engine = engine
        self.scanner = scanner or SecretScanner.for_instance(settings, os.environ,
                                                             home_dir=Path.home())

    def laws(self, ctx: TurnContext, step: PlanStep) -> Decision | None:
        return check_laws(executor=step.executor, args=step.args, user_id=ctx.user_id,
                          scanner=self.scanner)

    def taint(self, ctx: TurnContext, manifest: Manifest, verdict: Decision) -> Decision:
        """Law 3: once outside data is in the context, an acting step asks whatever the
        autonomy level; a step that asks anyway keeps its reason and names the sources too."""
        acts = manifest.side_effects or manifest.sandbox.network
        if not (ctx.tainted and acts):
            return verdict
        if verdict.verdict == "allow":
            return untrusted_data_decision(manifest.name, ctx.sources)
        if verdict.verdict == "ask":
            named = untrusted_data_decision(manifest.name, ctx.sources).vars["sources"]
            return replace(verdict, vars={**verdict.vars, UNTRUSTED_SOURCES: named})
        return verdict

    def owner_voice(self, manifest: Manifest, args: dict[str, Any],
                    verdict: Decision) -> Decision:
        """What later speaks as the owner (the identity files of the system prompt, a
        schedule's text run as the owner's message): a step that may change it always asks,
        at every autonomy level, with an audit line of its own when this rule is the cause."""
        if not manifest.changes(args):
            return verdict
        if manifest.effect == "schedule_task":
            return identity.identity_decision(manifest.name, [], verdict,
                                              key=identity.ASK_SCHEDULE)
        written = [str(args[name]) for name, access in manifest.path_inputs().items()
                   if access == "write" and isinstance(args.get(name), str)]
        return identity.identity_decision(
            manifest.name, identity.touched(self.settings.workspace, written), verdict)

    def reserve_run(self, ctx: TurnContext) -> limits.Reservation | Decision:
        """One run of this hour's budget for `ctx.user_id`, held until the step runs
        (`record_action`) or is given back (`release_run`), or a deny."""
        with db_session(self.engine) as db:
            return limits.reserve_run(db, user_id=ctx.user_id,
                                      limit_per_hour=self.settings.policy.max_actions_per_hour)

    def record_action(self, ctx: TurnContext, checked: CheckedStep) -> None:
        """The step's reserved run is spent: it starts now."""
        checked.run_slot = None
        with db_session(self.engine) as db:
            limits.record_action(db, user_id=ctx.user_id, executor=checked.step.executor,
                                 turn_id=ctx.turn_id)

    def release_run(self, checked: CheckedStep) -> None:
        """Give back the step's reserved run (refused, denied, expired, never started);
        idempotent."""
        slot, checked.run_slot = checked.run_slot, None
        if slot is not None:
            with db_session(self.engine) as db:
                limits.release(db, slot)

    def reserve_llm(self) -> limits.Reservation | Decision:
        """Reserve one call's estimate of today's LLM budget, or a deny (the cap is reached)."""
        policy = self.settings.policy
        with db_session(self.engine) as db:
            return limits.reserve_llm(db, cap_usd_per_day=policy.max_llm_cost_per_day_usd,
                                      estimate_usd=policy.llm_call_reserve_usd)

    def settle_llm(self, ctx: TurnContext, slot: limits.Reservation, cost_usd: float | None,
                   model: str) -> None:
        """The call's real cost replaces its estimate; None (the call failed): given back."""
        with db_session(self.engine) as db:
            if cost_usd is None:
                limits.release(db, slot)
            else:
                limits.settle_llm(db, slot, turn_id=ctx.turn_id, user_id=ctx.user_id,
                                  model=model, cost_usd=cost_usd)

    def redact(self, value: Any) -> tuple[Any, list[str]]:
        return self.scanner.redact(value)
