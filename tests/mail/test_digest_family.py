"""The digest without a model reports what matters to a family (issue 27, point 8), over a
real IMAP server on loopback (pymap, `tests.support.imap`), the real checker, sandbox and
executors, no model configured:

- a bill due tomorrow (sent by a billing robot with bulk headers), a school form and an
  appointment are told, a newsletter and an order confirmation are not; the bill first,
  with its due day and amount in plain words; the mail's text stays data (no link);
- the first run after `metnos mail add` reports the unread mail already there (the recent
  unread ones, at most a few, "and N more"), not the old or read ones; then only what is new;
- the digest goes to the owner's Telegram chat even after one `metnos chat` from a terminal.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, select

from metnos.faces.wiring import build_runtime
from metnos.features.mail.digest import run_digest
from metnos.features.pairing.models import PairedSender
from metnos.features.reminders.outbox import Outbox
from metnos.ground.db.models import ChatSession, Turn
from metnos.turns.service import TurnService
from tests.support.home import MakeHome
from tests.support.imap import AUTO, ImapServer, configure
from tests.support.imap import message as mail

MONTHS_EN = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
             "Dec")
NEWSLETTER = {"List-Id": "Offerte <news.shop.example.com>",
              "List-Unsubscribe": "<https://shop.example.com/unsub?u=7>", "Precedence": "bulk"}


def outbox(service: TurnService) -> list[Outbox]:
    with Session(service.engine) as db:
        return list(db.exec(select(Outbox).order_by(col(Outbox.created_at))).all())


def tomorrow() -> datetime:
    return datetime.now(UTC) + timedelta(days=1)


def italian_mail() -> dict[str, bytes]:
    day = tomorrow()
    return {
        "newsletter": mail("Casa&Co <news@shop.example.com>",
                           "Newsletter di dicembre: sconti fino al 50% sulle offerte",
                           "Scopri le offerte della settimana, solo fino a domani! Prezzi da "
                           "€ 9,90. Disiscriviti in fondo alla pagina.\n", headers=NEWSLETTER),
        "school": mail("Scuola Primaria Rodari <segreteria@scuola-rodari.example.it>",
                       "Uscita didattica al museo",
                       "Gentili genitori, per l'uscita al museo di giovedì serve il modulo di "
                       "autorizzazione firmato. Grazie, la maestra Paola.\n"),
        "bill": mail("Energia Luce <noreply@energia-luce.example.it>",
                     "La tua bolletta di novembre",
                     f"Gentile cliente, l'importo di € 45,20 va pagato entro il "
                     f"{day:%d/%m/%Y}. Puoi pagare dall'app.\n", headers=AUTO),
        "confirmation": mail("Negozio <noreply@negozio.example.it>", "Conferma d'ordine n. 7781",
                             "Grazie per il tuo ordine (37,80 EUR). Riceverai un'altra email "
                             "alla spedizione.\n", headers=AUTO),
    }


async def test_a_bill_due_tomorrow_and_a_school_form_without_a_model(
        make_home: MakeHome, empty_imap: ImapServer) -> None:
    home = make_home(lang="it")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    assert service.port is None  # no model: the lexicon's rules decide
    assert (await run_digest(service)).outcome == "baseline"  # an empty mailbox: silence
    for raw in italian_mail().values():
        empty_imap.deliver("INBOX", raw)
    result = await run_digest(service)
    assert result.outcome == "sent" and result.new_messages == 4 and result.worth == 2
    [row] = outbox(service)
    text = row.text
    assert "Energia Luce: La tua bolletta di novembre" in text
    assert "Scuola Primaria Rodari: Uscita didattica al museo" in text
    assert "Newsletter" not in text and "Conferma d'ordine" not in text
    assert text.index("bolletta") < text.index("Scuola")  # the bill due tomorrow first
    assert "scade domani" in text.lower() and "€ 45,20" in text  # in plain words
    assert "scuola" in text.lower().split("rodari: uscita")[1]  # the school note
    assert "http" not in text and "@" not in text  # the mail stays data: nothing to click
    service.engine.dispose()


async def test_english_bill_appointment_and_permission_slip(
        make_home: MakeHome, empty_imap: ImapServer) -> None:
    home = make_home(lang="en")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    await run_digest(service)
    day = tomorrow()
    in_three = datetime.now(UTC) + timedelta(days=3)
    empty_imap.deliver("INBOX", mail(
        "City Water <billing@citywater.example.com>", "Your statement is ready",
        f"Amount due: $82.15. Please pay by {MONTHS_EN[day.month - 1]} {day.day}th to avoid "
        "a late fee.\n", headers=AUTO))
    empty_imap.deliver("INBOX", mail(
        "Weekly Deals <deals@shop.example.com>", "Back to school sale: 30% off",
        "Our biggest sale of the year ends tomorrow. Shop now and save $20.\n",
        headers=NEWSLETTER))
    empty_imap.deliver("INBOX", mail(
        "Mrs Green <j.green@oakwood-school.example.org>", "Permission slip for Friday",
        "Dear parents, please sign the permission slip for the zoo trip and send it back "
        "with your child.\n"))
    empty_imap.deliver("INBOX", mail(
        "Smile Dental <reception@smile.example.com>", "Your appointment",
        f"This is a reminder of your dental appointment on {in_three.day} "
        f"{MONTHS_EN[in_three.month - 1]} at 10:30.\n", headers=AUTO))
    result = await run_digest(service)
    assert result.outcome == "sent" and result.worth == 3
    [row] = outbox(service)
    text = row.text
    assert "City Water: Your statement is ready" in text and "$ 82.15" in text
    assert "due tomorrow" in text.lower()
    assert "Mrs Green: Permission slip for Friday" in text
    assert "Smile Dental: Your appointment" in text
    assert "Back to school sale" not in text
    assert text.index("City Water") < text.index("Mrs Green")
    service.engine.dispose()


async def test_the_first_run_reports_the_unread_mail_already_there(
        make_home: MakeHome, empty_imap: ImapServer) -> None:
    home = make_home(lang="it")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    for raw in italian_mail().values():  # there before `metnos mail add`
        empty_imap.deliver("INBOX", raw)
    empty_imap.deliver("INBOX", mail("Mamma <mamma@example.it>", "Riunione di condominio",
                                     "Ti ricordo la riunione di lunedì alle 18.\n"),
                       flags="\\Seen")  # already read: not news
    empty_imap.deliver("INBOX", mail("Zio Carlo <carlo@example.it>", "Puoi richiamarmi?",
                                     "Puoi richiamarmi quando hai tempo?\n", days_ago=60))
    for n in range(12):  # a busy inbox: the digest stays short
        empty_imap.deliver("INBOX", mail(f"Amico {n} <amico{n}@example.it>",
                                         f"Domanda numero {n}",
                                         f"Puoi dirmi se vieni alla festa {n}?\n"))
    first = await run_digest(service)
    assert first.outcome == "sent"
    [row] = outbox(service)
    text = row.text
    assert "bolletta" in text and "Scuola Primaria Rodari" in text
    assert "Newsletter" not in text and "Riunione di condominio" not in text
    assert "Zio Carlo" not in text  # two months old: not this morning's news
    assert text.index("bolletta") < text.index("Domanda numero")
    assert "…e altri" in text  # at most a few, the rest counted
    assert "già nella casella" in text.lower()  # said as mail already there, not new
    again = await run_digest(service)
    assert again.outcome == "nothing_new" and len(outbox(service)) == 1
    service.engine.dispose()


def _wrote(service: TurnService, session_id: str, channel: str, at: datetime) -> None:
    with Session(service.engine) as db:
        if db.get(ChatSession, session_id) is None:
            db.add(ChatSession(id=session_id, user_id="owner", channel=channel,
                               interaction_language="it"))
            db.flush()
        db.add(Turn(session_id=session_id, channel=channel, sender="owner", text="ciao",
                    lang="it", created_at=at))
        db.commit()


async def test_one_terminal_chat_does_not_take_the_digest_from_telegram(
        make_home: MakeHome, empty_imap: ImapServer) -> None:
    home = make_home(lang="it", METNOS_NOTIFY_CHANNEL="auto", METNOS_NOTIFY_QUIET_HOURS="")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    await run_digest(service)
    with Session(service.engine) as db:
        db.add(PairedSender(channel="telegram", sender_id="4242", user_id="owner",
                            role="owner", approved_by="owner"))
        db.commit()
    now = datetime.now(UTC)
    _wrote(service, "telegram-4242", "telegram", now - timedelta(hours=3))
    _wrote(service, "cli-1", "api", now - timedelta(hours=1))  # one `metnos chat`
    empty_imap.deliver("INBOX", italian_mail()["bill"])
    assert (await run_digest(service)).outcome == "sent"
    [row] = outbox(service)
    assert (row.channel, row.address) == ("telegram", "telegram-4242")
    service.engine.dispose()
