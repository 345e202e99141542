"""`metnos-prompts`: the languages of an instance (SPEC §9.4, §9.5; seed §4, §8).

    metnos-prompts add-language fr [--source-lang en]
    metnos-prompts status [--layer prompts|manifests|messages] [--all] [--json]
    metnos-prompts translate planner --lang it [--quality wise|frontier]
    metnos-prompts translate-all [--lang fr] [--quality ...]
    metnos-prompts review planner --lang it
    metnos-prompts mark-synced planner --lang it [--source en] [--keep-current]
    metnos-prompts resolve planner --source en
    metnos-prompts check | sync
    metnos-prompts manifests|messages|channels|lexicon|workspace|planner translate|review|
        mark-synced|resolve ...

The top-level verbs act on prompts (layer 1); `manifests` and `messages` carry the same verbs
for layers 2 and 3 (`messages mark-synced --lang fr --all` promotes every reviewed message),
`channels` for the channels' templates (layer 4), `lexicon` for the words the code reads and
`workspace` for the household's starting documents and `planner` for each executor's
sentences, phrases and argument descriptions (the embedded planner's words).
A language added here stays inactive until METNOS_LANG (or `i18n.languages`) names it.
"""

# No `from __future__ import annotations`: typer reads the annotations of the commands built
# inside `_layer_commands`, which refer to that function's locals.
import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Annotated, Any, TypeVar

import typer

from metnos.faces.cli._common import exit_with, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.features.languages.admin import LAYERS, LanguageAdmin, StatusRow
from metnos.features.languages.sweep import SweepReport
from metnos.features.languages.translator import LLMTranslator
from metnos.ground.errors import MetnosError, NotInitialisedError
from metnos.mechanisms.llm.port import LLMPort

T = TypeVar("T")
app = typer.Typer(help=msg("CLI_PROMPTS_HELP"), no_args_is_help=True)

LangOpt = Annotated[str, typer.Option("--lang", help=msg("CLI_PROMPTS_LANG_HELP"))]
QualityOpt = Annotated[str | None, typer.Option(
    "--quality", help=msg("CLI_PROMPTS_QUALITY_HELP"))]
SourceOpt = Annotated[str | None, typer.Option("--source", help=msg(
    "CLI_PROMPTS_SOURCE_HELP"))]
JsonOpt = Annotated[bool, typer.Option("--json", help=msg("CLI_PROMPTS_JSON_HELP"))]


def _run(action: Callable[[LanguageAdmin], T]) -> T:
    """Open the instance's layers and run `action`; errors end as one message."""
    settings = settings_or_exit()
    try:
        if not settings.home.is_dir():
            raise NotInitialisedError(home=str(settings.home))
        return action(LanguageAdmin(settings))
    except MetnosError as exc:
        exit_with(exc, cli_lang())


def _say(key: str, **vars: Any) -> None:
    echo(msg(key, **vars))


@app.command("add-language", help=msg("CLI_PROMPTS_ADD_LANGUAGE_HELP"))
def add_language(
    code: Annotated[str, typer.Argument(help=msg("CLI_PROMPTS_CODE_HELP"))],
    source_lang: Annotated[str | None, typer.Option(
        "--source-lang", help=msg("CLI_PROMPTS_SOURCE_LANG_HELP"))] = None,
) -> None:
    report = _run(lambda admin: admin.add_language(code, source_lang))
    if not report.changed:
        _say("MSG_LANGS_ALREADY_ADDED", lang=report.code)
        return
    _say("MSG_LANGS_ADDED", lang=report.code, source=report.source_lang, rows=report.rows)
    _say("MSG_LANGS_ACTIVATE_HINT", lang=report.code)


@app.command("status", help=msg("CLI_PROMPTS_STATUS_HELP"))
def status(
    layer: Annotated[str | None, typer.Option("--layer", help=msg(
        "CLI_PROMPTS_LAYER_HELP"))] = None,
    show_all: Annotated[bool, typer.Option("--all", help=msg(
        "CLI_PROMPTS_ALL_HELP"))] = False,
    as_json: JsonOpt = False,
) -> None:
    rows = _run(lambda admin: (admin.languages, admin.status([layer] if layer else LAYERS)))
    languages, found = rows
    if as_json:
        echo_json([r.__dict__ for r in found], indent=2)
        return
    _print_table(languages, found, show_all)


