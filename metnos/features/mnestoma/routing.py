"""Routing by traces: which tools reach the model's tool list (SPEC §7.4, arch §10).

While the admitted pool is small (not larger than `[evolution] route_above`, 12) the model
sees every tool but the archived ones. Above it, the model sees the **core** (`route_core`
and the built-in `wish`), the executors **relevant** to the message (the seeds) and every
member of the seeds' traces; quarantined and archived executors are left out.

Relevance is code, language-aware, with no model. For each tool, in the turn's language:
the embedded planner's hassil match of the whole message
(`metnos.mechanisms.llm.embedded.understand`) counts `MATCH`; each content word of the message (the
language's stop words dropped, as the household data says) counts `AFFINITY` when it is one of the
tool's affinity words and `DESCRIPTION` when it is in its description; a word that shares a stem
with one counts one less (`_stems`: a common start of ≥ 4 letters, each word at most 3 letters
longer: "fatture" ~ "fattura", "invoices" ~ "invoice"). The seeds are the (at most `SEEDS`) best
tools scoring at least `MIN_SCORE` and at least a third of the best score (`RELATIVE`: one generic
word shared with a message another tool matches word for word is not enough; on the scripted
month a half lost the second habit of ambiguous requests, "annota ..." → lists, not the
notes' fs_write). An executor with no trace yet is a trace of its own.

When nothing is relevant, the core and the heaviest trace are offered: the household's most
used habit is the likeliest next need, and the list stays short. The order of the offered
tools is the pool's, so the prompt of one routed set is always the same.

`RouteBook` reads what routing needs from the database once per turn (the newest trace
generation and the executors' states; the traces themselves only when a new generation
landed) and keeps the turn's routed list, so later model calls of the same turn cost no
query and no scoring.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.features.mnestoma.models import ExecutorUse, Trace
from metnos.features.mnestoma.traces import current
from metnos.ground.db.engine import in_session
from metnos.ground.settings.evolution import EvolutionSettings
from metnos.mechanisms.llm import embedded, household
from metnos.mechanisms.llm.tools import ToolSpec
from metnos.turns.context import TurnContext

WISH = "wish"  # the built-in tool of proto-mnests (metnos.features.mnestoma.wish): always offered
ALWAYS = frozenset({WISH, "undo_last"})  # and "undo that" (metnos.turns.undo_tool): always offered
MATCH, AFFINITY, DESCRIPTION = 6, 3, 1  # scores (a stem match counts one less)
MIN_SCORE = 3  # one affinity word, or a hassil match, or three description words
SEEDS = 3  # the most relevant tools whose traces are offered
RELATIVE = 3  # a seed scores at least 1/RELATIVE of the best
_MIN_STEM, _MAX_TAIL = 4, 3


def route(tools: Sequence[ToolSpec], text: str, lang: str, *, traces: Sequence[Trace],
          states: Mapping[str, str], settings: EvolutionSettings) -> list[ToolSpec]:
    """The tools to offer the model for `text` (see the module)."""
    pool = [t for t in tools if t.name not in ALWAYS]
    if len(pool) <= settings.route_above:
        return [t for t in tools if states.get(t.name) != "archived"]
    by_trace = {name: trace.members for trace in traces for name in trace.members}
    seeds = relevant(pool, text, lang)
    chosen = {*ALWAYS, *settings.route_core}
    if seeds:
        for name in seeds:
            chosen.update(by_trace.get(name, [name]))
    elif traces:
        chosen.update(max(traces, key=lambda t: (t.weight, -len(t.members))).members)
    return [t for t in tools if t.name in chosen
            and states.get(t.name) not in ("quarantined", "archived")]


def relevant(tools: Sequence[ToolSpec], text: str, lang: str) -> list[str]:
    """The names of the (at most `SEEDS`) tools most relevant to `text`, the best first."""
    words = household.content_words(text, lang)
    found = embedded.understand(text, lang, tools)
    scored: list[tuple[int, int, str]] = []
    for index, tool in enumerate(tools):
        affinity, described = _words(tool.affinity, tool.description, lang)
        score = MATCH if found.intent == tool.name else 0
        for word in words:
            score += _hit(word, affinity, AFFINITY) or _hit(word, described, DESCRIPTION)
        if score >= MIN_SCORE:
            scored.append((-score, index, tool.name))
    scored.sort()
    return [name for score, _, name in scored[:SEEDS] if RELATIVE * score <= scored[0][0]]


def _hit(word: str, words: frozenset[str], full: int) -> int:
    if word in words:
        return full
    return full - 1 if any(_stems(word, other) for other in words) else 0


def _stems(a: str, b: str) -> bool:
    """Two forms of one word: a common start of ≥ 4 letters, each at most 3 letters more."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n >= _MIN_STEM and len(a) - n <= _MAX_TAIL and len(b) - n <= _MAX_TAIL


@lru_cache(maxsize=4096)
def _words(affinity: tuple[str, ...], description: str,
           lang: str) -> tuple[frozenset[str], frozenset[str]]:
    return (frozenset(household.words_of(" ".join(affinity))),
            household.content_words(description, lang))


@dataclass
class RouteBook:
    """What routing reads from the database, once per turn (see the module)."""

    engine: Engine
    queries: int = 0  # how many it ran, for the bench and the tests
    _turn: str | None = None
    _generation: int | None = None
    _traces: list[Trace] = field(default_factory=list)
    _states: dict[str, str] = field(default_factory=dict)
    _offered: tuple[str, int, list[ToolSpec]] | None = None  # turn, id of its tools, routed
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def view(self, turn_id: str) -> tuple[list[Trace], dict[str, str]]:
        """The current traces and the executors' states that are not "active"."""
        with self._lock:
            if turn_id != self._turn:
                self._refresh()
                self._turn = turn_id
            return self._traces, self._states

    def routed(self, turn_id: str, tools: list[ToolSpec],
               choose: Callable[[list[Trace], dict[str, str]], list[ToolSpec]]) -> list[ToolSpec]:
        """`choose(traces, states)` once per turn (and per list of tools), then kept."""
        memo = self._offered
        if memo is not None and memo[0] == turn_id and memo[1] == id(tools):
            return memo[2]
        traces, states = self.view(turn_id)
        offered = choose(traces, states)
        self._offered = (turn_id, id(tools), offered)
        return offered

    def _refresh(self) -> None:
        with self.engine.connect() as conn:
            generation = conn.execute(select(func.max(col(Trace.generation)))).scalar()
            self._states = dict(conn.execute(
                select(col(ExecutorUse.name), col(ExecutorUse.state))
                .where(col(ExecutorUse.state) != "active")).all())
        self.queries += 2
        if generation != self._generation:
            self._traces = in_session(self.engine, current) if generation is not None else []
            self._generation = generation
            self.queries += 1


@dataclass
class Router:
    """The turn's `route` hook (`metnos.turns.runtime.Router`, registered by
    `metnos.faces.wiring`): the tools the traces let reach the model, read once per turn
    (`book`)."""

    book: RouteBook
    settings: EvolutionSettings

    def __call__(self, ctx: TurnContext, tools: list[ToolSpec]) -> list[ToolSpec]:
        return self.book.routed(ctx.turn_id, tools, lambda traces, states: route(
            tools, ctx.text, ctx.lang, traces=traces, states=states, settings=self.settings))
