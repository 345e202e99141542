"""Household intents without a model, safe hints and every active language, on the builtin
executors' real ToolSpecs."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from babel.dates import format_time

from metnos.ground import i18n
from metnos.ground.paths import resources_path
from metnos.ground.settings import get_settings
from metnos.mechanisms.llm import embedded, household
from metnos.mechanisms.llm.embedded import plan_embedded, understand
from metnos.mechanisms.llm.household_hints import Example, danger, example_texts, hint
from metnos.mechanisms.llm.tools import Plan
from tests.llm.builtin_tools import FIRST, builtin_tools, changes, manifests, others

NOW = dt.datetime(2026, 12, 1, 15, 42, tzinfo=ZoneInfo("Europe/Rome"))
needs_lists = pytest.mark.skipif("lists" not in manifests(), reason="no lists executor")


def plan(text: str, lang: str) -> Plan:
    return plan_embedded(text, lang, builtin_tools(lang), others=others(lang), now=NOW, first=FIRST)


@pytest.mark.parametrize(
    ("text", "lang", "reply"),
    [
        ("ciao", "it", "Ciao! Come posso aiutarti?"),
        ("Buongiorno!", "it", "Ciao! Come posso aiutarti?"),
        ("hello", "en", "Hello! How can I help?"),
        ("hi there", "en", "Hello! How can I help?"),
        ("👋", "it", "Ciao! Come posso aiutarti?"),
        ("👋🏽👋", "en", "Hello! How can I help?"),
        ("🙂", "en", "Hello! How can I help?"),
        ("grazie mille!", "it", "Prego!"),
        ("thanks a lot", "en", "You're welcome!"),
        ("che ore sono?", "it", "Sono le 15:42."),
        ("Che ora è", "it", "Sono le 15:42."),
        ("che giorno è oggi?", "it", "Oggi è martedì 1 dicembre 2026."),
        ("what's the date today?", "en", "Today is Tuesday, December 1, 2026."),
    ],
)
def test_household_answers_without_an_executor(text: str, lang: str, reply: str) -> None:
    answered = plan(text, lang)
    assert (answered.steps, answered.text, answered.understood) == ((), reply, True)
    assert (answered.source, answered.lang) == ("embedded", lang)


def test_the_time_in_the_locale_of_the_language() -> None:
    answered = plan("what time is it?", "en")
    assert answered.text == f"It's {format_time(NOW, format='short', locale='en')}."
    assert "3:42" in (answered.text or "") and "PM" in (answered.text or "")
    british = plan_embedded("what time is it?", "en-GB", builtin_tools("en"), now=NOW, first=FIRST)
    assert british.text == "It's 15:42." and british.lang == "en-GB"


@pytest.fixture
def rome_then_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("METNOS_TIMEZONE", "Asia/Tokyo")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.usefixtures("rome_then_tokyo")
def test_the_time_is_told_in_the_instance_time_zone() -> None:
    zone = ZoneInfo("Asia/Tokyo")
    before = dt.datetime.now(zone)
    told = plan_embedded("che ore sono", "it", builtin_tools("it"), first=FIRST).text
    after = dt.datetime.now(zone)
    assert told in {f"Sono le {moment:%H:%M}." for moment in (before, after)}


@pytest.mark.parametrize(("text", "lang"), [("cosa sai fare?", "it"), ("what can you do?", "en"),
                                            ("aiuto", "it"), ("help", "en")])
def test_what_can_you_do_is_a_short_list_in_plain_words(text: str, lang: str) -> None:
    answered = plan(text, lang)
    assert answered.understood and answered.steps == () and answered.text is not None
    lines = answered.text.splitlines()
    items = [line for line in lines if line.startswith("- ")]
    assert 3 <= len(items) <= 6 and len(lines) == len(items) + 1
    for word in ("<", "METNOS_", "shell", "i18n_lint", "fs_", "comand", "command"):
        assert word not in answered.text
    assert ("lists" in manifests()) == (i18n.get("MSG_HOUSEHOLD_CAN_LISTS", lang) in answered.text)
    quote = ("«", "»") if lang == "it" else ("“", "”")
    for item in items:  # each example is a sentence the planner understands
        example = item.split(quote[0])[1].split(quote[1])[0]
        assert understand(example, lang, builtin_tools(lang)).intent is not None, example


@pytest.mark.parametrize("lang", ["it", "en"])
def test_every_example_does_what_its_words_say(lang: str) -> None:
    """An example's risk words (what hints compare) agree with what the planner runs."""
    for _, key, text, _ in example_texts(lang):
        found = understand(text, lang, builtin_tools(lang))
        if found.intent is None:  # an executor not installed here (reminders, say)
            continue
        reads = household.level(text, lang) == 0
        if household.is_household(found.intent):
            assert reads, key
        else:
            assert reads == (not changes(found.intent, found.args)), (key, found)


