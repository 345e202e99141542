"""The runtime: what every part of a turn and every feature's hook uses, built once at
start-up (`metnos.faces.wiring.build_runtime`) and then frozen.

`Runtime` holds the instance's parts (settings, database, audit log, executor registry, LLM
port, the model's live state, the guard of the Laws, the event bus, the turn record); `Hooks`
holds what the features registered with the turn (effects, watchers, undoers, reversals, host
tools, accounts, the Tutor's pre-check, the way to the work pools). The turn service
(`metnos.turns.service`) is a runtime with its hooks and the step checker and runner built
over it; the checker, the runner and the features' hooks take a `Runtime`, so nothing here
imports a part of the turn's steps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.engine import Engine

from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.executors.registry import Registry, load_registry
from metnos.mechanisms.llm.embedded import FirstPlanner
from metnos.mechanisms.llm.health import ModelHealth
from metnos.mechanisms.llm.port import LLMPort
from metnos.mechanisms.llm.tools import ToolSpec
from metnos.mechanisms.policy.host_checks import HostCheck
from metnos.mechanisms.undo import UndoReport
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.events import TurnEvents
from metnos.turns.guard import Guard
from metnos.turns.record import Remember, TurnRecord
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from metnos.mechanisms.sandbox import SandboxResult
    from metnos.turns.steps import HostTool

# what the host carries out from an executor's validated result, keyed by the manifest's
# `effect` ("schedule_reminder": metnos.features.reminders.effect)
Effect = Callable[[TurnContext, CheckedStep, StepOutcome], Awaitable[StepOutcome]]
# told of each step after it ran (the owner's notice of a member's: metnos.features.notify.members)
Watcher = Callable[[TurnContext, CheckedStep, StepOutcome], Awaitable[None]]
# a manifest's `account` → the host-only block of the run's envelope (its password never in
# the arguments); AccountMissing when it is not configured
Account = Callable[[Settings], dict[str, Any]]
# an effect's undo: (action id, sender, channel) → a report, or None when not its action
Undoer = Callable[[str, str, str], UndoReport | None]
# whether an effect's own record (a reminder, a scheduled task) was set by this action id
Claim = Callable[[str], bool]
# a step whose manifest says `runs_on`, run on its place's work pool (metnos.features.remote.server)
RemoteRun = Callable[["Runtime", TurnContext, CheckedStep], Awaitable[StepOutcome]]
# the tools a turn offers the model, as the traces route them (metnos.features.mnestoma.routing)
Router = Callable[[TurnContext, list[ToolSpec]], list[ToolSpec]]
# the system prompt's lines of what the owner accepted: (offered executors, language) → lines
Hints = Callable[[list[str], str], list[str]]


class RecordRefused(MetnosError, RuntimeError):
    """The before-record could not be taken for a reason the owner reads (the server down, a
    wrong password...); nothing was changed."""


class Reversal(Protocol):
    """How one kind of change is recorded before a step and undone (`metnos.features.reversal`)."""

    def before(self, service: Runtime, checked: CheckedStep,
               key: Ed25519PrivateKey) -> dict[str, Any]:
        """The signed before-record, durable before the run (blocking; it may set the run's
        request). Raises RecordRefused, or OSError/ValueError/MetnosError (Law 1)."""

    def after(self, service: Runtime, checked: CheckedStep, result: SandboxResult) -> None:
        """What the run's result adds to the record (blocking); a failure is logged."""

    def undo(self, service: Runtime, hooks: Hooks, action_id: str, *, sender: str,
             channel: str) -> UndoReport | None:
        """The undo of `action_id` with one audit line, or None when its record is not of
        this kind. Raises UndoError (refused), after its audit line."""


# the Tutor's pre-check before the loop (SPEC §10): an answer about Metnos itself, or None
Precheck = Callable[[TurnContext], Awaitable[str | None]]


