"""ToolSpecs written for these tests (the real manifests are another helper's work)."""

from __future__ import annotations

from metnos.llm.tools import ToolSpec

_FIND_PARAMS = {
    "type": "object",
    "properties": {"kind": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["kind"],
}
_READ_PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def tools_it() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="fs_find",
            description="Cerca file nel workspace per tipo",
            parameters=_FIND_PARAMS,
            utterances=(
                "cerca [i] file {kind} [nel workspace]",
                "(trova|elenca) [tutti] [i] file {kind}",
                "mostrami i primi {limit} file {kind}",
            ),
            affinity=("cerca", "trova", "file", "elenca"),
            slot_values={"kind": {"markdown": "*.md", "di testo": "*.txt"}},
        ),
        ToolSpec(
            name="fs_read",
            description="Legge un file del workspace",
            parameters=_READ_PARAMS,
            utterances=("leggi [il file] {path}", "apri [il file] {path}"),
            affinity=("leggi", "apri", "file", "contenuto"),
        ),
    ]


def tools_en() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="fs_find",
            description="Find files in the workspace by kind",
            parameters=_FIND_PARAMS,
            utterances=(
                "(find|search for|list) [all] [the] {kind} files [in the workspace]",
                "find [all] [the] files of kind {kind}",
            ),
            affinity=("find", "search", "files", "list"),
            slot_values={"kind": {"markdown": "*.md", "text": "*.txt"}},
        ),
        ToolSpec(
            name="fs_read",
            description="Read a file of the workspace",
            parameters=_READ_PARAMS,
            utterances=("read [the file] {path}", "open [the file] {path}"),
            affinity=("read", "open", "file", "content"),
        ),
    ]
