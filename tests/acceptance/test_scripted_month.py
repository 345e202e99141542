"""The scripted month (issue 13, acceptance point 1): ~500 turns of a household replayed
through the real loop — `run_pipeline` on the gateway's own service (policy, sandbox,
database), Autonomy "Full", the approvals the policy still asks (Law 3 after a read, an
irreversible shell command) answered by the owner over HTTP — with the scripted model, one
script per turn (`metnos.testing.month`).

Then what the month left: the "fatture" trace of the seed (fs_read → pdf_ext → archive →
notify) as one community of `traces.detect`, the photos' executors in another; the five
image-only invoices as one proto-mnest (pdf_ext, ocr); the synt finds no composition and
proposes to generate; the owner accepts (through the Vaglio and the delivered proposal), the
scripted model writes `ocr_image` (its "OCR" reads the text an image-only fixture hides in
its /Title: no real OCR exists here), whose own tests ran in the sandbox; the candidate is
inactive — a turn cannot call it — until the owner signs it; then the next image-only
invoice's turn calls it and it runs in the sandbox.
"""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import col, select

from metnos.features.mnestoma import traces
from metnos.features.mnestoma.models import Mnest, ProtoMnest, Trace, UseClock
from metnos.features.proposals import delivery, vaglio
from metnos.features.proposals.models import Proposal
from metnos.features.synt import cascade
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.mechanisms.executors.registry import CANDIDATE_FILE
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from metnos.testing.month import MonthFile, MonthTurn, invoice, month, write_files
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.pipeline import run_pipeline
from metnos.turns.service import TurnService
from tests.support.home import Home, MakeHome, gateway_client

MONTH_ENV = {"METNOS_POLICY_MAX_ACTIONS_PER_HOUR": "1000000",  # a month in minutes
             "METNOS_NOTIFY_QUIET_HOURS": ""}  # never the wall clock's time of day
FATTURE = {"fs_read", "pdf_ext", "archive", "notify"}
FOTO = {"fs_find", "fs_move"}
TELOS = """# Telos
1. Tenere in ordine le fatture e i documenti di casa, senza lavoro manuale.
2. Farmi risparmiare tempo nelle faccende, in automatico.
3. Coltivare uno strumento nuovo solo quando serve, e solo con il mio permesso.
4. Non disturbare la famiglia di notte.
"""


@dataclass
class Figures:
    turns: int = 0
    thinks: int = 0
    approvals: int = 0
    elapsed_s: float = 0.0
    cpu_s: float = 0.0  # this process's CPU time (the scripted model's thread included)
    unused: list[str] = field(default_factory=list)  # turns that left scripted replies
    outcomes: Counter[str] = field(default_factory=Counter)  # executor:outcome
    errors: Counter[str] = field(default_factory=Counter)  # executor:error key
    timings_ms: Counter[str] = field(default_factory=Counter)  # summed over the turns


@dataclass
class Household:
    """The owner's side of the month: the gateway's service, its HTTP API, the model."""

    service: TurnService
    client: httpx.AsyncClient
    llm: ScriptedLLM
    home: Home
    figures: Figures = field(default_factory=Figures)
    played: list[MonthTurn] = field(default_factory=list)

    async def approve(self, service: TurnService, ctx: TurnContext,
                      checked: CheckedStep) -> dict[str, Any]:
        """The owner says yes over the API (the row decided, its audit line); the plain
        path then finds it decided."""
        assert checked.approval is not None
        resp = await self.client.post(f"/api/approvals/{checked.approval.id}",
                                      json={"decision": "approve"})
        assert resp.status_code == 200, resp.text
        self.figures.approvals += 1
        return {}

    async def play(self, turn: MonthTurn) -> list[TurnStep]:
        """One turn: its files, its script, the real pipeline, the turn closed; its steps."""
        write_files(self.home.workspace, turn)
        self.llm.reset()
        for calls in turn.rounds:
            self.llm.enqueue_tool_calls([ToolCall(c.executor, c.args) for c in calls])
        self.llm.enqueue_text(turn.final)
        ctx = await self.service.open_turn(turn.text, session_id=None, lang=turn.lang,
                                           channel="api", sender="owner")
        reply = await run_pipeline(self.service, ctx, await_approval=self.approve)
        await self.service.close_turn(ctx, reply, "completed")
        figures = self.figures
        self.played.append(turn)
        figures.turns += 1
        figures.thinks += len(self.llm.requests)
        figures.timings_ms.update({k: round(v) for k, v in ctx.timings.items()
                                   if not k[-1].isdigit()})
        if self.llm.pending:
            figures.unused.append(f"day {turn.day} {turn.habit}: {self.llm.pending} left")
        with db_session(self.service.engine) as db:
            return list(db.exec(select(TurnStep).where(TurnStep.turn_id == ctx.turn_id)
                                .order_by(col(TurnStep.seq))).all())

    async def replay(self, turns: list[MonthTurn]) -> Figures:
        figures = self.figures
        started, cpu = time.perf_counter(), time.process_time()
        for turn in turns:
            for step in await self.play(turn):
                figures.outcomes[f"{step.executor}:{step.outcome}"] += 1
                if step.outcome != "done":
                    figures.errors[f"{step.executor}:{step.error_key}"] += 1
        figures.elapsed_s = time.perf_counter() - started
        figures.cpu_s = time.process_time() - cpu
        return figures


