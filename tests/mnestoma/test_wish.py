"""Proto-mnests: the model's `wish` tool and an executor's `[wishes]`, counted per (from, want),
their texts short and free of personal data, due at the threshold exactly once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlmodel import select

from metnos.features.mnestoma import wish
from metnos.features.mnestoma.record import Memory
from metnos.ground import i18n, keys
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.ground.errors import ModelRetryError
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.signing import sign_executor, signature_path
from metnos.mechanisms.policy.secret_scan import SecretScanner
from metnos.testing.llm_server import ScriptedLLM
from tests.approvals.test_approval_flow import wait_status
from tests.mnestoma.test_record import mnestoma, turn
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.pdfs import image_only_pdf, text_pdf

TOKEN = "tok-3f9a8c7e1d2b4a6f"
NOISY = (f"mario.rossi@example.com asked; key {TOKEN}; call +39 347 123 4567 or 0612345678; "
         "see https://bank.example.com/a?b=1 and /home/mario/fatture/rossi_2026.pdf, "
         "fatture/2026/marzo/rossi.pdf, IBAN IT60X0542811101000000123456, "
         "C:\\Users\\mario\\x.pdf, ~/secret/notes.txt")
PROBE = """
[outputs.truncated]
type = "boolean"
description = { it = "Vero se il file è più lungo di quanto letto.", en = "True when longer." }

[wishes.ocr]
when = "truncated"
have = "pdf"
want = "text"
why.it = "Il PDF non ha testo: serve il riconoscimento."
why.en = "The PDF has no text: it needs recognition."
"""


def test_a_why_keeps_no_personal_data_and_is_short() -> None:
    scanner = SecretScanner([("owner_token", TOKEN)])
    kept = wish.scrub(NOISY, scanner.redact)
    for leak in ("mario", "rossi", "example", TOKEN, "347", "0612345678", "bank", "/home",
                 "2026", "123456", "Users", "secret", "notes.txt", "fatture"):
        assert leak not in kept, (leak, kept)
    assert len(kept) <= wish.KEPT_WHY
    assert "<email>" in kept and "[REDACTED]" in kept and "<url>" in kept
    assert wish.scrub("The scan has no text layer, so I could not read the total.") == \
        "The scan has no text layer, so I could not read the total."
    assert wish.scrub("x " * 150).endswith("…") and len(wish.scrub("x " * 150)) == 160


@pytest.mark.parametrize(("args", "field"), [
    ({"capability": "OCR!", "why": "x"}, "capability"),
    ({"capability": "o", "why": "x"}, "capability"),
    ({"capability": "a" * 41, "why": "x"}, "capability"),
    ({"capability": "ocr", "why": ""}, "why"),
    ({"capability": "ocr", "why": "x" * 201}, "why"),
    ({"capability": "ocr", "why": "x", "from_step": "1"}, "from_step"),
    ({"capability": "ocr", "why": "x", "from_step": True}, "from_step"),
    ({"capability": "ocr", "why": "x", "have": "spaceship"}, "have"),
    ({"capability": "ocr", "why": "x", "extra": 1}, "extra"),
])
def test_a_malformed_wish_names_its_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelRetryError) as caught:
        wish.parse(args, ["pdf", "text"], [])
    assert caught.value.key == wish.INVALID and caught.value.vars == {"field": field}


def test_the_source_is_the_step_it_names_when_that_step_ran() -> None:
    trace = [TurnStep(turn_id="t", seq=1, executor="pdf_probe", args_digest="",
                      decision="allow", outcome="done", think=1),
             TurnStep(turn_id="t", seq=2, executor="fs_write", args_digest="",
                      decision="deny", outcome="refused", think=1)]
    args = {"capability": "ocr", "why": "x", "have": "pdf", "want": "text"}
    assert wish.parse({**args, "from_step": 1}, ["pdf", "text"], trace)["src"] == "pdf_probe"
    assert wish.parse({**args, "from_step": 2}, ["pdf", "text"], trace)["src"] == ""
    assert wish.parse(args, ["pdf", "text"], trace)["src"] == ""


def install_probe(home: Home) -> None:
    """fs_read's code under another name, its manifest with kinds and a [wishes.ocr]."""
    repo = resources_path("executors", "fs_read")
    folder = home.path / "executors" / "pdf_probe"
    folder.mkdir(parents=True)
    manifest = (repo / "manifest.toml").read_text().replace('name = "fs_read"',
                                                            'name = "pdf_probe"')
    manifest = manifest.replace('access = "read"', 'access = "read"\nkind = "pdf"', 1)
    head, _, rest = manifest.partition("[outputs.truncated]")
    _, _, rest = rest.partition("\n[outputs.size]")
    (folder / "manifest.toml").write_text(head + "[outputs.size]" + rest + PROBE)
    (folder / "main.py").write_bytes((repo / "main.py").read_bytes())
    sign_executor(folder, keys.load_private_key(home.settings.keys_dir, "executors"),
                  signature_path(home.path / "signatures", "pdf_probe"))
    (home.workspace / "scan.pdf").write_text("%PDF-1.4 no text here")


