"""The channel's configuration and its clean stop (nothing left running, session closed)."""

from __future__ import annotations

import asyncio

import pytest

from metnos.faces.channels.telegram import load_config
from metnos.ground.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import MakeHome
from tests.telegram.support import buttons, telegram_gateway, until

ANNA = 7001


def test_token_from_env_else_a_private_file(make_home: MakeHome,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    home = make_home()
    monkeypatch.delenv("METNOS_TELEGRAM_BOT_TOKEN", raising=False)
    assert load_config(home.settings) is None  # no token: the channel stays off
    token_file = home.settings.secrets_dir / "telegram.token"
    token_file.write_text("111:from-file\n")
    token_file.chmod(0o644)
    assert load_config(home.settings) is None  # readable by others: refused
    token_file.chmod(0o600)
    config = load_config(home.settings)
    assert config is not None and config.token == "111:from-file"
    assert config.api_base == "https://api.telegram.org" and "from-file" not in repr(config)
    monkeypatch.setenv("METNOS_TELEGRAM_BOT_TOKEN", "222:from-env")
    monkeypatch.setenv("METNOS_TELEGRAM_API_BASE", "http://127.0.0.1:9/")
    monkeypatch.setenv("METNOS_TELEGRAM_POLL_TIMEOUT_S", "3")
    get_settings.cache_clear()
    config = load_config(get_settings())
    assert config is not None
    assert (config.token, config.api_base, config.poll_timeout_s) == (
        "222:from-env", "http://127.0.0.1:9", 3)


def _ours() -> list[asyncio.Task[object]]:
    found = []
    for task in asyncio.all_tasks():
        module = getattr(task.get_coro(), "cr_frame", None)
        name = module.f_globals.get("__name__", "") if module is not None else ""
        if name.startswith(("aiogram", "metnos.faces.channels")) and not task.done():
            found.append(task)
    return found


async def test_stop_while_a_turn_waits_leaves_nothing_running(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    # the test loop is the session's: a channel an earlier failed test left behind is not ours
    before = set(_ours())
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, channel):
        scripted_llm.enqueue_tool_call("fs_write", {"path": "n.txt", "content": "x"})
        scripted_llm.enqueue_text("Not written.")
        telegram.push_message(ANNA, "write n.txt", language_code="en")
        await until(telegram, lambda t: any(buttons(c) for c in t.calls_of("sendMessage")),
                    "the card")
        assert set(_ours()) - before  # the poller and the turn's watcher
        async with asyncio.timeout(60):  # stop() must not wait for the paused turn (forever)
            await channel.stop(drain_s=0.2)
        assert set(_ours()) - before == set()
        assert channel.bot.session._session is None or channel.bot.session._session.closed
        pending = (await client.get("/api/approvals")).json()["approvals"]
        await client.post(f"/api/approvals/{pending[0]['approval_id']}",
                          json={"decision": "deny"})  # let the paused turn end