@needs_lists
@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("mostrami cosa devo comprare dalla spesa", "it"),  # reading: never a change offered
        ("fammi vedere la roba della spesa", "it"),
        ("voglio sapere cosa c'è da comprare nella lista", "it"),
        ("show me what I need from the shopping", "en"),
        ("is there milk in the shopping list", "en"),
        ("I would like to see notes.md", "en"),
        ("vorrei vedere note.md", "it"),
    ],
)
def test_a_hint_for_a_reading_request_only_reads(text: str, lang: str) -> None:
    answered = plan(text, lang)
    assert answered.steps == () and answered.text is not None
    first, second = answered.text.splitlines()
    assert first == i18n.get("MSG_PLAN_NOT_UNDERSTOOD", lang)
    quote = ("«", "»") if lang == "it" else ("“", "”")
    suggested = second.split(quote[0])[1].split(quote[1])[0]
    found = understand(suggested, lang, builtin_tools(lang))
    assert found.intent is not None
    assert household.is_household(found.intent) or not changes(found.intent, found.args)


@needs_lists
def test_the_hint_names_the_list_when_the_request_reads_it() -> None:
    answered = plan("fammi vedere la roba della spesa", "it")
    assert answered.text == ("Scusa, non ho capito.\n"
                             "Forse intendevi: «cosa c'è nella lista della spesa?»")


@needs_lists
def test_a_removal_gets_no_hint_that_runs_a_command_or_adds() -> None:
    answered = plan("butta via tutta la roba della spesa", "it")
    assert answered.steps == () and answered.text is not None
    second = answered.text.splitlines()[1]
    suggested = second.split("«")[1].split("»")[0]
    assert household.level(suggested, "it") == household.level(answered.text, "it") == 2


@needs_lists
def test_nothing_in_common_gives_no_hint_but_one_example() -> None:
    answered = plan("zzq blorf quux", "en")
    assert answered.text == ("Sorry, I didn't understand that.\nTry, for example, “what's on "
                             "the shopping list?”, or ask me “what can you do?”.")
    assert understand("what can you do?", "en", []).intent == "household.capabilities"
    assert understand("cosa sai fare?", "it", []).intent == "household.capabilities"


@needs_lists
def test_a_sentence_in_another_active_language_is_answered_in_it() -> None:
    answered = plan("che ore sono?", "en")
    assert (answered.text, answered.lang) == ("Sono le 15:42.", "it")
    step = plan("aggiungi il latte alla lista della spesa", "en")
    assert step.lang == "it" and [s.executor for s in step.steps] == ["lists"]
    english = plan("what time is it?", "it")
    assert english.lang == "en" and english.text is not None and "PM" in english.text
    assert plan("zzq", "en").lang is None  # not understood: the session's language


def test_a_tie_across_languages_goes_to_the_session_language() -> None:
    assert plan("👋", "en").text == "Hello! How can I help?"
    assert plan("👋", "it").text == "Ciao! Come posso aiutarti?"
    assert plan("ok 👍", "it").text == "Prego!"  # "ok" left off, a thumbs up is thanks


def test_a_language_without_household_sentences_finds_them_in_the_active_ones() -> None:
    answered = plan_embedded("hello", "fr", builtin_tools("fr"), others=others("fr"), now=NOW,
                             first=FIRST)
    assert (answered.text, answered.lang) == ("Hello! How can I help?", "en")
    alone = plan_embedded("bonjour", "fr", builtin_tools("fr"), now=NOW, first=FIRST)
    assert alone.understood is False and alone.steps == ()


