"""The Tutor's pre-check, before the loop (SPEC §10): answer a question about Metnos itself
from the signed catalog, or step aside.

One short window (`[tutor] window_ms`) holds every check that gives the Tutor a turn:
source identity, classification, retrieval, view admission. Past it, or on any failure of
those checks, the message goes to the loop or the embedded planner: the Tutor is optional
help, never an HTTP error and never an action. Once the Tutor holds the turn, the probe and
the composition get the turn's deadline; a failure then is said plainly ("technically
unavailable"), since the question was one for the Tutor.

Who may see what is decided here, before any text reaches a composer: owner-only sections
and probes never contribute to another person's answer. Each outcome leaves an audit line.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from metnos.features.pairing import OWNER_USER_ID
from metnos.features.tutor import feedback
from metnos.features.tutor.catalog import (
    EVERYONE,
    Catalog,
    CatalogUnavailable,
    Hit,
    cached_catalog,
    catalog_path,
)
from metnos.features.tutor.classify import Classification, default_classifier
from metnos.features.tutor.embedder import default_embedder
from metnos.features.tutor.identity import Ambiguous, Bound, route
from metnos.features.tutor.mixed import (
    ABOUT_METNOS,
    Confirmations,
    Settled,
    Split,
    Unsafe,
    separately,
    shaped,
    split,
)
from metnos.features.tutor.observation import Observation
from metnos.features.tutor.probes import Asker, ProbeContext, ProbeRegistry
from metnos.features.tutor.retrieval import admitted, retrieve
from metnos.features.tutor.sections import Section
from metnos.features.tutor.upkeep import due, refresh
from metnos.features.tutor.views import admit, load_views, requested_facts, visible_views
from metnos.ground import i18n
from metnos.ground.i18n import FALLBACK_LANG
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.llm.port import LLMPort
from metnos.turns.context import TurnContext
from metnos.turns.guard import Guard

log = logging.getLogger(__name__)
OWNER = EVERYONE | {"owner"}  # what the owner may see: every section
Composer = Callable[["Plan", TurnContext], Awaitable[tuple[str, str]]]  # reply, outcome


@dataclass
class Plan:
    """What the window decided: the sections (and the observation) the answer rests on."""

    lang: str
    question: str
    hits: list[Hit]
    observation: Observation | None = None
    bound: str | None = None  # the document the request named, if it named one
    sections: list[str] = field(default_factory=list)
    translations: tuple[Section, ...] = ()  # the sections the asker may see (their twins)
    clause: str | None = None  # mixed: the operative clause, verbatim, to confirm once
    unsafe: str | None = None  # mixed, not separable: why (the reply asks for two messages)
    pages: tuple[str, ...] = ()  # the request named several pages: ask which one
    reading: bool = False  # no catalog yet, one compiling: "I'm still reading my guide"


class Tutor:
    """The pre-check of one instance: its catalog (re-read when the file changes), the
    probes the runtime registered and what a probe may read."""

    def __init__(self, home: Path, audit: AuditLog, *, window_s: float,
                 probes: ProbeRegistry | None = None,
                 probe_context: Callable[[Asker], ProbeContext] | None = None,
                 confirmations: Confirmations | None = None) -> None:
        self.home = home
        self.confirmations = confirmations  # mixed requests' one-time confirmations
        self.audit = audit
        self.window_s = window_s
        self.probes = probes
        self.probe_context = probe_context
        self._lock = threading.Lock()
        self._refused: tuple[tuple[int, int, int] | None, str] | None = None
        self._reading = threading.Event()  # set while the catalog is compiled at start

    def catalog(self) -> Catalog | None:
        """The admitted catalog (verified again when its file or a model file changed);
        None when it is missing or refused, with one audit line per refused file."""
        try:
            return cached_catalog(self.home)
        except CatalogUnavailable as exc:
            if exc.reason != "missing":
                try:
                    st = catalog_path(self.home).stat()
                    stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
                except OSError:
                    stamp = None
                with self._lock:
                    told, self._refused = self._refused == (stamp, exc.reason), (stamp, exc.reason)
                if not told:
                    self.audit.append(action="tutor.catalog_refused", decision="deny",
                                      reason=exc.reason)
            return None

    def warm(self, langs: Iterable[str]) -> None:
        """Load the catalog, the model and the classifier's prototypes of each language
        (at start-up), so the first question is not the one that pays for them."""
        catalog = self.catalog()
        if catalog is not None and catalog.semantic:
            for lang in langs:  # the request classes and the named-document operations
                default_classifier().classify("Metnos", lang)
                default_classifier().operation("Metnos", lang)
            retrieve(catalog, "Metnos", k=1)  # the cosine matrix and the lexical index
            catalog.documents()

    def start_reading(self, langs: Iterable[str]) -> bool:
        """No admitted catalog at start (a home initialised before `metnos init` compiled it,
        a new catalog schema, a refused file): compile it in the background, then warm it.
        Meanwhile a question about Metnos is told "I'm still reading my guide", never "I did
        not understand". False when there is nothing to read (a catalog, or the owner's)."""
        if self.catalog() is not None or not due(self.home):
            return False
        self._reading.set()
        wanted = tuple(langs)

        def read() -> None:
            try:
                for lang in wanted:  # the classifier says what is a question about Metnos
                    default_classifier().classify("Metnos", lang)
                upkeep = refresh(self.home)
                self.audit.append(action="tutor.catalog_compiled", decision="info",
                                  reason=upkeep.reason,
                                  args={"sections": upkeep.report.sections
                                        if upkeep.report else 0})
                self.warm(wanted)
            except Exception as exc:  # optional help: the loop keeps serving every message
                log.exception("tutor.reading_failed")
                self.audit.append(action="tutor.catalog_refused", decision="deny",
                                  reason=f"compile:{type(exc).__name__}")
            finally:
                self._reading.clear()

        threading.Thread(target=read, name="tutor-reading", daemon=True).start()
        return True

    def reading(self) -> bool:
        return self._reading.is_set()

    def plan(self, ctx: TurnContext) -> Plan | None:
        """The window's work (blocking: a worker thread). None: the loop serves."""
        catalog = self.catalog()
        if catalog is None:
            if self.reading() and default_classifier().classify(
                    ctx.text, ctx.lang).label == "explanation":
                return Plan(ctx.lang, ctx.text, [], reading=True)
            return None
        routed = route(ctx.text, catalog.documents(), ctx.lang, default_classifier())
        label = routed.classification.label
        explained = None
        if shaped(routed.classification):  # mixed: explain, then confirm the clause once
            found = self._mixed(ctx, routed.classification)
            if not isinstance(found, Split):
                return found
            explained = found
        elif routed.target == "ask" and isinstance(routed.identity, Ambiguous):
            pages = tuple(d.url for d in routed.identity.candidates)
            return Plan(ctx.lang, ctx.text, [], pages=pages)  # which one: never a guess
        elif routed.target != "tutor":
            return None
        owner = ctx.user_id == OWNER_USER_ID
        sources = {routed.identity.doc.source} if isinstance(routed.identity, Bound) else None
        observation = self._observe(ctx, owner) if label == "observation" else None
        if label == "observation" and observation is None:
            return None  # no view covers the question: the normal engine reads the data
        hits = retrieve(catalog, routed.classification.explained or ctx.text, k=8,
                        sources=sources, audience=OWNER if owner else EVERYONE)
        hits = feedback.boosted(self, ctx, hits)  # feedback: this asker's own 👍 first
        hits = prefer_language(admitted(hits, bound=bool(sources)), ctx.lang)
        if not hits and observation is None:
            return None  # no admissible source: the classifier's reading alone closes nothing
        audience = OWNER if owner else EVERYONE
        visible = tuple(s for s in catalog.sections if s.audience in audience)
        return Plan(ctx.lang, explained.explained if explained else ctx.text, hits[:3],
                    observation, sources.pop() if sources else None,
                    [h.section.id for h in hits[:3]], visible,
                    clause=explained.clause if explained else None)

    def _mixed(self, ctx: TurnContext, result: Classification) -> Split | Plan | None:
        """A mixed request's split, or the plan that asks for its parts separately. None
        leaves both parts to the loop: no confirmations here, or a dialogue already open
        in the conversation (an approval card waiting), which is never replaced."""
        if self.confirmations is None:
            return None
        if self.confirmations.open_dialogue(ctx.session_id):
            self.audit.append(action="tutor.stepped_aside", turn_id=ctx.turn_id,
                              session_id=ctx.session_id, decision="info",
                              reason="open_dialogue")
            return None
        found = split(result, ctx.text, ctx.lang)
        if isinstance(found, Unsafe):
            catalog = self.catalog()
            audience = OWNER if ctx.user_id == OWNER_USER_ID else EVERYONE
            best = [h.score for q in found.questions if catalog is not None
                    for h in catalog.search_text(q, k=1, audience=audience)]
            if max(best, default=0.0) < ABOUT_METNOS:
                return None  # the user's own chain of actions: the loop's, not a refusal
            return Plan(ctx.lang, ctx.text, [], unsafe=found.reason)
        return found

    def _observe(self, ctx: TurnContext, owner: bool) -> Observation | None:
        if self.probes is None or self.probe_context is None:
            return None
        asker = Asker(ctx.user_id, owner)
        views = visible_views(load_views(ctx.lang), self.probes, asker)
        embedder = default_embedder()
        question = embedder.encode([ctx.text])[0]
        asked = requested_facts(question, ctx.lang, embedder)
        admission = admit(question, asked, views, embedder)
        if admission.view is None:  # the normal engine reads the data: said in the audit
            self.audit.append(action="tutor.view_withdrawn", turn_id=ctx.turn_id,
                              decision="info", reason=admission.reason,
                              args={"facts": sorted(asked)})
            return None
        return self.probes.run(admission.view.probe, self.probe_context(asker))