def _print_table(languages: list[str], rows: list[StatusRow], show_all: bool) -> None:
    by_resource: dict[tuple[str, str], dict[str, str]] = {}
    summary: dict[str, Counter[str]] = {}
    for row in rows:
        cell = row.status + ("*" if row.candidate == "current" else "")
        if row.layer == "messages" and not show_all:
            summary.setdefault(row.lang, Counter())[cell] += 1
            continue
        by_resource.setdefault((row.layer, row.name), {})[row.lang] = cell
    width = max([len(name) for _, name in by_resource] + [12])
    if by_resource:
        echo(f"{'':10} {'':{width}} " + " ".join(f"{lang:<12}" for lang in languages))
    for (layer, name), cells in by_resource.items():
        echo(f"{layer:10} {name:{width}} "
             + " ".join(f"{cells.get(lang, '-'):<12}" for lang in languages))
    for lang in languages:
        if lang in summary:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(summary[lang].items()))
            _say("MSG_LANGS_MESSAGES_SUMMARY", lang=lang, counts=counts)
    _say("MSG_LANGS_STATUS_LEGEND")


@app.command("translate-all", help=msg("CLI_PROMPTS_TRANSLATE_ALL_HELP"))
def translate_all(
    lang: Annotated[list[str] | None, typer.Option("--lang", help=msg(
        "CLI_PROMPTS_LANG_HELP"))] = None,
    layer: Annotated[list[str] | None, typer.Option("--layer", help=msg(
        "CLI_PROMPTS_LAYER_HELP"))] = None,
    quality: QualityOpt = None,
) -> None:
    report = _run(lambda admin: _sweep(admin, quality, layer or list(LAYERS), None, lang))
    _print_report(report)


@app.command("check", help=msg("CLI_PROMPTS_CHECK_HELP"))
def check(as_json: JsonOpt = False, surfaces: Annotated[str | None, typer.Option(
        "--surfaces", help=msg("CLI_PROMPTS_SURFACES_HELP"))] = None) -> None:
    if surfaces is not None:
        _check_surfaces(surfaces, as_json)
        return
    issues = _run(lambda admin: admin.check())
    if as_json:
        echo_json([i.__dict__ for i in issues], indent=2)
    else:
        for issue in issues:
            _say("MSG_LANGS_CHECK_LINE", level="error" if issue.error else "warning",
                 layer=issue.layer, name=issue.name, lang=issue.lang, problem=issue.problem)
        errors = sum(1 for i in issues if i.error)
        _say("MSG_LANGS_CHECK_DONE", errors=errors, warnings=len(issues) - errors)
    if any(i.error for i in issues):
        raise typer.Exit(1)


def _check_surfaces(tag: str, as_json: bool) -> None:
    """Every surface rendered in `tag`, linted; exit 1 on any text that is not in it."""
    problems = _run(lambda admin: admin.check_surfaces(tag, served_pages))
    if as_json:
        echo_json([p.__dict__ for p in problems], indent=2)
    else:
        for p in problems:
            _say("MSG_LANGS_SURFACE_LINE", surface=p.surface, name=p.name,
                 detected=p.detected or "?", excerpt=p.excerpt)
        _say("MSG_LANGS_SURFACES_DONE", lang=tag, count=len(problems))
    if problems:
        raise typer.Exit(1)


@app.command("sync", help=msg("CLI_PROMPTS_SYNC_HELP"))
def sync() -> None:
    count = _run(lambda admin: admin.record_untracked())
    _say("MSG_LANGS_SYNCED_UNTRACKED", count=count)


def _sweep(admin: LanguageAdmin, quality: str | None, layers: list[str],
           names: list[str] | None, langs: list[str] | None) -> SweepReport:
    settings = admin.settings
    translator = LLMTranslator(LLMPort.for_instance(settings),
                               quality or settings.i18n.sweep_quality, settings.lang)
    return asyncio.run(admin.sweep(translator, layers=layers, names=names, langs=langs,
                                   progress=lambda line: echo(f"… {line}", err=True)))


def _print_report(report: SweepReport) -> None:
    for layer, name, lang, problems in report.rejected:
        _say("MSG_LANGS_REJECTED", layer=layer, name=name, lang=lang,
             problems="; ".join(problems))
    for layer, name, lang, detail in report.failed:
        _say("MSG_LANGS_FAILED", layer=layer, name=name, lang=lang, detail=detail)
    for layer, name in report.conflicts:
        _say("MSG_LANGS_CONFLICT", layer=layer, name=name)
    _say("MSG_LANGS_SWEEP_DONE", written=len(report.written), rejected=len(report.rejected),
         failed=len(report.failed), conflicts=len(report.conflicts))


def _mark_all(admin: LanguageAdmin, layer: str, lang: str) -> tuple[int, list[str]]:
    return admin.mark_all(layer, lang)


