"""The morning mail digest (SPEC §12; seed §7, the canonical example), without Prefect.

`imap_status` → only if something is new → `imap_fetch_headers` → classify → `summarize` →
`notify`, silent when nothing is worth saying. The chain is fixed in this code: no model
chooses a step, so nothing a mail says can add one.

It runs like a turn: one `Turn` row (channel `schedule`, for the owner, in the session
`mail-digest`), each step through the same step checker (signature, policy, Laws, run budget)
and step runner (sandbox, audit line, effects) as a turn's steps, each step in the trace with
the step it was handed by (think = its stage, seen = the previous stage's steps), so closing
the turn reinforces imap_status→imap_fetch_headers→summarize→notify like any turn's hand-offs.

- Nothing new (`digest_state.compare`): the turn closes after `imap_status`; no header is
  read, no model is asked, no message is sent.
- The first run on a folder (after `metnos mail add`, or a new UIDVALIDITY) is no silent
  baseline: it reads the unread mail already there (the newest `FETCH_LIMIT` UIDs, the last
  `FIRST_DAYS` days) and tells what matters in it, said as mail already in the mailbox.
- What is worth telling: the mail labelled a request (`classify`), and what the lexicon's
  rules find (`metnos.features.mail.importance`: due dates, amounts, family senders, school,
  appointments; newsletters weigh against), the most important first, at most `MAX_ITEMS`
  with "and N more". Each told mail may carry a note in plain words ("due tomorrow ·
  € 45,20") composed from i18n, never from the mail's text.
- The scheduled runs' own quota (`[mail] digest_max_per_day`), apart from the proposals'
  bother budget: once spent, the run stops before reading anything and the mail waits for
  the next day (the folders' state is not advanced), with a deny audit line.
- The taint rule (Law 3): after `imap_fetch_headers` the turn is tainted, and a tainted
  turn's acting step (side effects or network) asks the owner. The digest's later steps,
  `notify` and a second folder's `imap_fetch_headers`, are checked with the taint lifted for
  that one step (`_untainted`, with an info audit line naming the step and the sources)
  because here nothing that read the mail chose them or their arguments: the folder and uid
  come from the settings and the state, the message is the header line from i18n and the
  capped summary lines this code composed, and `notify` delivers only to the owner, like a
  tainted turn's reply. The turn itself stays tainted; model-driven turns keep the rule
  (tests/mail/test_digest_parts.py checks both sides).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from metnos.features.mail import digest_state as state
from metnos.features.mail import importance
from metnos.features.mail.classify import classify
from metnos.features.mail.summary import extractive_lines
from metnos.features.notify import effect as notify
from metnos.features.reminders import outbox
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings
from metnos.mechanisms import approvals
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.llm.tools import PlanStep
from metnos.turns import gate, steps
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome
from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

CHANNEL = "schedule"  # the turn's channel: the scheduler, not a person
SENDER = "owner"  # whom the digest works for (its mail, its chat)
SESSION = "mail-digest"
AUDIT_ACTION = "mail.digest"
MAX_TEXT = 1400  # of the message (notify takes 1500)
FETCH_LIMIT = 50  # imap_fetch_headers' most per run
MAX_ITEMS = 6  # mails told in one digest; the rest are counted ("and 12 more")
FIRST_DAYS = 14  # the first run tells the unread mail of these last days
STAGES = {"imap_status": 1, "imap_fetch_headers": 2, "summarize": 3, "notify": 4}


class DigestStepFailed(MetnosError):
    """A step of the chain did not complete (the flow retries the run, then reports it)."""


@dataclass
class DigestResult:
    outcome: str  # baseline | nothing_new | quota_spent | nothing_worth | sent
    turn_id: str
    new_messages: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    worth: int = 0
    outbox_id: str | None = None
    model_called: bool = False
    tainted: bool = False  # mail was read: the turn's context holds outside data
    first_run: bool = False  # a first look that told the unread mail already there


@dataclass
class DigestRun:
    """One run of the chain in one turn (`open` → `check` → `rest` → `close`)."""

    service: steps.OwnTurn
    ctx: TurnContext
    trace: dict[int, list[int]] = field(default_factory=dict)  # stage → its steps' seq
    news: list[state.FolderNews] = field(default_factory=list)

    @classmethod
    async def open(cls, service: steps.OwnTurn) -> DigestRun:
        await asyncio.to_thread(state.ensure_tables, service.engine)
        ctx = await service.record.open_turn(
            i18n.get("MSG_DIGEST_TURN_TEXT", service.settings.lang), session_id=SESSION,
            lang=None, channel=CHANNEL, sender=SENDER)
        return cls(service, ctx)

    # -- one step, as a turn runs it -----------------------------------------------------
    async def step(self, executor: str, args: dict[str, Any],
                   ctx: TurnContext | None = None) -> StepOutcome:
        run_ctx = ctx or self.ctx
        stage = STAGES[executor]
        seq = sum(len(v) for v in self.trace.values()) + 1
        seen = [s for st, seqs in self.trace.items() if st == stage - 1 for s in seqs]
        how = steps.Steps(steps.execute, gate.wait_in_db, CHANNEL, unattended=self._would_ask)
        _, outcome, _ = await self.service.one(run_ctx, PlanStep(executor, args), how,
                                               seq=seq, think=stage, seen=seen,
                                               recorded_in=self.ctx)
        if run_ctx is not self.ctx and run_ctx.tainted:  # what it read taints the turn
            self.ctx.tainted = True
            self.ctx.sources += [s for s in run_ctx.sources if s not in self.ctx.sources]
        self.trace.setdefault(stage, []).append(seq)
        if outcome.status != "done":
            reason = i18n.get(outcome.key or "ERR_INTERNAL_UNEXPECTED", self.ctx.lang,
                              **{"executor": executor, **outcome.vars})
            raise DigestStepFailed("ERR_DIGEST_STEP_FAILED", executor=executor, reason=reason)
        return outcome

    async def _would_ask(self, service: Runtime, ctx: TurnContext,
                         checked: CheckedStep) -> StepOutcome:
        """Nothing here waits for the owner: a step that would ask stops the run, and no
        approval is left pending."""
        assert checked.approval is not None
        await asyncio.to_thread(self._expire, checked.approval.id)
        await asyncio.to_thread(service.record.audit_line, ctx, action=AUDIT_ACTION,
                                decision="deny", reason="MSG_DIGEST_WOULD_ASK",
                                outcome="refused", approval_id=checked.approval.id)
        return StepOutcome(checked.step.executor, "refused", key="MSG_DIGEST_WOULD_ASK",
                           vars={"executor": checked.step.executor})

    def _expire(self, approval_id: str) -> None:
        with db_session(self.service.engine) as db:
            approvals.expire(db, approval_id)

    def audit(self, decision: str, reason: str, outcome: str, **fields: Any) -> None:
        self.service.record.audit_line(self.ctx, action=AUDIT_ACTION, decision=decision,
                                       reason=reason, outcome=outcome, **fields)

    # -- the chain ---------------------------------------------------------------------------
    async def check(self) -> bool:
        """`imap_status` and the verdict per folder; True when some folder has new mail."""
        mail = self.service.settings.mail
        status = await self.step("imap_status", {"folders": list(mail.digest_folders)})
        now = state.status_folders(status.result)
        seen = await asyncio.to_thread(in_session, self.service.engine, state.load_seen, now)
        self.news = state.compare(now, seen)
        return any(n.verdict == "new" for n in self.news)

    async def rest(self) -> DigestResult:
        """After `check`: what is new, read, sorted, summarised, and said (or not)."""
        engine, settings, turn_id = self.service.engine, self.service.settings, self.ctx.turn_id
        new = [n for n in self.news if n.verdict == "new"]
        first = [n for n in self.news if n.verdict == "baseline"]
        if not new and not first:
            await asyncio.to_thread(in_session, engine, state.save_seen, self.news)
            await asyncio.to_thread(self.audit, "info", "MSG_DIGEST_NOTHING_NEW", "done")
            return DigestResult("nothing_new", turn_id)
        sent = await asyncio.to_thread(in_session, engine, state.sent_today, settings.tz)
        if sent >= settings.mail.digest_max_per_day:  # tomorrow's digest takes them in
            await asyncio.to_thread(self.audit, "deny", "MSG_DIGEST_QUOTA_SPENT", "refused",
                                    args={"sent_today": sent,
                                          "max": settings.mail.digest_max_per_day})
            return DigestResult("quota_spent", turn_id)
        messages: list[dict[str, Any]] = []
        for item in new:
            found = await self._fetch(item.folder, item.since_uid, unseen=False)
            messages += found
            if len(found) >= FETCH_LIMIT:  # more than one run reads: the rest next time
                self._resume_after(item, max(m["uid"] for m in found))
        for item in first:  # the mail already there: the newest unread ones, recent
            since = max(item.uidnext - 1 - FETCH_LIMIT, 0)
            messages += [m for m in await self._fetch(item.folder, since, unseen=True)
                         if recent(m, settings.tz)]
        if not new and not messages:
            await asyncio.to_thread(in_session, engine, state.save_seen, self.news)
            await asyncio.to_thread(self.audit, "info", "MSG_DIGEST_BASELINE", "done")
            return DigestResult("baseline", turn_id)
        labels = await classify(messages, port=self.service.port, guard=self.service.guard,
                                ctx=self.ctx, audit_line=self.service.record.audit_line)
        result = DigestResult("nothing_worth", turn_id, len(messages), labels.counts(),
                              model_called=labels.model_called, first_run=bool(first))
        today = datetime.now(settings.tz).date()
        ranked = importance.rank(messages, labels.labels, settings.active_languages, today,
                                 settings.mail.family)
        if ranked:
            result.worth = len(ranked)
            result.outbox_id = await self._say(messages, ranked, first=bool(first) and not new)
            result.outcome = "sent"
        else:
            await asyncio.to_thread(self.audit, "info", "MSG_DIGEST_NOTHING_WORTH", "done",
                                    args=labels.counts())
        await asyncio.to_thread(in_session, engine, state.save_seen, self.news)
        result.tainted = self.ctx.tainted
        return result

    async def _fetch(self, folder: str, since_uid: int, *, unseen: bool) -> list[dict[str, Any]]:
        args: dict[str, Any] = {"folder": folder, "since_uid": since_uid, "limit": FETCH_LIMIT}
        if unseen:
            args["unseen"] = True
        fetched = await self.step("imap_fetch_headers", args,
                                  ctx=await self._untainted("imap_fetch_headers"))
        return [m for m in (fetched.result or {}).get("messages") or []
                if isinstance(m, dict) and isinstance(m.get("uid"), int)
                and m["uid"] > since_uid]

    async def _say(self, messages: list[dict[str, Any]], ranked: list[importance.Importance],
                   *, first: bool) -> str | None:
        keep = ("uid", "from", "subject", "snippet")
        by_uid = {m["uid"]: m for m in messages}
        told = ranked[:MAX_ITEMS]
        summary = await self.step("summarize", {"messages": json.dumps(
            [{k: by_uid[j.uid].get(k) for k in keep} for j in told], ensure_ascii=False)})
        lines = extractive_lines(summary.result)
        lang = self.ctx.lang
        notes = {j.uid: n for j in told if (n := importance.note(j, lang)) is not None}
        text = compose(lines, [j.uid for j in told], lang, notes=notes,
                       total=len(ranked), first=first)
        said = await self.step("notify", {"text": text, "title": i18n.get(
            "MSG_DIGEST_TITLE", self.ctx.lang)}, ctx=await self._untainted("notify"))
        note = (said.result or {}).get("notification") or {}
        outbox_id = str(note.get("id")) if note.get("id") else None
        await asyncio.to_thread(in_session, self.service.engine, state.record_sent,
                                turn_id=self.ctx.turn_id, outbox_id=outbox_id,
                                messages=len(told))
        return outbox_id

    def _resume_after(self, item: state.FolderNews, last_uid: int) -> None:
        self.news = [replace(n, uidnext=last_uid + 1) if n.folder == item.folder else n
                     for n in self.news]

    async def _untainted(self, executor: str) -> TurnContext:
        """The context a later step of the fixed chain is checked in (see the module: the
        taint rule and why these steps pass it); the turn itself stays tainted."""
        ctx = self.ctx
        if not ctx.tainted:
            return ctx
        await asyncio.to_thread(self.audit, "info", "MSG_DIGEST_FIXED_CHAIN", "done",
                                args={"executor": executor, "sources": list(ctx.sources)[:10]})
        return replace(ctx, tainted=False, sources=[])

    async def close(self, result: DigestResult) -> None:
        reply = i18n.get(f"MSG_DIGEST_{result.outcome.upper()}", self.ctx.lang)
        self.service.record.publish(self.ctx, reply)
        await self.service.record.close_turn(self.ctx, reply, "completed")

    async def fail(self, exc: BaseException) -> None:
        if not self.ctx.closed:
            await self.service.record.fail_turn(self.ctx, exc)


def compose(lines: dict[int, list[str]], order: list[int], lang: str, *,
            notes: dict[int, str] | None = None, total: int | None = None,
            first: bool = False) -> str:
    """The digest's text: the header line, then each message's two lines (and its note),
    within MAX_TEXT; what is not told (past MAX_TEXT, or of the `total` worth telling) is
    counted on a last line. `first`: said as the unread mail already in the mailbox."""
    shown: list[str] = []
    size, told = 0, 0
    count = max(total or 0, len(order))
    for uid in order:
        pair = lines.get(uid)
        if pair is None:
            continue
        block = "\n".join([*pair, *([notes[uid]] if notes and uid in notes else [])])
        if size + len(block) > MAX_TEXT - 200:
            break
        shown.append(block)
        size += len(block) + 2
        told += 1
    if count > told:
        shown.append(i18n.get("MSG_DIGEST_MORE", lang, count=count - told))
    header = i18n.get("MSG_DIGEST_HEADER_FIRST" if first else "MSG_DIGEST_HEADER", lang,
                      count=count)
    return "\n\n".join([header, *shown])


def recent(message: dict[str, Any], tz: Any) -> bool:
    """Whether a mail's date falls in the last FIRST_DAYS days (kept when it has none)."""
    try:
        when = parsedate_to_datetime(str(message.get("date") or ""))
    except (TypeError, ValueError, IndexError):
        return True
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz)
    return when >= datetime.now(UTC) - timedelta(days=FIRST_DAYS)


