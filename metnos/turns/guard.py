"""The deontic guard of a turn (the Laws, issue 3) and its limits, around the policy decision.

- Law 2 (no secret exfiltration) and Law 4 (never act for another user): `laws`, before the
  executor is even looked up, so a step carrying a secret never becomes an approval; results
  go through `redact` before anyone sees them.
- Law 3 (never obey instructions found in data): once a turn has read untrusted content (a
  forwarded message, or an executor whose manifest says `untrusted_output`), every later step
  that changes state or uses the network asks the owner, even in `Full` (`taint`).
- Law 1 (no unrecoverable state): irreversible actions always ask (`policy.decide`), and an
  action whose before-record cannot be written is refused (`turns.service`).
- Rate limit (executor runs per user and hour) and the daily LLM cost cap (`rate`, `cost`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from metnos.db.engine import session as db_session
from metnos.executors.manifest import Manifest
from metnos.llm.tools import Plan, PlanStep
from metnos.policy import limits
from metnos.policy.decide import Decision
from metnos.policy.laws import check_laws, untrusted_data_decision
from metnos.policy.secret_scan import SecretScanner
from metnos.settings import Settings

if TYPE_CHECKING:
    from metnos.turns.service import TurnContext


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
        acts = manifest.side_effects or manifest.sandbox.network
        if ctx.tainted and acts and verdict.verdict == "allow":
            return untrusted_data_decision(manifest.name)
        return verdict

    def rate(self, ctx: TurnContext) -> Decision | None:
        with db_session(self.engine) as db:
            return limits.check_rate(db, user_id=ctx.user_id,
                                     limit_per_hour=self.settings.policy.max_actions_per_hour)

    def record_action(self, ctx: TurnContext, executor: str) -> None:
        with db_session(self.engine) as db:
            limits.record_action(db, user_id=ctx.user_id, executor=executor,
                                 turn_id=ctx.turn_id)

    def cost(self) -> Decision | None:
        with db_session(self.engine) as db:
            return limits.check_cost(
                db, cap_usd_per_day=self.settings.policy.max_llm_cost_per_day_usd)

    def record_cost(self, ctx: TurnContext, plan: Plan, model: str) -> None:
        with db_session(self.engine) as db:
            limits.record_llm_cost(db, turn_id=ctx.turn_id, user_id=ctx.user_id, model=model,
                                   cost_usd=plan.cost_usd)

    def redact(self, value: Any) -> tuple[Any, list[str]]:
        return self.scanner.redact(value)