@needs_lists
def test_list_items_are_split_where_the_sentence_closes_them() -> None:
    added = plan("aggiungi latte, il pane e le uova alla lista della spesa", "it")
    assert [s.args.get("items") for s in added.steps] == [["latte", "pane", "uova"]]
    [reminder] = plan("ricordami di chiamare la nonna e il nonno", "it").steps
    whole = "chiamare la nonna e il nonno"  # free text to the sentence's end: one item
    assert reminder.args.get("items", [whole]) == [whole]
    assert reminder.args.get("text", whole) == whole
    english = plan("add milk, bread and the eggs to the shopping list", "en")
    assert [s.args.get("items") for s in english.steps] == [["milk", "bread", "eggs"]]


def test_a_broken_or_missing_data_file_means_no_household_intents() -> None:
    assert household.phrases("xx").intents == dict.fromkeys(household.INTENTS, ())
    assert household.templates("xx") == ()
    assert household.level("delete everything", "en") == 2
    assert household.level("svuota la lista", "it") == 2
    assert household.level("aggiungi il latte", "it") == 1
    assert household.level("cosa c'è nella lista", "it") == 0


def test_a_riskier_tool_never_ranks_above_a_safer_one() -> None:
    def example(key: str, side_effects: bool, risk: str) -> Example:
        return Example(capability="LISTS", key=key, text="cosa c'è nella lista della spesa?",
                       intent=key.lower(), level=0, danger=danger(side_effects, risk),
                       affinity=frozenset())
    risky, safe = example("RISKY", True, "medium"), example("SAFE", False, "low")
    assert hint("la lista della spesa", "it", (risky, safe)) is safe
    assert hint("la lista della spesa", "it", (safe, risky)) is safe
    assert hint("la lista della spesa", "it", (risky,), among=frozenset({"safe"})) is None
    assert hint("svuota la lista della spesa", "it", (risky, safe)) is None  # asks more


@pytest.mark.parametrize(
    ("text", "lang", "suggested"),
    [
        ("che ore sno", "it", "che ore sono?"),  # a household example is a hint too
        ("whta is on the shoping list", "en", "what's on the shopping list?"),
    ],
)
def test_a_typo_gets_the_example_it_resembles(text: str, lang: str, suggested: str) -> None:
    if "lists" not in manifests() and "list" in text:
        pytest.skip("no lists executor")
    answered = plan(text, lang)
    assert answered.steps == () and answered.text is not None
    assert answered.text.splitlines()[1] == i18n.get("MSG_PLAN_SUGGESTION", lang,
                                                     suggestion=suggested)


@needs_lists
def test_a_typo_that_asks_to_add_gets_the_adding_example() -> None:
    answered = plan("aggiungi il latte alla lsita della spesa", "it")
    assert answered.text == ("Scusa, non ho capito.\n"
                             "Forse intendevi: «aggiungi il latte alla lista della spesa»")


@pytest.mark.parametrize(
    ("text", "lang", "said"),
    [
        ("ciao, che ore sono per favore?", "it", "che ore sono"),
        ("Metnos: leggi note.md!", "it", "leggi note.md"),
        ("hey, could you please read notes.md", "en", "read notes.md"),
        ("ciao", "it", "ciao"),  # nothing around a request: nothing trimmed
        ("per favore", "it", "per favore"),
    ],
)
def test_courtesies_around_a_request_are_left_off(text: str, lang: str, said: str) -> None:
    assert household.trimmed(text, lang) == said