READING_GRACE_S = 10.0  # the window's stretch while the guide is read at start (once)


def prefer_language(hits: list[Hit], lang: str) -> list[Hit]:
    """One hit per concept, the asker's language first, English as the fallback, in the
    order of each concept's best score."""
    best: dict[str, Hit] = {}
    rank = {FALLBACK_LANG: 1, lang: 0}  # an English asker: English first
    order: list[str] = []
    for hit in hits:
        concept = hit.section.concept or hit.section.id
        if concept not in best:
            order.append(concept)
            best[concept] = hit
        elif rank.get(hit.section.lang, 2) < rank.get(best[concept].section.lang, 2):
            best[concept] = hit
    return [best[c] for c in order]


async def within(tutor: Tutor, ctx: TurnContext) -> Plan | None:
    """`tutor.plan` within the window; a busy or failing pre-check steps aside. While the
    guide is read at start (a compile beside it, on a machine busy starting up), the window
    stretches by READING_GRACE_S: a question about Metnos is then told "I'm still reading",
    where the loop, with no model, could only say it did not understand."""
    planning = asyncio.ensure_future(asyncio.to_thread(tutor.plan, ctx))
    try:
        try:
            return await asyncio.wait_for(asyncio.shield(planning), tutor.window_s)
        except TimeoutError:
            if not tutor.reading():
                raise
        return await asyncio.wait_for(planning, READING_GRACE_S)
    except TimeoutError:
        tutor.audit.append(action="tutor.busy", turn_id=ctx.turn_id, decision="info")
    except Exception as exc:  # optional help: its failure is the loop's turn, not an error
        log.exception("tutor.precheck_failed turn_id=%s", ctx.turn_id)
        tutor.audit.append(action="tutor.stepped_aside", turn_id=ctx.turn_id,
                           decision="info", reason=type(exc).__name__)
    return None


