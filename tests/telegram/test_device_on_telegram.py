"""A device on the overlay asks for access, and the owner approves it from Telegram (issue 30).

The gateway app runs in-process with its Telegram channel on the fake Bot API; the device's
requests arrive at the exposed address from the device's own (the ASGI scope's server and
client), as they do over the overlay. The owner's chat is told of the request (the device's
name is outside text: escaped, never markup) with a Drop button; `/pair CODE` there admits
the device, which then speaks as a family member.
"""

from __future__ import annotations

import html

import httpx
import pytest

from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import Home, MakeHome
from tests.telegram.support import buttons, telegram_gateway, until

OWNER = 7101
SERVER, PHONE, PORT = "100.64.77.1", "100.64.77.2", 42618
LABEL = "<b>Anna</b>'s phone"


@pytest.fixture
def home(make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> Home:
    return make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_EXPOSE=SERVER)


def notices(tg: FakeTelegram) -> list[str]:
    """The owner's messages with a Drop button (a pairing request told), as sent."""
    return [str(c.params.get("text", "")) for c in tg.calls_of("sendMessage", OWNER)
            if any(str(b.get("callback_data", "")).startswith("pd:") for b in buttons(c))]


async def test_the_owner_hears_of_a_device_and_admits_it_with_pair(
        home: Home, telegram: FakeTelegram) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER, prefect=False) as (client, _ch):
        overlay = f"http://{SERVER}:{PORT}"
        transport = httpx.ASGITransport(app=client.app,  # type: ignore[attr-defined]
                                        client=(PHONE, 50123))
        async with httpx.AsyncClient(transport=transport, base_url=overlay,
                                     headers={"Origin": overlay}) as phone:
            assert (await phone.get("/api/sessions")).status_code == 401
            asked = await phone.post("/device/ask", json={"label": LABEL})
            assert asked.status_code == 200, asked.text
            code = asked.json()["code"]
            await until(tg, lambda t: bool(notices(t)), "the owner told of the device")
            [told] = notices(tg)
            assert "&lt;b&gt;Anna&lt;/b&gt;" in told and "<b>Anna</b>" not in told
            assert PHONE in told and code not in told  # only the device shows its code

            before = len(tg.sent_texts(OWNER))
            tg.push_message(OWNER, f"/pair {code}", language_code="en")
            await until(tg, lambda t: len(t.sent_texts(OWNER)) > before, "the approval")
            said = html.unescape(tg.sent_texts(OWNER)[-1])
            assert "device:" in said and "member" in said, said
            assert (await phone.get("/device/state")).json() == {"state": "admitted"}
            assert (await phone.get("/api/sessions")).status_code == 200
            assert (await phone.get("/api/pairing")).status_code == 403
