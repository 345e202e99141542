"""ToolSpecs written for these tests (the real manifests are another helper's work)."""

from __future__ import annotations

from metnos.mechanisms.llm.tools import ToolSpec

_FIND_PARAMS = {
    "type": "object",
    "properties": {"kind": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["kind"],
}
_READ_PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def _tools(find: tuple[str, tuple[str, ...], tuple[str, ...], str],
           read: tuple[str, tuple[str, ...], tuple[str, ...]]) -> list[ToolSpec]:
    """fs_find and fs_read in one language: (description, utterances, affinity[, text kind])."""
    return [
        ToolSpec(name="fs_find", description=find[0], parameters=_FIND_PARAMS,
                 utterances=find[1], affinity=find[2],
                 slot_values={"kind": {"markdown": "*.md", find[3]: "*.txt"}}),
        ToolSpec(name="fs_read", description=read[0], parameters=_READ_PARAMS,
                 utterances=read[1], affinity=read[2]),
    ]


def tools_it() -> list[ToolSpec]:
    return _tools(("Cerca file nel workspace per tipo",
                   ("cerca [i] file {kind} [nel workspace]",
                    "(trova|elenca) [tutti] [i] file {kind}",
                    "mostrami i primi {limit} file {kind}"),
                   ("cerca", "trova", "file", "elenca"), "di testo"),
                  ("Legge un file del workspace",
                   ("leggi [il file] {path}", "apri [il file] {path}"),
                   ("leggi", "apri", "file", "contenuto")))


def tools_en() -> list[ToolSpec]:
    return _tools(("Find files in the workspace by kind",
                   ("(find|search for|list) [all] [the] {kind} files [in the workspace]",
                    "find [all] [the] files of kind {kind}"),
                   ("find", "search", "files", "list"), "text"),
                  ("Read a file of the workspace",
                   ("read [the file] {path}", "open [the file] {path}"),
                   ("read", "open", "file", "content")))