async def answer(tutor: Tutor, compose: Composer, ctx: TurnContext) -> str | None:
    """The Tutor's reply to this turn, or None (the loop serves). The composition runs
    within the turn's deadline; its failure is said in the asker's language. First, a
    plain yes or no to the conversation's pending confirmation (a mixed request's): a yes
    makes the confirmed clause this turn's text, for the loop to run with every check."""
    settled = await _settle(tutor, ctx)
    if settled.clause is not None:
        ctx.text = settled.clause
        return None
    if settled.reply is not None:
        return settled.reply
    if ctx.confirm_said:  # no pending yes: "confirm" keeps the last change (the trash's)
        return None
    plan = await within(tutor, ctx)
    if plan is None:
        return None
    if plan.reading:  # a question about Metnos while its guide compiles: said, not guessed
        tutor.audit.append(action="tutor.answered", turn_id=ctx.turn_id, decision="info",
                           outcome="reading")
        return i18n.get("TUTOR_STILL_READING", ctx.lang)
    catalog = tutor.catalog()
    version = catalog.version if catalog is not None else ""
    try:
        if plan.pages:
            reply, outcome = which_page(plan), "ask"
        elif plan.unsafe:
            reply, outcome = separately(ctx.lang), f"unsafe:{plan.unsafe}"
        else:
            reply, outcome = await compose(plan, ctx)
    except Exception as exc:
        log.exception("tutor.compose_failed turn_id=%s", ctx.turn_id)
        reply = i18n.get("TUTOR_ANSWER_UNAVAILABLE", ctx.lang)
        outcome = f"unavailable:{type(exc).__name__}"
    # the reason names the document the request bound to; the args digest covers the
    # sections, the probe and the catalog's version the reply rests on
    tutor.audit.append(action="tutor.answered", turn_id=ctx.turn_id, decision="info",
                       outcome=outcome, reason=plan.bound,
                       args={"sections": plan.sections, "catalog": version,
                             "probe": plan.observation.probe if plan.observation else None})
    await feedback.offer(tutor, ctx, plan, version, outcome)  # its 👍/👎, the asker only
    if plan.clause is not None and tutor.confirmations is not None:
        try:
            reply = await asyncio.to_thread(tutor.confirmations.ask, ctx, plan.clause,
                                            version, reply)
        except Exception as exc:  # not stored: the explanation alone, the clause not offered
            log.exception("tutor.confirm_failed turn_id=%s", ctx.turn_id)
            tutor.audit.append(action="tutor.stepped_aside", turn_id=ctx.turn_id,
                               decision="error", reason=f"confirm:{type(exc).__name__}")
    return reply


