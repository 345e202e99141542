"""What a turn needs, in one place, and the parts that do the work (SPEC §2).

`TurnService` holds the instance's runtime (settings, database, executor registry, audit
log, LLM port, the guard of the Laws, the event bus) and the parts a turn is made of, each
findable by name:

- `record` (`turns/record.py`): the turn's row, step trace, audit lines, what channels see;
- `checker` (`turns/checker.py`): the policy for one step;
- `runner` (`turns/runner.py`): one admitted step in the sandbox;
- one step from check to record (`turns/steps.py`), with the host tools (`host_tools`) and
  the reversals (`reversals`, `metnos.reversal`) it dispatches to;
- the conversation the model sees (`turns/conversation.py`, `turns/history.py`), one model
  call (`turns/thinking.py`) and the agent loop (`turns/loop.py`), composed by
  `turns/pipeline.py` and, with Prefect tasks, by `flows/turn.py`.

Nothing here imports prefect.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy.engine import Engine

from metnos import i18n, undo_tool
from metnos.audit import AuditLog
from metnos.executors.registry import Registry, load_registry
from metnos.llm.health import ModelHealth
from metnos.llm.port import LLMPort
from metnos.llm.tools import ToolSpec
from metnos.mail.account import load_account
from metnos.mnestoma import wish
from metnos.reminders import effect as reminders
from metnos.reversal import Reversal, Undoer
from metnos.settings import Settings
from metnos.system_lang import Lang
from metnos.turns.checker import StepChecker
from metnos.turns.context import CheckedStep, Published, TurnContext
from metnos.turns.events import TurnEvents
from metnos.turns.guard import Guard
from metnos.turns.record import TurnRecord
from metnos.turns.reply import StepOutcome
from metnos.turns.runner import Effect, StepRunner
from metnos.turns.steps import HostTool
from metnos.undo_run import reversals


class TurnService:
    def __init__(self, settings: Settings, *, engine: Engine, registry: Registry,
                 audit: AuditLog, port: LLMPort | None, sandbox_ok: bool = True) -> None:
        self.settings = settings
        self.engine = engine
        self.registry = registry
        self.audit = audit
        self.port = port
        self.sandbox_ok = sandbox_ok
        # the model's live state and breaker, told of every call of the port
        self.model_health = ModelHealth(settings)
        if port is not None:
            port.observe(self.model_health.observe)
            port.gate(self.model_health.allows)
        self.guard = Guard(settings, engine)
        self.events = TurnEvents()  # each turn's progress, for the channels (SSE, typing...)
        self.record = TurnRecord(settings, engine=engine, audit=audit, events=self.events,
                                 registry=lambda: self.registry)
        self.checker = StepChecker(self)
        self.runner = StepRunner(self)
        # a manifest's `effect` → what the host carries out from the validated result (the
        # gateway registers "schedule_reminder": metnos.reminders.effect)
        self.effects: dict[str, Effect] = {}
        # a manifest's `account` → the host-only block of the run's envelope (its password
        # never in the arguments); AccountMissing when it is not configured
        self.accounts: dict[str, Callable[[Settings], dict[str, Any]]] = {
            "imap": lambda settings: load_account(settings).envelope()}  # metnos mail add
        # told of each step after it ran (the gateway registers the owner's notice of what
        # a family member had done: metnos.notify.members)
        self.watchers: list[Callable[[TurnContext, CheckedStep, StepOutcome],
                                     Awaitable[None]]] = []
        # how each kind of change is recorded before a step and undone (`metnos.reversal`,
        # chosen by the manifest), asked in this order whose action an undo is
        self.reversals: dict[str, Reversal] = reversals()
        # a manifest's `effect` → the undo of what it carried out (`metnos.reversal.Effects`;
        # the gateway registers the owner's scheduled tasks: metnos.schedules.effect)
        self.undoers: dict[str, Undoer] = {reminders.EFFECT: reminders.undoer(self)}
        # the Tutor's pre-check before the loop (SPEC §10; the runtime sets it): an answer
        # about Metnos itself from the docs catalog, or None
        self.precheck: Callable[[TurnService, TurnContext], Awaitable[str | None]] | None = None
        # Metnos's own tools, offered when a model plans (`turns.steps.HostTool`): the
        # `wish` tool (metnos.mnestoma.wish) and "undo that" (metnos.undo_tool)
        self.host_tools: dict[str, HostTool] = {
            tool.name: tool for tool in (wish.WishTool(), undo_tool.UndoTool())}
        self._tools: dict[tuple[str, int], list[ToolSpec]] = {}  # per language and generation

    def tools(self, ctx: TurnContext, lang: str | None = None) -> list[ToolSpec]:
        """The tools in the session's language (or `lang`); rebuilt when reviewed
        translations of their descriptions land in the i18n store (the registry is fixed)."""
        key = (lang or ctx.lang, i18n.generation())
        if key not in self._tools:
            self._tools = {k: v for k, v in self._tools.items() if k[1] == key[1]}
            self._tools[key] = self._specs(key[0])
        return self._tools[key]

    def _specs(self, lang: str) -> list[ToolSpec]:
        """The admitted executors (none may take a host tool's name) and, when a model plans,
        the host tools."""
        specs = [spec for spec in self.registry.tool_specs(lang)
                 if spec.name not in self.host_tools]
        if self.port is None:
            return specs
        return [*specs, *(tool.spec(self.registry, lang) for tool in self.host_tools.values())]

    def reload_registry(self) -> Registry:
        """Discover and admit the executors again (a synt candidate was signed or rejected)
        and forget the tools built from the old registry, so the next turn sees the change."""
        self.registry = load_registry(self.settings)
        self._tools = {}
        return self.registry

    def other_tools(self, ctx: TurnContext) -> dict[Lang, list[ToolSpec]]:
        """The same tools in each other active language (the embedded planner tries them)."""
        return {lang: self.tools(ctx, lang) for lang in self.settings.active_languages
                if lang != ctx.lang}

    # -- what the channels call (the turn's record does the work) ---------------------------
    async def open_turn(self, text: str, *, session_id: str | None, lang: Lang | None,
                        channel: str, sender: str,
                        untrusted: Sequence[tuple[str, str]] = (),
                        ask_all: bool = False) -> TurnContext:
        return await self.record.open_turn(text, session_id=session_id, lang=lang,
                                           channel=channel, sender=sender, untrusted=untrusted,
                                           ask_all=ask_all)

    async def wait_reply(self, turn_id: str, timeout_s: float) -> Published | None:
        return await self.record.wait_reply(turn_id, timeout_s)

    async def close_turn(self, ctx: TurnContext, reply: str, status: str,
                         error_key: str | None = None) -> None:
        await self.record.close_turn(ctx, reply, status, error_key)

    async def fail_turn(self, ctx: TurnContext, exc: BaseException) -> str:
        return await self.record.fail_turn(ctx, exc)


__all__ = ["CheckedStep", "Published", "TurnContext", "TurnService"]
