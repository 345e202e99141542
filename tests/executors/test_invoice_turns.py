"""The invoice chain through a turn (no model: the embedded planner reads the sentence):
archive gets its destination from the host check, and the Undo puts the file back."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client
from tests.support.pdfs import text_pdf


async def test_archive_through_a_turn_and_its_undo(make_home: MakeHome) -> None:
    home = make_home(lang="it", METNOS_TIMEZONE="UTC")
    ws = home.workspace
    pdf = text_pdf(ws / "posta" / "fattura.pdf", ["Fattura luce"])
    stamp = datetime(2024, 3, 5, 12, tzinfo=UTC).timestamp()
    os.utime(pdf, (stamp, stamp))
    (ws / "archive/2024/fatture").mkdir(parents=True)
    (ws / "archive/2024/fatture/fattura.pdf").write_bytes(b"%PDF- an older one")
    async with gateway_client(home, prefect=False) as client:
        text = "archivia posta/fattura.pdf in fatture"
        resp = await client.post("/api/turns", json={"text": text})
        assert resp.status_code == 200, resp.text
        turn = await wait_closed(client, resp.json()["turn_id"])
        [item] = [a for a in turn["activity"] if a["executor"] == "archive"]
        assert item["status"] == "done" and item["undo"], turn
        assert "archive/2024/fatture/fattura-2.pdf" in turn["reply"], turn["reply"]
        assert (ws / "archive/2024/fatture/fattura-2.pdf").is_file()
        assert not pdf.exists()
        assert (ws / "archive/2024/fatture/fattura.pdf").read_bytes() == b"%PDF- an older one"
        undone = await client.post(f"/api/actions/{item['action_id']}/undo")
        assert undone.status_code == 200, undone.text
        assert undone.json()["outcome"] == "done", undone.json()
        assert pdf.is_file()
        assert not (ws / "archive/2024/fatture/fattura-2.pdf").exists()
        assert (ws / "archive/2024/fatture/fattura.pdf").read_bytes() == b"%PDF- an older one"
