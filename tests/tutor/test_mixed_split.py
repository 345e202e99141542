"""Mixed requests, the parts under the turn: the split with the real classifier (one operative
clause, verbatim; anything unsafe refused), the yes/no vocabulary as language data, and the
confirmation's binding and single use on the real database (another person's yes in the same
conversation, two yeses at once)."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Iterator

import pytest
from sqlmodel import Session, select

from metnos.features.tutor.classify import Classifier
from metnos.features.tutor.confirm_models import TutorConfirmation
from metnos.features.tutor.mixed import (
    DATA,
    Confirmations,
    Split,
    Unsafe,
    answer_kind,
    covers,
    shaped,
    split,
    stands_alone,
)
from metnos.ground.db.models import utcnow
from metnos.mechanisms.audit import read_tail
from tests.support.home import MakeHome
from tests.tutor.support import MIXED, Turns


@pytest.mark.parametrize(("text", "lang", "explained", "clause"), MIXED)
def test_one_operative_clause_kept_verbatim(classifier: Classifier, text: str, lang: str,
                                            explained: str, clause: str) -> None:
    result = classifier.classify(text, lang)
    assert shaped(result)
    assert split(result, text, lang) == Split(explained, clause)
    assert clause in text


@pytest.mark.parametrize(("text", "lang", "reason"), [
    ("Explain the approvals, then delete a.pdf and then delete b.pdf", "en",
     "operative_clauses"),
    ("Explain how to delete a file and then do it", "en", "uncertain"),
    ("Spiegami come si cancella un file e poi fallo", "it", "uncertain"),
    ("Explain the approvals and then delete it", "en", "refers_back"),
    ("Explain the approvals and then delete that file", "en", "refers_back"),
    ("Spiegami le approvazioni e poi cancellalo", "it", "refers_back"),
])
def test_an_unsafe_split_is_refused(classifier: Classifier, text: str, lang: str,
                                    reason: str) -> None:
    result = classifier.classify(text, lang)
    assert shaped(result)
    found = split(result, text, lang)
    assert isinstance(found, Unsafe) and found.reason == reason
    assert found.questions and all(q in text for q in found.questions)


def test_two_explanations_or_a_plain_action_are_not_mixed(classifier: Classifier) -> None:
    assert not shaped(classifier.classify("what is the synt? and how does the ager work?", "en"))
    assert not shaped(classifier.classify("Delete notes.md", "en"))


def test_the_clauses_must_cover_the_request() -> None:
    text = "Explain the approvals and then delete old_report.pdf"
    assert covers(text, ["Explain the approvals", "delete old_report.pdf"], "en")
    assert not covers(text, ["Explain the approvals", "old_report.pdf"], "en")  # "delete" left
    assert not covers(text + " quickly", ["Explain the approvals", "delete old_report.pdf"],
                      "en")
    assert not covers(text, ["delete old_report.pdf", "Explain the approvals"], "en")  # order


@pytest.mark.parametrize(("clause", "lang", "alone"), [
    ("undo yesterday's too", "en", True),
    ("annulla quella di ieri", "it", True),
    ("Archivia anche quelle di ieri", "it", True),
    ("cerca README.md", "it", True),
    ("do it", "en", False),
    ("undo", "en", False),
    ("delete them too", "en", False),
    ("fallo", "it", False),
    ("annullala", "it", False),
    ("cancella anche questo", "it", False),
])
def test_a_clause_stands_alone_only_when_it_names_what_it_acts_on(
        clause: str, lang: str, alone: bool) -> None:
    assert stands_alone(clause, lang) is alone


@pytest.mark.parametrize(("text", "lang", "kind"), [
    ("sì", "it", "yes"), ("Si!", "it", "yes"), ("ok, procedi.", "it", "yes"),
    ("yes", "it", "yes"),  # English is understood everywhere
    ("No, grazie", "it", "no"), ("lascia stare", "it", "no"),
    ("Yes please", "en", "yes"), ("go ahead", "en", "yes"), ("never mind", "en", "no"),
    ("yes, and delete notes.md too", "en", None), ("sì ma prima spiegami", "it", None),
    ("annulla", "it", None),  # the verb "undo/cancel" is an order, never a no
])
def test_a_plain_answer_is_the_whole_message(text: str, lang: str, kind: str | None) -> None:
    assert answer_kind(text, lang) == kind


def test_the_vocabulary_is_language_data() -> None:
    for lang in ("it", "en"):
        data = tomllib.loads((DATA / lang / "confirm.toml").read_text(encoding="utf-8"))
        assert data["yes"] and data["no"] and data["refers"] and data["fillers"]
        assert not set(data["yes"]) & set(data["no"])


class Store(Turns):
    def __init__(self, make_home: MakeHome) -> None:
        super().__init__(make_home(lang="en").settings)
        self.confirmations = Confirmations(self.engine, self.audit, 300)

    def refused(self) -> list[str]:
        return [r["reason"] for r in read_tail(self.settings.audit_dir / "audit.jsonl", 100)
                if r.get("action") == "tutor.confirm_refused"]


@pytest.fixture
def store(make_home: MakeHome) -> Iterator[Store]:
    made = Store(make_home)
    yield made
    made.audit.close()


def test_another_persons_yes_never_runs_it(store: Store) -> None:
    store.confirmations.ask(store.ctx("explain and then delete a.pdf"), "delete a.pdf", "v1",
                            "Explained.")
    other = store.confirmations.settle(store.ctx("yes", user="tg-7"), "v1")
    assert other.clause is None and other.reply is None  # a normal turn for them
    assert store.refused() == ["user"]
    mine = store.confirmations.settle(store.ctx("yes"), "v1")
    assert mine.clause == "delete a.pdf"


def test_a_new_confirmation_drops_the_old_one(store: Store) -> None:
    store.confirmations.ask(store.ctx("first"), "delete a.pdf", "v1", "")
    store.confirmations.ask(store.ctx("second"), "delete b.pdf", "v1", "")
    assert store.confirmations.settle(store.ctx("yes"), "v1").clause == "delete b.pdf"
    assert store.confirmations.settle(store.ctx("yes"), "v1").clause is None
    assert store.refused() == ["consumed"]


async def test_two_yeses_at_once_run_the_clause_once(store: Store) -> None:
    store.confirmations.ask(store.ctx("explain and then delete a.pdf"), "delete a.pdf", "v1",
                            "")
    settled = await asyncio.gather(*(
        asyncio.to_thread(store.confirmations.settle, store.ctx("yes"), "v1")
        for _ in range(4)))
    assert [s.clause for s in settled].count("delete a.pdf") == 1
    assert all(s.reply is None for s in settled)


def test_a_stale_read_cannot_take_it_again(store: Store) -> None:
    """What makes it single use is the conditional UPDATE, not the read before it."""
    store.confirmations.ask(store.ctx("explain and then delete a.pdf"), "delete a.pdf", "v1",
                            "")
    with Session(store.engine) as db:
        [stale] = db.exec(select(TutorConfirmation)).all()
        db.expunge(stale)
    assert store.confirmations.settle(store.ctx("yes"), "v1").clause == "delete a.pdf"
    with Session(store.engine) as db:
        assert not Confirmations._consume(db, stale, "ran", utcnow(), check=True, version="v1")
