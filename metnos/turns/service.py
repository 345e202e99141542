"""What a turn needs, in one place, and the parts that do the work (SPEC §2).

`TurnService` holds the instance's runtime (settings, database, executor registry, audit
log, LLM port, the guard of the Laws, the event bus) and the parts a turn is made of, each
findable by name:

- `record` (`turns/record.py`): the turn's row, step trace, audit lines, what channels see;
- `checker` (`turns/checker.py`): the policy for one step;
- `runner` (`turns/runner.py`): one admitted step in the sandbox;
- the conversation the model sees (`turns/conversation.py`, `turns/history.py`), one model
  call (`turns/thinking.py`) and the agent loop (`turns/loop.py`), composed by
  `turns/pipeline.py` and, with Prefect tasks, by `flows/turn.py`.

Nothing here imports prefect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.engine import Engine

from metnos import i18n, undo_tool
from metnos.audit import AuditLog
from metnos.executors.registry import Registry
from metnos.llm.health import ModelHealth
from metnos.llm.port import LLMPort
from metnos.llm.tools import ToolSpec
from metnos.mnestoma import wish
from metnos.settings import Settings
from metnos.turns.checker import StepChecker
from metnos.turns.context import CheckedStep, Published, TurnContext
from metnos.turns.events import TurnEvents
from metnos.turns.guard import Guard
from metnos.turns.record import TurnRecord
from metnos.turns.runner import StepRunner
from metnos.turns.runtime import Effect, Hooks, Precheck, Runtime, Undoer, Watcher


class TurnService:
    """The turn's parts over one runtime and the hooks the features registered (both
    frozen): made once, by `metnos.wiring.build_runtime`."""

    def __init__(self, runtime: Runtime, hooks: Hooks | None = None) -> None:
        self.runtime = runtime
        self.hooks = hooks or Hooks()
        self.checker = StepChecker(runtime)
        self.runner = StepRunner(runtime, self.hooks, self.checker)
        self._tools: dict[tuple[str, int, int], list[ToolSpec]] = {}  # per language, generation

    # -- the runtime's parts, by name ------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def engine(self) -> Engine:
        return self.runtime.engine

    @property
    def registry(self) -> Registry:
        return self.runtime.registry

    @property
    def audit(self) -> AuditLog:
        return self.runtime.audit

    @property
    def port(self) -> LLMPort | None:
        return self.runtime.port

    @property
    def sandbox_ok(self) -> bool:
        return self.runtime.sandbox_ok

    @property
    def model_health(self) -> ModelHealth:
        return self.runtime.model_health

    @property
    def guard(self) -> Guard:
        return self.runtime.guard

    @property
    def events(self) -> TurnEvents:
        return self.runtime.events

    @property
    def record(self) -> TurnRecord:
        return self.runtime.record

    @property
    def effects(self) -> Mapping[str, Effect]:
        return self.hooks.effects

    @property
    def watchers(self) -> Sequence[Watcher]:
        return self.hooks.watchers

    @property
    def undoers(self) -> Sequence[Undoer]:
        return self.hooks.undoers

    @property
    def precheck(self) -> Precheck | None:
        return self.hooks.precheck

    def tools(self, ctx: TurnContext, lang: str | None = None) -> list[ToolSpec]:
        """The tools in the session's language (or `lang`); rebuilt when reviewed
        translations of their descriptions land in the i18n store (the registry is fixed)."""
        key = (lang or ctx.lang, i18n.generation(), self.runtime.executors.generation)
        if key not in self._tools:
            self._tools = {k: v for k, v in self._tools.items() if k[1:] == key[1:]}
            self._tools[key] = self._specs(key[0])
        return self._tools[key]

    def _specs(self, lang: str) -> list[ToolSpec]:
        """The admitted executors (none may take a built-in tool's name) and, when a model
        plans, the `wish` tool (metnos.mnestoma.wish) and `undo_last` (metnos.undo_tool)."""
        builtin = (wish.TOOL, undo_tool.TOOL)
        specs = [spec for spec in self.registry.tool_specs(lang) if spec.name not in builtin]
        if self.port is None:
            return specs
        return [*specs, wish.tool_spec(self.registry, lang), undo_tool.tool_spec(lang)]

    def reload_registry(self) -> Registry:
        """Discover and admit the executors again (a synt candidate was signed or rejected)
        and forget the tools built from the old registry, so the next turn sees the change."""
        return self.runtime.executors.reload(self.settings)

    def other_tools(self, ctx: TurnContext) -> dict[str, list[ToolSpec]]:
        """The same tools in each other active language (the embedded planner tries them)."""
        return {lang: self.tools(ctx, lang) for lang in self.settings.active_languages
                if lang != ctx.lang}

    # -- what the channels call (the turn's record does the work) ---------------------------
    async def open_turn(self, text: str, *, session_id: str | None, lang: str | None,
                        channel: str, sender: str,
                        untrusted: Sequence[tuple[str, str]] = (),
                        accept_language: str | None = None,
                        ask_all: bool = False) -> TurnContext:
        return await self.record.open_turn(text, session_id=session_id, lang=lang,
                                           channel=channel, sender=sender, untrusted=untrusted,
                                           accept_language=accept_language, ask_all=ask_all)

    async def wait_reply(self, turn_id: str, timeout_s: float) -> Published | None:
        return await self.record.wait_reply(turn_id, timeout_s)

    async def close_turn(self, ctx: TurnContext, reply: str, status: str,
                         error_key: str | None = None) -> None:
        await self.record.close_turn(ctx, reply, status, error_key)

    async def fail_turn(self, ctx: TurnContext, exc: BaseException) -> str:
        return await self.record.fail_turn(ctx, exc)


__all__ = ["CheckedStep", "Published", "TurnContext", "TurnService"]