class Executors:
    """The admitted executors: the runtime's one part that changes after start-up (a synt
    candidate signed or rejected makes `reload` discover and admit them again)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.generation = 0  # told to whoever caches what it built from the registry

    def reload(self, settings: Settings) -> Registry:
        self.registry = load_registry(settings)
        self.generation += 1
        return self.registry


@dataclass(frozen=True, eq=False)
class Runtime:
    settings: Settings
    engine: Engine
    audit: AuditLog
    executors: Executors
    port: LLMPort | None
    model_health: ModelHealth
    guard: Guard
    events: TurnEvents
    record: TurnRecord
    sandbox_ok: bool = True  # the sandbox canary passed at start-up

    @property
    def registry(self) -> Registry:
        return self.executors.registry

    def reload_registry(self) -> Registry:
        """Discover and admit the executors again (a synt candidate was signed or rejected);
        the tools built from the old registry are forgotten (its generation moved on), so
        the next turn sees the change."""
        return self.executors.reload(self.settings)


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, eq=False)
class Hooks:
    """What the features registered with the turn (`metnos.faces.wiring.FEATURES`), merged
    (read-only mappings; a later feature's key wins, in registration order):

    - `effects`: a manifest's `effect` → what the host carries out from the result;
    - `watchers`: told of each step after it ran;
    - `undoers`: a manifest's `effect` → the undo of what it carried out
      (`metnos.features.reversal.Effects`);
    - `reversals`: how each kind of change is recorded and undone (`metnos.features.reversal`,
      chosen by the manifest), asked in this order whose action an undo is (the files last);
    - `host_tools`: Metnos's own tools, offered when a model plans (`turns.steps.HostTool`);
    - `accounts`: a manifest's `account` → the envelope's host-only block;
    - `host_checks`: the checks a manifest may name beside the policy's own (`list_name`,
      `archive_destination`, `cadence`); `planners`: the readings the embedded planner tries
      before its templates (a reminder's or a scheduled task's time);
    - `claims`: whether an effect's own record was set by an action (what undo by words
      finds: `metnos.turns.undo_said`);
    - `archived`: whether the owner archived an executor (the mnestoma's lifecycle);
    - `route`: the tools the traces let reach the model; `hints`: the accepted
      compositions' lines for the system prompt (the synt);
    - `precheck`: the Tutor's; `remote`: how a step reaches its work pool, or None."""

    effects: Mapping[str, Effect] = field(default_factory=_empty)
    watchers: tuple[Watcher, ...] = ()
    undoers: Mapping[str, Undoer] = field(default_factory=_empty)
    reversals: Mapping[str, Reversal] = field(default_factory=_empty)
    host_tools: Mapping[str, HostTool] = field(default_factory=_empty)
    accounts: Mapping[str, Account] = field(default_factory=_empty)
    host_checks: Mapping[str, HostCheck] = field(default_factory=_empty)
    planners: tuple[FirstPlanner, ...] = ()
    claims: tuple[Claim, ...] = ()
    archived: Callable[[str], bool] | None = None
    route: Router | None = None
    hints: Hints | None = None
    precheck: Precheck | None = None
    # how a step whose manifest says `runs_on` reaches its work pool (flows/remote_step.py);
    # None: such a step fails, naming the place
    remote: RemoteRun | None = None

    @classmethod
    def merge(cls, parts: Sequence[Hooks]) -> Hooks:
        def merged(name: str) -> Mapping[str, Any]:
            into: dict[str, Any] = {}
            for part in parts:
                into.update(getattr(part, name))
            return MappingProxyType(into)
        def first(name: str) -> Any:
            return next((getattr(p, name) for p in parts if getattr(p, name)), None)
        return cls(effects=merged("effects"),
                   watchers=tuple(w for part in parts for w in part.watchers),
                   undoers=merged("undoers"), reversals=merged("reversals"),
                   host_tools=merged("host_tools"), accounts=merged("accounts"),
                   host_checks=merged("host_checks"),
                   planners=tuple(p for part in parts for p in part.planners),
                   claims=tuple(c for part in parts for c in part.claims),
                   archived=first("archived"), route=first("route"), hints=first("hints"),
                   precheck=first("precheck"), remote=first("remote"))


def runtime(settings: Settings, *, engine: Engine, audit: AuditLog, registry: Registry,
            port: LLMPort | None, sandbox_ok: bool = True,
            remember: Remember | None = None) -> Runtime:
    """The parts, each made once and told of the others: the model's state observes every
    call of the port, the record reads the current registry for the mnestoma."""
    health = ModelHealth(settings)
    if port is not None:
        port.observe(health.observe)
        port.gate(health.allows)
    executors = Executors(registry)
    events = TurnEvents()  # each turn's progress, for the channels (SSE, typing...)
    record = TurnRecord(settings, engine=engine, audit=audit, events=events,
                        registry=lambda: executors.registry, remember=remember)
    return Runtime(settings, engine, audit, executors, port, health, Guard(settings, engine),
                   events, record, sandbox_ok)
