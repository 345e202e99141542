"""What a turn needs, in one place, and the parts that do the work (SPEC §2).

`TurnService` is the instance's runtime (`turns/runtime.py`: settings, database, executor
registry, audit log, LLM port, the guard of the Laws, the event bus, the turn's record) with
the hooks the features registered and the parts a turn is made of, each findable by name:

- `record` (`turns/record.py`): the turn's row, step trace, audit lines, what channels see;
- `checker` (`turns/checker.py`): the policy for one step;
- `runner` (`turns/runner.py`): one admitted step in the sandbox;
- one step from check to record (`turns/steps.py`), with the host tools (`hooks.host_tools`) and
  the reversals (`hooks.reversals`, `metnos.features.reversal`) it dispatches to, both registered by
  the features (`hooks`);
- the conversation the model sees (`turns/conversation.py`, `turns/history.py`), one model
  call (`turns/thinking.py`) and the agent loop (`turns/loop.py`), composed by
  `turns/pipeline.py` and, with Prefect tasks, by `flows/turn.py`.

Nothing here imports prefect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from metnos.ground import i18n
from metnos.ground.system_lang import Lang
from metnos.mechanisms.llm.tools import PlanStep, ToolSpec
from metnos.turns import steps
from metnos.turns.checker import StepChecker
from metnos.turns.context import CheckedStep, Published, TurnContext
from metnos.turns.reply import StepOutcome
from metnos.turns.runner import StepRunner
from metnos.turns.runtime import (
    Hooks,
    Runtime,
)
from metnos.turns.steps import Finished, Steps


@dataclass(frozen=True, eq=False)
class TurnService(Runtime):
    """The runtime with the hooks the features registered and the parts built over it:
    made once, by `metnos.faces.wiring.build_runtime`. A function that needs only the runtime's
    parts takes a `Runtime` (a `TurnService` is one)."""

    hooks: Hooks = field(default_factory=Hooks)
    checker: StepChecker = field(init=False, repr=False, compare=False)
    runner: StepRunner = field(init=False, repr=False, compare=False)
    # the tools per language, i18n generation and registry generation
    _tools: dict[tuple[str, int, int], list[ToolSpec]] = field(
        init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        checker = StepChecker(self, self.hooks)
        object.__setattr__(self, "checker", checker)
        object.__setattr__(self, "runner", StepRunner(self, self.hooks, checker))

    @classmethod
    def over(cls, runtime: Runtime, hooks: Hooks) -> TurnService:
        """`runtime`'s parts with `hooks`."""
        parts = {f.name: getattr(runtime, f.name) for f in fields(Runtime)}
        return cls(**parts, hooks=hooks)

    def tools(self, ctx: TurnContext, lang: str | None = None) -> list[ToolSpec]:
        """The tools in the session's language (or `lang`); rebuilt when reviewed
        translations of their descriptions land in the i18n store (the registry is fixed)."""
        key = (lang or ctx.lang, i18n.generation(), self.executors.generation)
        if key not in self._tools:
            for old in [k for k in self._tools if k[1:] != key[1:]]:
                del self._tools[old]
            self._tools[key] = self._specs(key[0])
        return self._tools[key]

    def _specs(self, lang: str) -> list[ToolSpec]:
        """The admitted executors (none may take a host tool's name) and, when a model plans,
        the host tools."""
        specs = [spec for spec in self.registry.tool_specs(lang)
                 if spec.name not in self.hooks.host_tools]
        if self.port is None:
            return specs
        host = self.hooks.host_tools.values()
        return [*specs, *(tool.spec(self.registry, lang) for tool in host)]

    def other_tools(self, ctx: TurnContext) -> dict[Lang, list[ToolSpec]]:
        """The same tools in each other active language (the embedded planner tries them)."""
        return {lang: self.tools(ctx, lang) for lang in self.settings.active_languages
                if lang != ctx.lang}

    async def one(self, ctx: TurnContext, step: PlanStep, how: Steps, *, seq: int,
                  think: int = 0, seen: Sequence[int] = (),
                  recorded_in: TurnContext | None = None
                  ) -> tuple[CheckedStep, StepOutcome, Finished]:
        """A whole step of a turn a feature runs itself (`steps.OwnTurn`: the digest)."""
        return await steps.one(self, ctx, step, how, seq=seq, think=think, seen=seen,
                               recorded_in=recorded_in)

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