def hand_offs(turns: list[MonthTurn]) -> dict[tuple[str, str], float]:
    """The mnests the turns' scripts should leave: B of a model message takes a hand-off
    from each other executor A of the latest earlier message that called one (SPEC §7.1)."""
    counted: Counter[tuple[str, str]] = Counter()
    for turn in turns:
        before: set[str] = set()
        for calls in turn.rounds:
            now = {c.executor for c in calls if c.executor != "wish"}
            counted.update((a, b) for b in now for a in before if a != b)
            before = now or before
    return {pair: float(n) for pair, n in counted.items()}


def check_memory(household: Household, figures: Figures) -> list[Trace]:
    """The mnestoma of the month, its traces, and the proto-mnest of the scans."""
    engine = household.service.engine
    with db_session(engine) as db:
        mnests = {(m.src, m.dst): m.weight for m in db.exec(select(Mnest)).all()}
        clock = db.get(UseClock, 1)
        [ocr] = db.exec(select(ProtoMnest).where(ProtoMnest.want == "ocr")).all()
    invocations = sum(n for key, n in figures.outcomes.items()
                      if key.split(":")[1] in ("done", "failed") and not key.startswith("wish"))
    found = traces.detect(engine, household.home.settings, audit=household.service.audit)
    print(f"\nscripted month: {figures.turns} turns, {figures.thinks} model calls, "
          f"{invocations} invocations, {figures.approvals} approvals, {len(mnests)} mnests, "
          f"{len(found)} traces, {figures.elapsed_s:.1f} s ({figures.cpu_s:.1f} s CPU)")
    print("steps:", dict(sorted(figures.outcomes.items())))
    print("not done:", dict(figures.errors))
    print("timings (ms):", dict(figures.timings_ms.most_common()))
    print("mnests:", {f"{a}→{b}": w for (a, b), w in sorted(mnests.items())})
    print("traces:", [t.members for t in found])
    assert not figures.unused, figures.unused[:5]  # every turn went as scripted
    assert not figures.errors, figures.errors  # every step ran and did its work
    assert clock is not None and clock.clock == invocations
    assert mnests == hand_offs(household.played)  # each hand-off the scripts made, once
    assert {("fs_read", "pdf_ext"), ("pdf_ext", "archive"), ("archive", "notify")} <= set(mnests)
    assert (ocr.src, ocr.have_kind, ocr.want_kind) == ("pdf_ext", "pdf_image", "text")
    assert ocr.count >= 5  # the executor's wish on all five scans, the model's on some
    [fatture] = [t for t in found if set(t.members) >= FATTURE]
    assert not FOTO & set(fatture.members)
    assert any(set(t.members) >= FOTO for t in found)
    return found


# -- the generated "OCR": it reads the text an image-only fixture hides in its /Title ---------
OCR_CODE = r'''import json, re, sys

MARK = "METNOS-OCR:"


def unescape(raw):
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            j = i + 1
            while j < len(raw) and j < i + 4 and raw[j] in "01234567":
                j += 1
            if j > i + 1:
                out.append(chr(int(raw[i + 1:j], 8)))
                i = j
                continue
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        out.append(raw[i])
        i += 1
    return "".join(out)


args = json.loads(sys.stdin.read() or "{}").get("args", {})
with open(args["path"], "rb") as fh:
    data = fh.read().decode("latin-1")
found = re.search(r"/Title\s*\(((?:\\.|[^\\)])*)\)", data)
title = unescape(found.group(1)) if found else ""
text = title[len(MARK):].replace(" | ", "\n") if title.startswith(MARK) else ""
print(json.dumps({"ok": True, "result": {"path": args["path"], "text": text}}))
'''
OCR_MANIFEST = '''name = "ocr_image"
version = "0.1.0"
entry = "main.py"
risk = "low"
reversible = true
side_effects = false
untrusted_output = true

[inputs.path]
type = "path"
access = "read"
required = true
kind = "pdf_image"
description = { it = "Il PDF scansionato.", en = "The scanned PDF." }

[outputs.path]
type = "path"
description = { it = "Il PDF letto.", en = "The PDF that was read." }

[outputs.text]
type = "string"
kind = "text"
description = { it = "Il testo riconosciuto.", en = "The recognised text." }

[description]
it = "Riconosce il testo di un PDF scansionato che non ha uno strato di testo (OCR)."
en = "Recognise the text of a scanned PDF that has no text layer (OCR)."

[affinity]
it = ["ocr", "scansione", "riconosci"]
en = ["ocr", "scan", "recognise"]

[utterances]
it = []
en = []
'''
SCAN_TEXT = "Fattura n. 99\nProva Srl\nTotale EUR 12,00"


