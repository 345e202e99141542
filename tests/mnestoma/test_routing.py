"""Routing by traces: small pools see everything, large ones the core and the relevant traces."""

from __future__ import annotations

from metnos.features.mnestoma import traces as traces_mod
from metnos.features.mnestoma.models import Trace
from metnos.features.mnestoma.routing import RouteBook, route
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import Turn
from metnos.ground.paths import resources_path
from metnos.ground.settings.evolution import EvolutionSettings
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.llm.tools import ToolSpec
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.mnestoma.traces_fixture import engine_of, plant
from tests.support.home import MakeHome, gateway_client

EXECUTORS = resources_path("executors")
_NO_PARAMS = {"type": "object", "properties": {}}
# executors of this issue and the household's others, for a pool larger than 12 (the real
# manifest wins when its folder exists)
EXTRA: dict[str, tuple[dict[str, tuple[str, ...]], dict[str, str]]] = {
    "pdf_ext": ({"it": ("pdf", "estrai", "testo", "fattura"), "en": ("pdf", "extract", "text")},
                {"it": "Estrae il testo di un PDF.", "en": "Extract the text of a PDF."}),
    "archive": ({"it": ("archivia", "fattura", "categoria"), "en": ("archive", "invoice", "file")},
                {"it": "Archivia un documento per anno e categoria.",
                 "en": "File a document away by year and category."}),
    "notify": ({"it": ("avvisa", "notifica"), "en": ("notify", "tell", "alert")},
               {"it": "Manda un avviso.", "en": "Send a notification."}),
    "photo_tag": ({"it": ("foto", "etichetta"), "en": ("photo", "tag")},
                  {"it": "Etichetta le foto.", "en": "Tag photos."}),
    "weather": ({"it": ("meteo", "pioggia", "tempo"), "en": ("weather", "rain", "forecast")},
                {"it": "Le previsioni del tempo.", "en": "The weather forecast."}),
    "mail_fetch": ({"it": ("posta", "mail"), "en": ("mail", "inbox", "email")},
                   {"it": "Scarica la posta.", "en": "Fetch the mail."}),
}
INVOICES = Trace(generation=1, label="inv", members=["pdf_ext", "archive", "fs_read", "notify"],
                 weight=30.0)
PHOTOS = Trace(generation=1, label="ph", members=["fs_move", "fs_find", "photo_tag"], weight=12.0)
NOTES = Trace(generation=1, label="no", members=["lists", "fs_write"], weight=5.0)
TRACES = [INVOICES, PHOTOS, NOTES]
SETTINGS = EvolutionSettings()
WISH = ToolSpec(name="wish", description="A capability no tool has.", parameters=_NO_PARAMS)


def pool(lang: str) -> list[ToolSpec]:
    real = [parse_manifest(p).tool_spec(lang) for p in sorted(EXECUTORS.glob("*/manifest.toml"))]
    names = {t.name for t in real}
    extra = [ToolSpec(name=name, description=text[lang], parameters=_NO_PARAMS,
                      affinity=words[lang])
             for name, (words, text) in EXTRA.items() if name not in names]
    return [*real, *extra, WISH]


def names(tools: list[ToolSpec]) -> set[str]:
    return {t.name for t in tools}


def test_a_pool_of_twelve_or_fewer_is_offered_whole_but_the_archived() -> None:
    tools = pool("en")[:10] + [WISH]
    offered = route(tools, "hello", "en", traces=TRACES,
                    states={"fs_move": "archived", "fs_read": "quarantined"}, settings=SETTINGS)
    assert names(offered) == names(tools) - {"fs_move"}


def test_an_italian_invoice_message_gets_the_core_and_the_invoice_trace() -> None:
    tools = pool("it")
    assert len(tools) - 1 > SETTINGS.route_above
    offered = route(tools, "Archivia la fattura arrivata stamattina", "it", traces=TRACES,
                    states={}, settings=SETTINGS)
    # archive shares two words with it, fs_move and pdf_ext one each: all three are seeds
    assert names(offered) == {"wish", "fs_find", "fs_read", "notify", "pdf_ext", "archive",
                              "fs_move", "photo_tag"}
    assert "fs_write" not in names(offered) and "lists" not in names(offered)
    assert [t.name for t in offered] == [t.name for t in tools if t in offered]  # pool order


def test_an_english_photo_message_gets_the_photo_trace_and_not_the_quarantined() -> None:
    offered = route(pool("en"), "move the photos to their folder", "en", traces=TRACES,
                    states={"photo_tag": "quarantined", "fs_find": "archived"},
                    settings=SETTINGS)
    # the photo trace without its quarantined and archived members, the core, and the other
    # best seeds of the real pool (photo_rename; move_messages shares "move" with it): exactly
    # those, so a tool with nothing in common with the message (fs_write) is left out
    assert names(offered) == {"wish", "fs_read", "notify", "fs_move", "photo_rename",
                              "move_messages"}
    assert not names(offered) & {"photo_tag", "fs_find", "fs_write"}


def test_a_relevant_executor_without_a_trace_is_its_own_and_nothing_relevant_the_heaviest(
        ) -> None:
    weather = route(pool("it"), "che tempo fa domani? pioggia?", "it", traces=TRACES,
                    states={}, settings=SETTINGS)
    assert names(weather) == {"wish", "fs_find", "fs_read", "notify", "weather"}
    nothing = route(pool("en"), "zzz qqq", "en", traces=TRACES, states={}, settings=SETTINGS)
    assert names(nothing) == {"wish", "fs_find", "fs_read", "notify", *INVOICES.members}


async def test_a_turn_offers_the_routed_tools_and_reads_the_database_once(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_EVOLUTION_ROUTE_ABOVE="3")
    (home.workspace / "report.txt").write_text("buy milk\n")
    with engine_of(home.settings) as engine:
        plant(engine, {("fs_read", "fs_write"): 5.0, ("fs_find", "fs_move"): 5.0,
                       ("web_fetch", "shell_run"): 1.0})
        traces_mod.detect(engine, home.settings)
    scripted_llm.enqueue_tool_call("fs_read", {"path": "report.txt"})
    scripted_llm.enqueue_text("Your note says: buy milk.")
    async with gateway_client(home, prefect=False) as client:
        resp = await client.post("/api/turns",
                                 json={"text": "open the file report.txt", "lang": "en"})
        assert resp.json()["status"] == "completed", resp.text
        await wait_closed(client, resp.json()["turn_id"])
        book = client.app.state.gateway.service.hooks.route.book  # type: ignore[attr-defined]
    for request in scripted_llm.requests:  # both model calls: the core and fs_read's trace
        offered = {t["function"]["name"] for t in request["tools"]}
        assert {"fs_find", "fs_read", "fs_write"} <= offered  # not fs_move, web_fetch...
        assert offered <= {"fs_find", "fs_read", "fs_write", "notify", "wish",
                           "undo_last"}
    assert isinstance(book, RouteBook) and book.queries == 3  # once for the whole turn
    with engine_of(home.settings) as engine, db_session(engine) as db:
        row = db.get(Turn, resp.json()["turn_id"])
    assert row is not None and row.timings["route"] > 0
