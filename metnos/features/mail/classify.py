"""Classifying new mail for the digest (SPEC §12): one label per message from a closed set.

`request` (a real person asking something), `automatic` (confirmations, receipts,
notifications, newsletters), `spam` (what the filter missed), `other`. A `request` is worth
the owner's attention; the digest also tells what the lexicon's rules find in any label but
`spam` (a bill due tomorrow, a school form: `metnos.features.mail.importance`).

In order, per message:
1. the headers decide when they can (X-Spam-Flag, Auto-Submitted, Precedence bulk/list/junk,
   List-Id/List-Unsubscribe, noreply/mailer-daemon senders): no model is asked for those, so
   a morning of automatic confirmations costs no LLM call;
2. the rest go to the `fast` tier in one call, as quoted data (`wrap_untrusted`), asked for
   JSON `{"labels": {"<uid>": "<label>"}}`; a uid it did not label, a label outside the set,
   or an answer that is not that JSON → the deterministic label for that message;
3. the deterministic label (`by_words`: it/en subject words, a question) when no model is
   configured, the day's LLM budget is spent (`guard.reserve_llm`), or the call fails.
Mail text never decides anything else: the answer is a label, nothing more.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from metnos.ground.errors import LLMError, MetnosError
from metnos.mechanisms import prompts
from metnos.mechanisms.llm.port import LLMPort
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.untrusted import wrap_untrusted
from metnos.turns.context import TurnContext
from metnos.turns.guard import Guard

log = logging.getLogger(__name__)

LABELS = ("request", "automatic", "spam", "other")
ATTENTION = frozenset({"request"})
ROLE = "mail_classify"
MAX_SNIPPET = 400  # of each message, in the prompt
AUDIT_ACTION = "mail.classify"

AUTO_SENDER = re.compile(r"(^|[<\s\"])(no-?reply|do-?not-?reply|mailer-daemon|postmaster|"
                         r"notifications?|notifiche|bounces?|newsletter)[^@\s]*@", re.I)
AUTOMATIC_WORDS = (
    "conferma d'ordine", "conferma dell'ordine", "conferma ordine", "ordine confermato",
    "il tuo ordine", "ricevuta", "è stato spedito", "spedizione", "newsletter", "notifica",
    "reimposta la password", "verifica il tuo", "abbonamento", "fattura n",
    "order confirmation", "your order", "receipt", "has shipped", "shipping confirmation",
    "shipment", "notification", "password reset", "verify your", "subscription",
    "invoice #", "your invoice",
)
SPAM_WORDS = (
    "hai vinto", "vincitore", "lotteria", "eredità", "clicca qui", "guadagna",
    "you have won", "you won", "winner", "lottery", "inheritance", "click here", "viagra",
    "bitcoin", "crypto", "casino", "make money", "wire transfer", "100% free",
)
REQUEST_WORDS = (
    "puoi", "potresti", "riesci", "mi serve", "mi mandi", "per favore", "fammi sapere",
    "ti chiedo", "vorrei", "can you", "could you", "would you", "please", "let me know",
    "i need", "are you", "do you",
)


def by_headers(message: Mapping[str, Any]) -> str | None:
    """The label the headers alone decide, or None (then the content must be read)."""
    if str(message.get("spam_flag") or "").strip().lower().startswith("yes"):
        return "spam"
    auto = str(message.get("auto_submitted") or "").strip().lower()
    if auto and auto != "no":
        return "automatic"
    if str(message.get("precedence") or "").strip().lower() in ("bulk", "list", "junk"):
        return "automatic"
    if message.get("list_id") or message.get("list_unsubscribe"):
        return "automatic"
    if AUTO_SENDER.search(str(message.get("from") or "")):
        return "automatic"
    return None


def by_words(message: Mapping[str, Any]) -> str:
    """The deterministic label from the subject and the snippet's start (it/en words)."""
    subject = str(message.get("subject") or "").lower()
    start = str(message.get("snippet") or "")[:MAX_SNIPPET].lower()
    if any(w in subject for w in SPAM_WORDS):
        return "spam"
    if any(w in subject for w in AUTOMATIC_WORDS):
        return "automatic"
    if "?" in subject or "?" in start or any(w in f"{subject} {start}" for w in REQUEST_WORDS):
        return "request"
    return "other"


