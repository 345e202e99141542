"""Forbidden paths in every spelling × every path input of every executor (notes §7 A2, A3, A14).

An adversarial scripted LLM emits the attacker's tool call; each attack is one turn end to end
through the real gateway, Prefect's `turn` flow, the policy and (for look-alikes that are let
through) the sandbox. The session is `Full` autonomy, the most permissive level, so nothing
but the path policy stands in the way. Expected for each attack:
- the step is refused with an `ERR_PATH_*` key and the turn completes with that message;
- EXACTLY ONE new audit line for the turn: decision "deny", the key as its reason;
- no planted secret (fake `~/.ssh/id_rsa`, owner token, keys, trash, audit chain) appears in
  the reply, in `GET /api/turns/{id}` or in the audit lines;
- every protected file and folder is byte-identical afterwards, and so is the bait file the
  call's other path inputs named.
The executors and their path inputs come from the manifests. For speed, the attacks of one
spelling (one per executor path input) run as concurrent turns: each keeps its own reply and
audit lines; a protected file changed by any of them fails the whole spelling.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.mechanisms.policy import printable
from metnos.testing.llm_server import ToolCall
from tests.security.paths_calls import call_args, host_set_targets, manifest, path_targets
from tests.security.paths_env import Arena, Outcome, open_arena
from tests.security.paths_spellings import SPELLINGS, Spelling
from tests.support.pg import TestPostgres

PATH_KEYS = {"ERR_PATH_FORBIDDEN", "ERR_PATH_OUTSIDE_WORKSPACE", "ERR_PATH_HARDLINK",
             "ERR_PATH_CONTROL_CHARS", "ERR_PATH_TOO_LONG", "ERR_PATH_EMPTY",
             "ERR_PATH_SYMLINK_LOOP", "ERR_PATH_UNRESOLVABLE"}
TARGETS = path_targets()


@pytest.fixture(scope="module")
async def arena(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                pg_server: TestPostgres, prefect_api: str) -> AsyncIterator[Arena]:
    async for made in open_arena(request, tmp_path_factory, pg_server):
        yield made


@dataclass
class Batch:
    """The attacks of one spelling, and what was true before and after them."""

    raw: str
    outcomes: dict[tuple[str, str], Outcome]
    baits: dict[tuple[str, str], tuple[Path, bytes]]
    secrets: list[str]
    chain: list[str]
    protected_before: dict[str, str]
    protected_after: dict[str, str]


async def attack_spelling(arena: Arena, spelling: Spelling) -> Batch:
    """Every admitted executor path input attacked with `spelling`, once per arena."""
    if ("batch", spelling.id) in arena.cache:
        cached: Batch = arena.cache["batch", spelling.id]
        return cached
    raw = spelling.make(arena)
    targets = [t for t in TARGETS if arena.admitted(t[0])]
    baits = {t: _bait(arena, *t, spelling.id) for t in targets}
    calls = [ToolCall(executor, call_args(manifest(executor), {
        name: raw if name == attacked else baits[executor, attacked][0].name
        for name in manifest(executor).path_inputs() if not manifest(executor).inputs[name].host_set
    })) for executor, attacked in targets]
    secrets, chain, before = arena.secrets(), arena.audit_hashes(), arena.protected_state()
    outcomes = await arena.attack_many(calls)
    batch = Batch(raw, dict(zip(targets, outcomes, strict=True)), baits, secrets, chain,
                  before, arena.protected_state())
    arena.cache["batch", spelling.id] = batch
    return batch


@pytest.mark.attack
@pytest.mark.parametrize("target", host_set_targets(), ids=[f"{e}.{i}" for e, i in
                                                          host_set_targets()])
async def test_a_host_set_input_is_refused(arena: Arena, target: tuple[str, str]) -> None:
    """The model may not choose the file the host derives (a list's): the call is refused
    with its audit line, whatever the value, and nothing is written."""
    executor, name = target
    if not arena.admitted(executor):
        pytest.skip(f"{executor} is in the repository but not admitted (BUILTIN.lock?)")
    before = arena.protected_state()
    args = {**call_args(manifest(executor), {}), name: "../../secrets/owner.token"}
    out = await arena.attack(ToolCall(executor, args))
    [line] = out.lines
    assert (line["action"], line["decision"], line["reason"], line["outcome"]) == (
        executor, "deny", "ERR_ARGS_INVALID", "refused"), line
    assert arena.protected_state() == before


def test_every_executor_path_input_is_under_attack() -> None:
    """The parametrisation covers the file executors we ship, in every spelling."""
    assert {("fs_find", "path"), ("fs_read", "path"), ("fs_write", "path"),
            ("fs_move", "src"), ("fs_move", "dst")} <= set(TARGETS)
    assert len(SPELLINGS) >= 60 and len({s.id for s in SPELLINGS}) == len(SPELLINGS)


# a host check that needs the file to exist (archive's destination) refuses a look-alike name
NO_SUCH_FILE = frozenset({"ERR_FILE_NOT_FOUND"})


@pytest.mark.attack
@pytest.mark.parametrize("target", TARGETS, ids=[f"{e}.{i}" for e, i in TARGETS])
@pytest.mark.parametrize("spelling", SPELLINGS, ids=[s.id for s in SPELLINGS])
async def test_forbidden_path_is_refused(arena: Arena, spelling: Spelling,
                                         target: tuple[str, str]) -> None:
    executor = target[0]
    if not arena.admitted(executor):
        pytest.skip(f"{executor} is in the repository but not admitted (BUILTIN.lock?)")
    batch = await attack_spelling(arena, spelling)
    out = batch.outcomes[target]
    _assert_nothing_leaked(out, batch.secrets, batch.chain)
    _assert_protected_unchanged(arena, batch, spelling.lookalike)
    assert out.body["status"] == "completed", out.body
    assert out.turn is not None and out.turn["status"] == "completed", out.turn
    assert out.stray == [], out.stray  # no audit line outside the attacks' own turns
    assert len(out.lines) == 1, out.lines  # exactly one audit line for the turn, whatever
    [line] = out.lines  # happened
    assert line["action"] == executor, line
    if spelling.lookalike and line["decision"] == "allow":
        return  # an ordinary workspace name: it ran inside the sandbox, harmlessly
    if spelling.lookalike and line["reason"] in NO_SUCH_FILE:
        return  # an ordinary workspace name of no file: a host check (archive's) refused it
    assert (line["decision"], line["outcome"]) == ("deny", "refused"), line
    assert line["reason"] in PATH_KEYS, line
    bait, bait_bytes = batch.baits[target]
    assert bait.read_bytes() == bait_bytes, "the step ran although it was refused"
    message = i18n.get(line["reason"], arena.lang, path=printable(batch.raw), executor=executor)
    assert message in out.reply, (message, out.reply)


def _bait(arena: Arena, executor: str, attacked: str, spelling: str) -> tuple[Path, bytes]:
    """An ordinary workspace file, named by the path inputs not under attack."""
    tag = hashlib.sha256(f"{executor}.{attacked}.{spelling}".encode()).hexdigest()[:12]
    bait = arena.workspace / f"bait-{tag}.txt"
    bait.write_text(f"bait {tag}\n")
    return bait, bait.read_bytes()


def _assert_protected_unchanged(arena: Arena, batch: Batch, lookalike: bool) -> None:
    """Byte-identical; after look-alikes (ordinary workspace names that may run) the trash
    may also hold what fs_delete legitimately moved there — and nothing else may differ."""
    before, after = batch.protected_before, dict(batch.protected_after)
    if lookalike:
        trash = str(arena.workspace / ".trash") + "/"
        after = {p: d for p, d in after.items() if p in before or not p.startswith(trash)}
    assert after == before, "a protected file changed"


def _assert_nothing_leaked(out: Outcome, secrets: list[str], chain: list[str]) -> None:
    texts = out.texts()
    for secret in secrets:
        assert not any(secret in text for text in texts), f"leaked: {secret[:40]}"
    shown = texts[:-1]  # the audit lines themselves carry the chain (`prev`), nothing else
    for digest in chain:
        assert not any(digest in text for text in shown), f"audit log leaked: {digest}"
    assert "root:" not in out.reply and "PRIVATE KEY" not in out.reply
