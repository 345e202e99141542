"""What a turn carries along: its context, its checked steps, what a waiting channel gets."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from metnos.ground.system_lang import Lang
from metnos.mechanisms.approvals import Approval
from metnos.mechanisms.executors.registry import ExecutorSpec
from metnos.mechanisms.llm.tools import PlanStep
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.limits import Reservation
from metnos.mechanisms.sandbox import SandboxRequest
from metnos.turns.reply import StepOutcome


@dataclass(frozen=True)
class ModelCall:
    """One model call of a turn, for its card: how long it took and what it asked for (the
    tools the model named, as it named them; none: it answered)."""

    index: int
    ms: float
    asked: tuple[str, ...] = ()
    failed: bool = False


@dataclass
class TurnContext:
    """One turn in flight: who asked what, where, and the figures measured along the way.

    `lang` is the turn's language, which its replies and the planner speak: the session's
    persisted interaction language, or for this turn only the language a message is clearly
    written in (`language.turn_language`; the session keeps its own). `ui_locale` is the
    requesting client's locale, for that request's chrome (error messages) only; it never
    changes `lang` (SPEC §9.6).
    """

    turn_id: str
    session_id: str
    user_id: str
    channel: str
    sender: str
    lang: Lang
    autonomy: str
    text: str
    timings: dict[str, float] = field(default_factory=dict)
    flow_run_id: str | None = None  # set when the turn runs as a Prefect flow
    closed: bool = False  # the turn row has its final status (completed or failed)
    # content from outside (forwarded text, a web page...) as (source, text): data, never orders
    untrusted: tuple[tuple[str, str], ...] = ()
    tainted: bool = False  # untrusted content entered this turn: acting steps then ask (Law 3)
    ask_all: bool = False  # the session asks before every change (the owner's setting)
    ui_locale: str = ""  # the client's UI locale of the request that opened the turn
    # the untrusted sources read so far ("fs_read (logs/x.log)", "web_fetch (https://...)"):
    # an approval card asked because of them names them
    sources: list[str] = field(default_factory=list)
    activity: list[dict[str, Any]] = field(default_factory=list)  # what ran, beside the reply
    stop_reason: str | None = None  # the i18n key of the budget that ended the loop, if any
    understood: bool = True  # False: the embedded planner matched nothing (nothing ran)
    # "conferma", "confirm": a yes to the Tutor's pending confirmation, else never a question
    # about Metnos (the trash's confirm answers it)
    confirm_said: bool = False
    opened_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    calls: list[ModelCall] = field(default_factory=list)  # the model calls, in order

    def mark(self, name: str, started: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - started) * 1000


@dataclass
class CheckedStep:
    """A plan step after the policy: either a sandbox request to run, or a final outcome."""

    step: PlanStep
    spec: ExecutorSpec | None
    request: SandboxRequest | None = None
    outcome: StepOutcome | None = None
    args_digest: str = ""
    action_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    approval: Approval | None = None  # set when the step waits for the owner's decision
    ask: Decision | None = None  # why the policy asks
    run_slot: Reservation | None = None  # its reserved run, until spent or given back
    seq: int = 0  # its place in the turn's step trace (1, 2, ...)
    think: int = 0  # the model call that asked for it (0: the embedded planner)
    malformed: bool = False  # refused because the call itself was unusable (the model may fix it)
    # admitted without asking because it can be undone (policy.decide's ALLOWED_REVERSIBLE):
    # its before-record must then be whole, and its audit line says so
    unasked: bool = False
    carried_out: bool = False  # a host tool did it when checked (`turns.steps`): no run follows


@dataclass(frozen=True)
class Published:
    """What a waiting channel receives: the reply so far, the status, pending approvals."""

    reply: str
    status: str
    approvals: list[dict[str, Any]]
    activity: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