def deterministic(message: Mapping[str, Any]) -> str:
    return by_headers(message) or by_words(message)


@dataclass
class Classified:
    labels: dict[int, str] = field(default_factory=dict)
    how: dict[int, str] = field(default_factory=dict)  # uid → headers | model | rules
    model_called: bool = False

    def worth(self) -> list[int]:
        return [uid for uid, label in self.labels.items() if label in ATTENTION]

    def counts(self) -> dict[str, int]:
        return {label: list(self.labels.values()).count(label) for label in LABELS}


AuditLine = Callable[..., int]


async def classify(messages: Sequence[Mapping[str, Any]], *, port: LLMPort | None,
                   guard: Guard, ctx: TurnContext, audit_line: AuditLine) -> Classified:
    """One label per message (see the module); one audit line says how they were decided."""
    out = Classified()
    pending: dict[int, Mapping[str, Any]] = {}
    for message in messages:
        uid = message.get("uid")
        if not isinstance(uid, int):
            continue
        decided = by_headers(message)
        if decided is not None:
            out.labels[uid], out.how[uid] = decided, "headers"
        else:
            pending[uid] = message
    reason = "MSG_DIGEST_CLASSIFIED"
    if pending and port is not None:
        answered, reason, out.model_called = await _by_model(pending, port, guard, ctx,
                                                             audit_line)
        for uid, label in (answered or {}).items():
            out.labels[uid], out.how[uid] = label, "model"
    for uid, message in pending.items():
        if uid not in out.labels:
            out.labels[uid], out.how[uid] = by_words(message), "rules"
    how = list(out.how.values())
    await asyncio.to_thread(
        audit_line, ctx, action=AUDIT_ACTION, decision="info", reason=reason, outcome="done",
        args={"headers": how.count("headers"), "model": how.count("model"),
              "rules": how.count("rules"), **out.counts()})
    return out


async def _by_model(pending: Mapping[int, Mapping[str, Any]], port: LLMPort, guard: Guard,
                    ctx: TurnContext, audit_line: AuditLine
                    ) -> tuple[dict[int, str] | None, str, bool]:
    """(the labels the model gave, the audit reason, whether the model was called)."""
    slot = await asyncio.to_thread(guard.reserve_llm)
    if isinstance(slot, Decision):  # the day's LLM budget is spent: the rules decide
        await asyncio.to_thread(audit_line, ctx, action=AUDIT_ACTION, decision="deny",
                                reason=slot.key, outcome="rules")
        return None, "MSG_DIGEST_CLASSIFY_BUDGET_SPENT", False
    cost: float | None = None
    model = port.resolve("fast") or ""
    try:
        reply = await port.complete([{"role": "user", "content": prompt(pending)}],
                                    tier="fast")
        cost, model = reply.cost_usd, reply.model or model
    except (LLMError, MetnosError) as exc:
        log.warning("digest.classify_failed key=%s", getattr(exc, "key", type(exc).__name__))
        return None, "MSG_DIGEST_CLASSIFY_MODEL_FAILED", True
    finally:
        await asyncio.to_thread(guard.settle_llm, ctx, slot, cost, model)
    return parse_labels(reply.text, pending.keys()), "MSG_DIGEST_CLASSIFIED", True


def prompt(pending: Mapping[int, Mapping[str, Any]]) -> str:
    items = [{"uid": uid, "text": wrap_untrusted(
        "\n".join([f"From: {m.get('from') or ''}", f"Subject: {m.get('subject') or ''}", "",
                   str(m.get("snippet") or "")[:MAX_SNIPPET]]), source="mail")}
             for uid, m in pending.items()]
    return prompts.get(ROLE, "en", labels=list(LABELS), messages=items)


FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)


def parse_labels(text: str | None, uids: Any) -> dict[int, str]:
    """The valid labels of the model's answer: a known uid with a label of the set (pure)."""
    try:
        data = json.loads(FENCE.sub("", text or ""))
    except ValueError:
        return {}
    labels = data.get("labels") if isinstance(data, dict) else None
    if not isinstance(labels, dict):
        return {}
    known = set(uids)
    found: dict[int, str] = {}
    for key, label in labels.items():
        try:
            uid = int(key)
        except (TypeError, ValueError):
            continue
        if uid in known and isinstance(label, str) and label.strip().lower() in LABELS:
            found[uid] = label.strip().lower()
    return found