@pytest.fixture
def french_household(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A third language is a data file: lexicon/fr/household.toml beside the shipped ones."""
    root = tmp_path / "res"
    shutil.copytree(resources_path("lexicon"), root / "lexicon")
    shutil.copytree(resources_path("i18n"), root / "i18n")
    data = root / "lexicon" / "fr"
    data.mkdir()
    (data / "household.toml").write_text(
        '[intents]\ngreeting = ["(bonjour|salut) [metnos]"]\n'
        'time = ["quelle heure est-il", "il est quelle heure"]\n'
        '[words]\npolite = ["s\'il te plaît", "metnos"]\n'
        'list_frame = ["liste", "de", "des", "la", "le", "ma"]\n'
        '[lists]\nshopping = ["courses", "liste de courses"]\n'
        '[world]\nweather = ["temps", "pluie", "pleuvoir"]\n', encoding="utf-8")
    (root / "i18n" / "fr").mkdir(exist_ok=True)
    (root / "i18n" / "fr" / "household.toml").write_text(
        'MSG_HOUSEHOLD_CANNOT_SEE = "Je ne peux pas vérifier ça : je n\'ai aucun moyen de voir '
        '{what} d\'ici."\nMSG_HOUSEHOLD_WORLD_weather = "météo"\n', encoding="utf-8")
    monkeypatch.setenv("METNOS_I18N_RESOURCES_DIR", str(root))
    get_settings.cache_clear()
    _forget_compiled()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()
    _forget_compiled()


def _forget_compiled() -> None:
    household._phrases.cache_clear()
    embedded._compile.cache_clear()
    embedded._understood_examples.cache_clear()


@pytest.mark.usefixtures("french_household")
def test_a_third_language_is_a_data_file() -> None:
    greeted = plan_embedded("Salut !", "fr", [], now=NOW)
    assert greeted.understood and greeted.lang == "fr" and greeted.steps == ()
    told = plan_embedded("metnos, quelle heure est-il ?", "fr", [], now=NOW)
    assert told.text is not None and "15:42" in told.text  # the French clock
    assert plan_embedded("bonjour", "en", [], others={"fr": []}, now=NOW).lang == "fr"


# -- the world it cannot see (issue 27) -------------------------------------------------------
@pytest.mark.parametrize(("text", "lang", "topic"), [
    ("will it rain today?", "en", "the weather"),
    ("what's the weather like tomorrow", "en", "the weather"),
    ("is it going to snow this weekend?", "en", "the weather"),
    ("what's in the news?", "en", "the news"),
    ("any headlines this morning?", "en", "the news"),
    ("how much does a litre of petrol cost?", "en", "prices"),
    ("who won the match last night?", "en", "sport results"),
    ("is there traffic on the motorway?", "en", "the traffic"),
    ("how are my shares doing on the stock market", "en", "the markets"),
    ("che tempo fa domani?", "it", "il meteo"),
    ("pioverà oggi?", "it", "il meteo"),
    ("ci sono notizie oggi?", "it", "le notizie"),
    ("quanto costa il pane?", "it", "i prezzi"),
    ("chi ha vinto la partita ieri sera?", "it", "i risultati sportivi"),
    ("c'è traffico in tangenziale?", "it", "il traffico"),
    ("come va la borsa oggi", "it", "i mercati"),
])
def test_a_question_about_the_world_is_answered_in_one_plain_line(
        text: str, lang: str, topic: str) -> None:
    plan = plan_embedded(text, lang, builtin_tools(lang), others=others(lang), now=NOW, first=FIRST)
    assert plan.steps == () and plan.text is not None
    assert "\n" not in plan.text and topic in plan.text, plan.text
    assert plan.text == i18n.get("MSG_HOUSEHOLD_CANNOT_SEE", lang, what=topic)


def test_a_request_that_names_a_topic_word_still_runs() -> None:
    plan = plan_embedded("add umbrella for the rain to the shopping list", "en",
                         builtin_tools("en"), now=NOW, first=FIRST)
    assert [s.executor for s in plan.steps] == ["lists"]


@pytest.mark.usefixtures("french_household")
def test_a_third_language_names_the_lists_and_the_world_in_its_lexicon(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from metnos.features.lists import list_path

    monkeypatch.setenv("METNOS_I18N_LANGUAGES", '["it", "en", "fr"]')
    get_settings.cache_clear()
    data = household.phrases("fr")
    assert data is not None
    assert list_path("courses") == list_path("spesa") == "lists/shopping.md"
    assert list_path("liste de courses") == "lists/shopping.md"
    said = plan_embedded("quel temps fera-t-il demain ?", "fr", [], now=NOW)
    assert said.understood and said.steps == () and said.lang == "fr"
    assert said.text == i18n.get("MSG_HOUSEHOLD_CANNOT_SEE", "fr", what="météo"), said.text