async def run_digest(service: steps.OwnTurn) -> DigestResult:
    """The whole chain in one call (tests, the bench); the flow runs the same parts as tasks."""
    run = await DigestRun.open(service)
    try:
        await run.check()
        result = await run.rest()  # with nothing new: the state saved, nothing read
        await run.close(result)
        return result
    except BaseException as exc:
        await run.fail(exc)
        raise


def report_failure(settings: Settings, reason: str) -> str:
    """A run that failed for good (after its retries): an audit line and a notice to the
    owner on their preferred channel (an outbox row the gateway delivers). Returns its id."""
    lang = settings.lang
    open_audit_log(settings).append(sender=SENDER, channel=CHANNEL, action=AUDIT_ACTION,
                                    decision="error", reason="ERR_DIGEST_FAILED",
                                    outcome="failed")
    text = i18n.get("ERR_DIGEST_FAILED", lang, reason=reason[:300])
    note = notify.Notification(uuid.uuid4().hex, text, i18n.get("MSG_DIGEST_TITLE", lang))
    engine = make_engine(database_url(settings))
    try:
        with db_session(engine) as db:
            where = notify.destination(db, settings, SENDER, notify.Destination("cli", SESSION))
            row = notify.notification_row(note, where, settings=settings, user_id=SENDER,
                                          lang=lang, now=utcnow(), action_id=None, turn_id=None)
            outbox.add(db, row)
    finally:
        engine.dispose()
    return row.id