async def _settle(tutor: Tutor, ctx: TurnContext) -> Settled:
    """What the message does to a pending confirmation; a failure here runs nothing."""
    if tutor.confirmations is None:
        return Settled()
    catalog = tutor.catalog()
    try:
        return await asyncio.to_thread(tutor.confirmations.settle, ctx,
                                       catalog.version if catalog is not None else None)
    except Exception as exc:
        log.exception("tutor.confirm_failed turn_id=%s", ctx.turn_id)
        tutor.audit.append(action="tutor.stepped_aside", turn_id=ctx.turn_id,
                           decision="info", reason=f"confirm:{type(exc).__name__}")
        return Settled()


def which_page(plan: Plan) -> str:
    """The question back when a request named several published pages."""
    links = ", ".join(f"[{url}]({url})" for url in plan.pages)
    return i18n.get("TUTOR_ANSWER_WHICH_PAGE", plan.lang, pages=links)


def composer(settings: Settings, port: LLMPort | None, *, guard: Guard | None = None,
             audit: AuditLog | None = None, executors: Iterable[str] = ()) -> Composer:
    """How this instance writes the Tutor's replies (`[tutor] composer`): `extractive`
    without a model; `llm` and `auto` with the configured one (the turn's "fast" tier, its
    budget and its attestation guard: `reply.by_model`), extractive when none is configured."""
    from metnos.features.tutor.reply import by_model, extractive

    if (settings.tutor.composer == "extractive" or port is None or guard is None
            or audit is None):
        return extractive
    return by_model(port, guard, audit, executors)