def as_json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def audit_lines(home: Home) -> list[dict[str, Any]]:
    path = home.settings.audit_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_model_wishes_and_an_executor_wishes_due_once(
        make_home: MakeHome, scripted_llm: ScriptedLLM, lang: str) -> None:
    home = make_home(llm=scripted_llm, lang=lang, METNOS_EVOLUTION_PROTO_THRESHOLD="2")
    install_probe(home)
    read = {"path": "scan.pdf", "max_bytes": 4}
    scripted_llm.enqueue_tool_call("pdf_probe", read)
    scripted_llm.enqueue_tool_call("wish", {"capability": "OCR", "why": "no text"})
    scripted_llm.enqueue_tool_call("wish", {"capability": "ocr", "why": NOISY[:200],
                                            "from_step": 1, "have": "pdf", "want": "text"})
    scripted_llm.enqueue_text("The scan has no text I can read.")
    scripted_llm.enqueue_tool_call("pdf_probe", read)
    scripted_llm.enqueue_text("Still no text.")
    hooks: list[Memory] = []
    async with gateway_client(home, prefect=False) as client:
        client.app.state.gateway.service.record.remember.hooks.append(hooks.append)  # type: ignore[attr-defined]
        first = await turn(client, "read the scan")
        once = await mnestoma(client)
        await turn(client, "read the scan again")
        twice = await mnestoma(client)
        with db_session(client.app.state.gateway.service.engine) as db:  # type: ignore[attr-defined]
            rows = db.exec(select(TurnStep).where(TurnStep.turn_id == first["turn_id"])).all()
    assert [(s["executor"], s["decision"], s["outcome"]) for s in first["steps"]] == [
        ("pdf_probe", "allow", "done"), ("wish", "deny", "refused"),
        ("wish", "allow", "done")]
    assert [a["executor"] for a in first["activity"]] == ["pdf_probe"]  # wishes: not shown
    offered = {t["function"]["name"]: t["function"] for t in scripted_llm.requests[0]["tools"]}
    assert offered["wish"]["description"] == i18n.get("TOOL_WISH_DESCRIPTION", lang)
    assert {"pdf", "text"} <= set(offered["wish"]["parameters"]["properties"]["have"]["enum"])
    malformed, noted = [m for m in scripted_llm.requests[3]["messages"]
                        if m["role"] == "tool"][1:]
    assert as_json(i18n.get(wish.INVALID, lang, field="capability")) in malformed["content"]
    assert as_json(i18n.get("MSG_WISH_NOTED", lang, capability="ocr")) in noted["content"]

    [proto] = once["proto_mnests"]
    assert (proto["src"], proto["want"], proto["have_kind"], proto["want_kind"],
            proto["count"], proto["status"]) == ("pdf_probe", "ocr", "pdf", "text", 2, "open")
    assert proto["source"] == "executor"  # the manifest's need came first, in its words
    assert proto["why"] == {"it": "Il PDF non ha testo: serve il riconoscimento.",
                            "en": "The PDF has no text: it needs recognition."}[lang]
    assert twice["proto_mnests"][0]["count"] == 3
    assert [len(m.due) for m in hooks] == [1, 0]  # reached 2 in the first turn, never again
    [due] = hooks[0].due
    assert (due.src, due.want, due.count) == ("pdf_probe", "ocr", 2)

    lines = [x for x in audit_lines(home) if x["action"] == "wish"]
    assert [(x["decision"], x["outcome"]) for x in lines] == [("deny", "refused"),
                                                              ("allow", "done")]
    [stored] = [r for r in rows if r.executor == "wish" and r.outcome == "done"]
    assert stored.result is not None and stored.result["src"] == "pdf_probe"
    assert stored.result["why"] == wish.scrub(NOISY[:200])
    for leak in ("mario", "rossi", "347", "bank.example", "fatture"):
        assert leak not in stored.result["why"]


async def test_pdf_ext_on_an_image_only_scan_wants_ocr(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    image_only_pdf(home.workspace / "scansione.pdf")
    text_pdf(home.workspace / "fattura.pdf", ["Totale 12,00 EUR"])
    for name in ("scansione.pdf", "fattura.pdf"):
        scripted_llm.enqueue_tool_call("pdf_ext", {"path": name})
    scripted_llm.enqueue_text("Una delle due non ha testo.")
    async with gateway_client(home, prefect=False) as client:
        closed = await turn(client, "leggi le due fatture")
        view = await mnestoma(client)
    assert [(s["executor"], s["outcome"]) for s in closed["steps"]] == [
        ("pdf_ext", "done"), ("pdf_ext", "done")]
    [proto] = view["proto_mnests"]  # the text PDF wanted nothing
    assert (proto["src"], proto["want"], proto["have_kind"], proto["want_kind"],
            proto["source"], proto["count"]) == ("pdf_ext", "ocr", "pdf_image", "text",
                                                 "executor", 1)
    assert proto["why"] == "il PDF non ha uno strato di testo: solo un OCR potrebbe leggerlo"


async def test_an_earlier_wish_does_not_taint_the_next_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Full")
    scripted_llm.enqueue_tool_call("wish", {"capability": "ocr", "why": "a scan"})
    scripted_llm.enqueue_text("I cannot read scans yet.")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "note.md", "content": "scan"})
    scripted_llm.enqueue_text("Noted in note.md.")
    async with gateway_client(home, prefect=False) as client:
        first = (await client.post("/api/turns", json={"text": "read my scan"})).json()
        await wait_status(client, first["turn_id"], "completed")
        second = (await client.post("/api/turns", json={
            "text": "then write it down", "session_id": first["session_id"]})).json()
    assert second["status"] == "completed", second
    assert (home.workspace / "note.md").read_text() == "scan"
