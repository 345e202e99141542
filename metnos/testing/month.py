"""A scripted month of a household (issue 13, acceptance point 1): ~500 turns, Italian and
English mixed, each with the scripted model's replies, for the real loop to replay.

`month(seed, days=30)` is deterministic (one `random.Random(seed)`, no clock, no hash()).
Each `MonthTurn` carries the user's message, its language, the model's `rounds` (each the
tool calls of one model message; several in one round only when all are read-only) and its
`final` text, the executors it is `expected` to use (for the routing accuracy: built-in
tools such as `wish` are not executors and are left out), and the `files` the workspace needs
before the turn (`write_files` puts them there).

The month's habits, each a chain of hand-offs (the traces it should show):
- "fatture": fs_read (a note in `posta/` saying an invoice arrived, and where) → pdf_ext (the
  PDF) → archive (category "fatture"/"invoices") → notify; one a day, five of them image-only
  PDFs on different days: pdf_ext says image_only (its manifest's wish counts on all five),
  and on some the model also calls `wish(capability="ocr", from_step=2, ...)`. An image-only
  PDF hides its text in the document's /Title (`OCR_MARKER` + the text): no OCR exists here,
  so a generated "OCR" executor reads it from there.
- "foto": fs_find (photos in `inbox/`) → fs_move each to `foto/<year>/`;
- "spesa": lists (add, show); "note": fs_write (append) on a note, often after fs_find
  looks for it, now and then after fs_read reads it;
- one-offs: greetings answered in text, shell_run of an allow-listed command.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Literal, NamedTuple

START = date(2026, 3, 2)  # a Monday; the month's first day
OCR_MARKER = "METNOS-OCR:"  # an image-only PDF's /Title: the marker, then its "scanned" text
IMAGE_ONLY_INVOICES = 5
FileKind = Literal["text", "bytes", "pdf", "pdf_image"]


class Call(NamedTuple):
    """One tool call the scripted model makes: `(executor, args)`."""

    executor: str
    args: dict[str, Any]


@dataclass(frozen=True)
class MonthFile:
    """A file the turn needs: `text` (written as is), `bytes` (a stand-in photo: `content`
    encoded), `pdf` (one page with `content` as its text layer) or `pdf_image` (no text
    layer; `content` hidden in /Title after `OCR_MARKER`)."""

    path: str
    kind: FileKind
    content: str


@dataclass(frozen=True)
class MonthTurn:
    day: int
    text: str
    lang: str
    habit: str  # fatture | foto | spesa | note | greeting | shell
    rounds: tuple[tuple[Call, ...], ...]
    final: str
    expected: tuple[str, ...]
    files: tuple[MonthFile, ...] = ()
    image_only: bool = False  # an invoice whose PDF has no text layer

    @property
    def calls(self) -> list[Call]:
        return [call for one in self.rounds for call in one]


def _turn(day: int, text: str, lang: str, habit: str, rounds: list[list[Call]], final: str,
          files: list[MonthFile] | None = None, image_only: bool = False) -> MonthTurn:
    expected: list[str] = []
    for one in rounds:
        for call in one:
            if call.executor != "wish" and call.executor not in expected:
                expected.append(call.executor)
    return MonthTurn(day, text, lang, habit, tuple(tuple(one) for one in rounds), final,
                     tuple(expected), tuple(files or ()), image_only)


# -- the words of the month (data: a third language is one more entry) ---------------------
_SENDERS = ["Enel Energia", "Acea Acqua", "TIM", "Condominio Via Verdi", "Assicurazioni Zeta",
            "Farmacia Centrale", "Hera Gas", "Fastweb"]
_INVOICE_ASKS = {
    "it": ["Controlla la posta di oggi e archivia le fatture",
           "È arrivata posta? Sistema le fatture", "Guarda la nota della posta",
           "Archivia la fattura arrivata oggi"],
    "en": ["Check today's mail and file the invoices", "Any mail? Sort the invoices",
           "Look at the mail note", "File the invoice that came today"]}
_INVOICE: dict[str, dict[str, str]] = {
    "it": {"note": "Nuova fattura da {sender}: {pdf}\n", "category": "fatture",
           "notify": "Ho archiviato la fattura di {sender}.",
           "notify_scan": "È arrivata una fattura di {sender} scansionata: non riesco a "
                          "leggerla, l'ho archiviata.",
           "final": "Fattura di {sender} archiviata, ti ho avvisato."},
    "en": {"note": "New invoice from {sender}: {pdf}\n", "category": "invoices",
           "notify": "I filed the invoice from {sender}.",
           "notify_scan": "A scanned invoice from {sender} arrived: I cannot read it, "
                          "so I filed it as it is.",
           "final": "The invoice from {sender} is filed and you are notified."},
}
_PHOTOS = {"it": (["Metti a posto le foto nuove", "Sposta le foto dalla inbox",
                   "Ordina le foto arrivate"], "Ho spostato {n} foto in {folder}."),
           "en": (["Tidy up the new photos", "Move the photos out of the inbox",
                   "Sort the photos that came in"], "I moved {n} photos to {folder}.")}
_SHOPPING = {"it": ("spesa", ["latte", "pane", "uova", "mele", "caffè", "pasta", "riso",
                              "yogurt", "pomodori", "sapone"],
                    ["Aggiungi {items} alla spesa", "Metti {items} nella lista della spesa"],
                    ["Cosa c'è nella lista della spesa?", "Fammi vedere la spesa"],
                    "Fatto.", "Ecco la lista della spesa."),
             "en": ("shopping", ["milk", "bread", "eggs", "apples", "coffee", "pasta", "rice",
                                 "yogurt", "tomatoes", "soap"],
                    ["Add {items} to the shopping list", "Put {items} on the shopping list"],
                    ["What's on the shopping list?", "Show me the shopping list"],
                    "Done.", "Here is the shopping list.")}
_NOTES = {"it": (["notes/casa.md", "notes/scuola.md", "notes/medico.md"],
                 ["Aggiungi alla nota {name}: {line}", "Annota in {name} che {line}"],
                 ["chiamare l'idraulico", "colloquio martedì", "ricetta da ritirare",
                  "pagare la mensa", "cambiare il filtro"], "Aggiunto alla nota.",
                 "# Note\n"),
          "en": (["notes/home.md", "notes/school.md", "notes/doctor.md"],
                 ["Add to the {name} note: {line}", "Note in {name} that {line}"],
                 ["call the plumber", "meeting on tuesday", "pick up the prescription",
                  "pay the canteen", "change the filter"], "Added to the note.", "# Notes\n")}
_GREETINGS = {"it": [("Ciao!", "Ciao! Come posso aiutarti?"),
                     ("Buongiorno", "Buongiorno! Dimmi pure."),
                     ("Grazie mille", "Di niente!")],
              "en": [("Hi!", "Hi! How can I help?"), ("Good morning", "Good morning! Go ahead."),
                     ("Thanks a lot", "You're welcome!")]}
_SHELL = {"it": [("Quante righe ha la lista della spesa?", "wc -l lists/spesa.md",
                  "Te l'ho contato."),
                 ("Che file ci sono nella cartella note?", "ls notes", "Eccoli.")],
          "en": [("How many lines does the shopping list have?", "wc -l lists/shopping.md",
                  "Counted."), ("What files are in the notes folder?", "ls notes",
                                "There they are.")]}


def invoice(day: int, number: int, lang: str, sender: str, *, image_only: bool,
            wish: bool = False, ocr: str | None = None, notify_first: bool = False,
            text: str | None = None) -> MonthTurn:
    """One "fatture" turn. With `ocr` (an executor's name) the model calls it on the PDF
    after pdf_ext said image_only, then archives and notifies with what it read; with
    `notify_first` it tells the user before it files the PDF (models vary the order)."""
    words = _INVOICE[lang]
    stamp = (START + timedelta(days=day)).isoformat()
    slug = sender.split()[0].lower()
    pdf = f"posta/fatture/{slug}-{stamp}-{number}.pdf"
    body = f"Fattura n. {number}\n{sender}\nTotale EUR {10 + number * 7 % 90},00"
    files = [MonthFile(f"posta/{stamp}-{number}-avviso.md", "text",
                       words["note"].format(sender=sender, pdf=pdf)),
             MonthFile(pdf, "pdf_image" if image_only else "pdf", body)]
    rounds = [[Call("fs_read", {"path": files[0].path})], [Call("pdf_ext", {"path": pdf})]]
    if ocr is not None:
        rounds.append([Call(ocr, {"path": pdf})])
    said = words["notify_scan" if image_only and ocr is None else "notify"]
    tell = [Call("notify", {"text": said.format(sender=sender)})]
    file = [Call("archive", {"path": pdf, "category": words["category"],
                             "year": (START + timedelta(days=day)).year})]
    rounds += [tell, file] if notify_first else [file, tell]
    if wish:  # last: no hand-off of the chain passes through a built-in tool
        rounds.append([Call("wish", {"capability": "ocr", "from_step": 2, "have": "pdf_image",
                                     "want": "text", "why": "scanned invoice, no text layer"})])
    asks = _INVOICE_ASKS[lang]
    return _turn(day, text or asks[number % len(asks)], lang, "fatture", rounds,
                 words["final"].format(sender=sender), files, image_only)


def _photos(rng: random.Random, day: int, lang: str) -> MonthTurn:
    asks, final = _PHOTOS[lang]
    year = (START + timedelta(days=day)).year
    names = [f"IMG_{day:02d}{i:02d}.jpg" for i in range(rng.randint(1, 4))]
    files = [MonthFile(f"inbox/{name}", "bytes", f"photo {day} {name}") for name in names]
    rounds = [[Call("fs_find", {"pattern": "*.jpg", "path": "inbox"})]]
    rounds += [[Call("fs_move", {"src": f"inbox/{n}", "dst": f"foto/{year}/{n}"})]
               for n in names]
    return _turn(day, rng.choice(asks), lang, "foto", rounds,
                 final.format(n=len(names), folder=f"foto/{year}"), files)


def _shopping(rng: random.Random, day: int, lang: str) -> MonthTurn:
    name, items, adds, shows, added, shown = _SHOPPING[lang]
    show = [Call("lists", {"action": "show", "list": name})]
    roll = rng.random()
    if roll < 0.25:
        return _turn(day, rng.choice(shows), lang, "spesa", [show], shown)
    some = rng.sample(items, rng.randint(1, 3))
    text = rng.choice(adds).format(items=", ".join(some))
    rounds = [[Call("lists", {"action": "add", "list": name, "items": some})]]
    if roll > 0.6:  # looks at the list first, then adds what is missing
        rounds.insert(0, show)
    return _turn(day, text, lang, "spesa", rounds, added)


def _note(rng: random.Random, day: int, lang: str, seeded: set[str]) -> MonthTurn:
    paths, asks, lines, final, header = _NOTES[lang]
    path, line = rng.choice(paths), rng.choice(lines)
    files = [] if path in seeded else [MonthFile(path, "text", header)]
    seeded.add(path)
    name = path.split("/")[-1].removesuffix(".md")
    rounds = [[Call("fs_write", {"path": path, "content": f"- {line}", "mode": "append"})]]
    roll = rng.random()
    if roll < 0.1:  # reads the note first
        rounds.insert(0, [Call("fs_read", {"path": path})])
    elif roll < 0.55:  # looks for the right note first
        rounds.insert(0, [Call("fs_find", {"pattern": "*.md", "path": "notes"})])
    return _turn(day, rng.choice(asks).format(name=name, line=line), lang, "note", rounds,
                 final, files)


def _one_off(rng: random.Random, day: int, lang: str) -> MonthTurn:
    if rng.random() < 0.8:
        said, answer = rng.choice(_GREETINGS[lang])
        return _turn(day, said, lang, "greeting", [], answer)
    said, command, answer = rng.choice(_SHELL[lang])
    return _turn(day, said, lang, "shell", [[Call("shell_run", {"command": command})]], answer)


def _lang(rng: random.Random) -> str:
    return "it" if rng.random() < 0.6 else "en"


def month(seed: int = 0, *, days: int = 30) -> list[MonthTurn]:
    """The household's month: about 16-17 turns a day, in the order they happen."""
    rng = random.Random(seed)
    scans = set(rng.sample(range(1, days), min(IMAGE_ONLY_INVOICES, max(days - 1, 0))))
    wishes = set(sorted(scans)[::2])  # the model wishes on some; the executor on all
    seeded: set[str] = set()
    turns: list[MonthTurn] = []
    for day in range(days):
        today: list[MonthTurn] = [
            invoice(day, day + 1, _lang(rng), rng.choice(_SENDERS), image_only=day in scans,
                    wish=day in wishes, notify_first=rng.random() < 0.35)]
        if day % 4 != 3:  # photos come in most days
            today.append(_photos(rng, day, _lang(rng)))
        today += [_shopping(rng, day, _lang(rng)) for _ in range(rng.randint(4, 7))]
        today += [_note(rng, day, _lang(rng), seeded) for _ in range(rng.randint(3, 6))]
        today += [_one_off(rng, day, _lang(rng)) for _ in range(rng.randint(4, 7))]
        rng.shuffle(today)
        turns += today
    return turns


def write_files(workspace: Path, turn: MonthTurn) -> None:
    """Put the turn's files in the workspace (PDFs through tests/support/pdfs.py)."""
    for item in turn.files:
        target = workspace / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.kind == "text":
            target.write_text(item.content, encoding="utf-8")
        elif item.kind == "bytes":
            target.write_bytes(item.content.encode())
        else:
            _write_pdf(target, item)


def _write_pdf(target: Path, item: MonthFile) -> None:
    from tests.support import pdfs  # lazily: the fixtures live with the tests

    if item.kind == "pdf":
        pdfs.text_pdf(target, [item.content])
        return
    from pypdf import PdfReader, PdfWriter

    pdfs.image_only_pdf(target)
    writer = PdfWriter(clone_from=PdfReader(target))
    writer.add_metadata({"/Title": OCR_MARKER + item.content.replace("\n", " | ")})
    with target.open("wb") as handle:
        writer.write(handle)