def _fixture(tmp: Path, kind: str) -> dict[str, str]:
    """A real PDF as a test fixture of the candidate (base64, as the synt's cases take)."""
    item = MonthFile("scan.pdf", kind, SCAN_TEXT)  # type: ignore[arg-type]
    write_files(tmp, MonthTurn(0, "", "it", "", (), "", (), (item,)))
    return {"base64": base64.b64encode((tmp / "scan.pdf").read_bytes()).decode()}


def script_ocr(llm: ScriptedLLM, tmp: Path) -> None:
    """The model's six answers when the synt generates the OCR (tier wise: the same model)."""
    scan, plain = _fixture(tmp / "a", "pdf_image"), _fixture(tmp / "b", "pdf")
    answers: list[dict[str, Any]] = [
        {"name": "ocr_image", "network": False,
         "description": {"it": "Legge il testo di un PDF scansionato.",
                         "en": "Read the text of a scanned PDF."}},
        {"manifest_toml": OCR_MANIFEST},
        {"read": ["workspace"], "write": [], "network": False, "timeout_s": 10,
         "memory_mb": 128},
        {"main_py": OCR_CODE},
        {"cases": [{"args": {"path": "scan.pdf"}, "expect": {"text": SCAN_TEXT},
                    "files": {"scan.pdf": scan}},
                   {"args": {"path": "scan.pdf"}, "expect": {"text": ""},
                    "files": {"scan.pdf": plain}}]},
        {"approve": True, "notes": "Reads one PDF of the workspace, writes nothing."},
    ]
    for answer in answers:
        llm.enqueue_text(json.dumps(answer))


async def propose_and_accept(household: Household, proto: ProtoMnest) -> Proposal:
    """The synt's round: no composition closes (pdf_image → text), so a generate proposal;
    it passes the Vaglio (no model: the judge's fallback), is delivered, the owner accepts."""
    service, settings = household.service, household.home.settings
    engine = service.engine
    round_ = cascade.check(settings, engine, service.registry)
    assert (round_.composed, round_.to_generate) == ([], [proto.id]), round_
    with db_session(engine) as db:
        [proposal] = db.exec(select(Proposal).where(Proposal.kind == "generate")).all()
    assert proposal.vars["capability"] == "ocr" and proposal.status == "new"
    judges = vaglio.Judges(service.registry, service.guard.scanner, None, service.audit)
    [judged] = await vaglio.judge_round(engine, settings, judges, lang="it")
    assert judged.status == "queued", judged
    assert delivery.place(engine, settings, audit=service.audit)
    resp = await household.client.post(f"/api/proposals/{proposal.id}/accept")
    assert resp.status_code == 200, resp.text
    return proposal


async def check_ocr(household: Household, tmp: Path) -> None:
    service, settings = household.service, household.home.settings
    with db_session(service.engine) as db:
        [proto] = db.exec(select(ProtoMnest).where(ProtoMnest.want == "ocr")).all()
    await propose_and_accept(household, proto)
    household.llm.reset()
    script_ocr(household.llm, tmp)
    [job] = cascade.pending_instance(settings)  # what the synt flow's run finds, and runs
    made = await cascade.generate_instance(settings, job)
    assert made["ok"] and made["name"] == "ocr_image", made
    folder = settings.home / "executors" / "ocr_image"
    report = json.loads((folder / CANDIDATE_FILE).read_text())["tests"]
    assert (report["sandbox"], report["passed"], report["failed"]) == ("bwrap", 2, 0)
    service.reload_registry()
    assert "ocr_image" not in service.registry  # a candidate: inactive until signed
    steps = await household.play(invoice(30, 31, "it", "Enel Energia", image_only=True,
                                         ocr="ocr_image"))
    assert [s.outcome for s in steps if s.executor == "ocr_image"] == ["refused"]
    resp = await household.client.post("/api/synt/candidates/ocr_image/sign")
    assert resp.status_code == 200 and resp.json()["admitted"] is True, resp.text
    steps = await household.play(invoice(30, 32, "en", "Acea Acqua", image_only=True,
                                         ocr="ocr_image"))
    [read] = [s for s in steps if s.executor == "ocr_image"]
    assert read.outcome == "done" and read.result is not None, read
    assert read.result["text"].startswith("Fattura n. 32\nAcea Acqua\nTotale EUR"), read.result
    print("ocr_image:", folder, report["cases"], read.result)


@pytest.mark.timeout(900)  # ~4 minutes on a quiet machine; a loaded one takes longer
async def test_a_household_month(make_home: MakeHome, scripted_llm: ScriptedLLM,
                                 tmp_path: Path) -> None:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="it", **MONTH_ENV)
    (home.workspace / "TELOS.md").write_text(TELOS)
    async with gateway_client(home, prefect=False) as client:
        service: TurnService = client.app.state.gateway.service  # type: ignore[attr-defined]
        household = Household(service, client, scripted_llm, home)
        turns = month(0)
        figures = await household.replay(turns)
        assert figures.turns == len(turns)
        check_memory(household, figures)
        await check_ocr(household, tmp_path / "fixtures")