def _layer_commands(group: typer.Typer, layer: str, noun_help: str,
                    all_help: str = "CLI_PROMPTS_MARK_ALL_HELP") -> None:
    """translate / review / mark-synced / resolve for one layer (the top-level group's
    `mark-synced --all` accepts the candidates of every layer)."""
    Name = Annotated[str, typer.Argument(help=msg(noun_help))]  # noqa: N806

    @group.command("translate", help=msg("CLI_PROMPTS_TRANSLATE_HELP"))
    def translate(name: Name, lang: LangOpt, quality: QualityOpt = None) -> None:
        report = _run(lambda admin: _sweep(admin, quality, [layer], [name], [lang]))
        _print_report(report)

    @group.command("review", help=msg("CLI_PROMPTS_REVIEW_HELP"))
    def review(name: Name, lang: LangOpt) -> None:
        found = _run(lambda admin: admin.review(layer, name, lang))
        _say("MSG_LANGS_REVIEW_HEAD", name=name, lang=found.lang, status=found.status,
             source=found.source_lang or "?")
        if found.candidate is None:
            _say("MSG_LANGS_NO_CANDIDATE", name=name, lang=found.lang)
            return
        if found.obsolete:
            _say("MSG_LANGS_CANDIDATE_OBSOLETE_NOTE")
        echo(found.diff or found.candidate)
        for warning in found.warnings:
            _say("MSG_LANGS_WARNING", warning=warning)

    @group.command("mark-synced", help=msg("CLI_PROMPTS_MARK_SYNCED_HELP"))
    def mark_synced(
        lang: LangOpt,
        name: Annotated[str | None, typer.Argument(help=msg(noun_help))] = None,
        source: SourceOpt = None,
        keep_current: Annotated[bool, typer.Option("--keep-current", help=msg(
            "CLI_PROMPTS_KEEP_CURRENT_HELP"))] = False,
        every: Annotated[bool, typer.Option("--all", help=msg(all_help))] = False,
    ) -> None:
        if every:
            layers = LAYERS if group is app else (layer,)
            for one in layers:
                done, skipped = _run(partial(_mark_all, layer=one, lang=lang))
                for line in skipped:
                    _say("MSG_LANGS_SKIPPED", detail=line)
                if len(layers) > 1:
                    _say("MSG_LANGS_MARKED_ALL_LAYER", layer=one, count=done, lang=lang)
                else:
                    _say("MSG_LANGS_MARKED_ALL", count=done, lang=lang)
            return
        if name is None:
            _say("ERR_LANGS_NAME_REQUIRED")
            raise typer.Exit(2)
        notes = _run(lambda admin: admin.mark_synced(layer, name, lang, source=source,
                                                     keep_current=keep_current))
        _say("MSG_LANGS_MARKED", name=name, lang=lang)
        for note in notes:
            _say("MSG_LANGS_RESIGN_NOTE", name=note.split(":", 1)[-1])

    @group.command("resolve", help=msg("CLI_PROMPTS_RESOLVE_HELP"))
    def resolve(name: Name, source: Annotated[str, typer.Option(
            "--source", help=msg("CLI_PROMPTS_SOURCE_HELP"))]) -> None:
        _run(lambda admin: admin.resolve(layer, name, source))
        _say("MSG_LANGS_RESOLVED", name=name, source=source)


manifests_app = typer.Typer(help=msg("CLI_PROMPTS_MANIFESTS_HELP"), no_args_is_help=True)
messages_app = typer.Typer(help=msg("CLI_PROMPTS_MESSAGES_HELP"), no_args_is_help=True)
_layer_commands(app, "prompts", "CLI_PROMPTS_ROLE_HELP", "CLI_PROMPTS_MARK_ALL_LAYERS_HELP")
_layer_commands(manifests_app, "manifests", "CLI_PROMPTS_EXECUTOR_HELP")
_layer_commands(messages_app, "messages", "CLI_PROMPTS_KEY_HELP")
app.add_typer(manifests_app, name="manifests")
app.add_typer(messages_app, name="messages")
for _layer, _help, _noun in (("channels", "CLI_PROMPTS_CHANNELS_HELP", "CLI_PROMPTS_TEMPLATE_HELP"),
                             ("lexicon", "CLI_PROMPTS_LEXICON_HELP", "CLI_PROMPTS_WORDS_HELP"),
                             ("workspace", "CLI_PROMPTS_WORKSPACE_HELP",
                              "CLI_PROMPTS_DOCUMENT_HELP"),
                             ("planner", "CLI_PROMPTS_PLANNER_HELP", "CLI_PROMPTS_EXECUTOR_HELP")):
    _group = typer.Typer(help=msg(_help), no_args_is_help=True)
    _layer_commands(_group, _layer, _noun)
    app.add_typer(_group, name=_layer)


_PAGES = ("chat.html.j2", "docs_index.html.j2", "login_needed.html.j2", "docs_missing.html.j2",
          "device.html.j2")


def served_pages(lang: str) -> Iterator[tuple[str, str]]:
    """The web chat's pages in `lang` as the gateway serves them, for `check --surfaces`."""
    from metnos.faces.gateway.routes.docs import index_context  # the gateway, only when asked
    from metnos.faces.gateway.routes.web import page_strings, render_page

    for page in _PAGES:
        yield page, render_page(page, lang, strings=page_strings(lang), modules=[], locales=[],
                                executors=[], model_state="unknown", owner=True, device=False,
                                **index_context(lang))
