"""The executor manifest (`executors/<name>/manifest.toml`), parsed without importing code:
data only, acted on by policy and sandbox before any executor code runs. `parse_manifest`
raises `ManifestError` with a readable reason; `Manifest.tool_spec(lang)` is what a planner
sees of the executor in one language."""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from metnos.ground.errors import ManifestError
from metnos.mechanisms.executors.trust import fits, provable_trust, result_fits
from metnos.mechanisms.llm.tools import ToolSpec
from metnos.mechanisms.policy.args import JSON_TYPES
from metnos.mechanisms.sandbox.profile import SandboxProfile

MANIFEST_FILE = "manifest.toml"
LANG_STATE_FILE = "manifest.lang_state.json"
REQUIRED_LANGS = ("it", "en")
FALLBACK_LANG = "en"
MAX_MANIFEST_BYTES = 64 * 1024

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{1,40}$")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$")
ENTRY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
LANG_RE = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
KIND_RE = re.compile(r"^[a-z][a-z0-9_]{0,30}$")

InputType = Literal["path", "string", "integer", "number", "boolean", "array"]
OutputType = Literal["path", "string", "integer", "number", "boolean", "array", "object"]
Scalar = str | int | float | bool

_JSON_TYPES = {**JSON_TYPES, "object": "object"}  # outputs may also be objects


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_langs(table: dict[str, Any], what: str) -> dict[str, Any]:
    for lang in table:
        if not LANG_RE.match(lang):
            raise ValueError(f"{what}: {lang!r} is not a language tag (e.g. 'it', 'pt-BR')")
    missing = [lang for lang in REQUIRED_LANGS if lang not in table]
    if missing:
        raise ValueError(f"{what}: missing language(s) {', '.join(missing)}")
    return table


def _field_langs(table: dict[str, str], info: ValidationInfo) -> dict[str, str]:
    return _check_langs(table, str(info.field_name))


LangTable = Annotated[dict[str, str], AfterValidator(_field_langs)]  # text per language


def _localised(table: dict[str, Any], lang: str) -> Any:
    """`table[lang]`, else its base language (`pt-BR` → `pt`), else None."""
    if lang in table:
        return table[lang]
    return table.get(lang.replace("_", "-").split("-")[0].lower())


class InputSpec(_Model):
    """One typed argument. `access` (read|write) is required for, and only for, type=path."""

    type: InputType
    access: Literal["read", "write"] | None = None
    required: bool | None = None  # unset: required unless it has a default
    default: Scalar | list[Scalar] | None = None
    enum: tuple[Scalar, ...] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    items: Literal["path", "string", "integer", "number", "boolean"] | None = None
    # a host-side check of the value before the step runs (metnos.mechanisms.policy.host_checks)
    check: Literal["shell_command", "url", "list_name", "archive_destination",
                   "cadence"] | None = None
    # set by the host (a host check), never by a planner: left out of the tool spec and of
    # the arguments a planner may pass (the lists executor's `path`, from the list's name)
    host_set: bool = False
    # values of this input for which a run changes nothing (lists' action "show"): such a
    # run is decided as side-effect free and gets no before-record (no undo entry)
    read_only: tuple[Scalar, ...] | None = None
    # what the value is, beyond its JSON type ("pdf", "text", "image", "folder"...): the synt's
    # composition search chains an output of one kind into an input of the same kind
    kind: str | None = Field(default=None, pattern=KIND_RE.pattern)
    description: LangTable

    @model_validator(mode="after")
    def _coherent(self) -> InputSpec:
        if (self.type == "path") != (self.access is not None):
            raise ValueError("'access' is required for type=path and allowed only there")
        if self.required and self.default is not None:
            raise ValueError("a required input cannot have a default")
        if self.items is not None and self.type != "array":
            raise ValueError("'items' is only for type=array")
        if self.items == "path":  # fail closed: an array has no `access`, so a written path
            # in it would get no before-state record (undo); lift once arrays carry access
            raise ValueError("arrays of paths are not supported yet: use type=path inputs")
        if self.host_set and self.required:
            raise ValueError("an input the host sets cannot be required of the planner")
        if self.read_only is not None and self.enum is not None and not set(
                self.read_only) <= set(self.enum):
            raise ValueError(f"read_only {list(self.read_only)} must be values of the enum")
        if self.default is not None and not fits(self.default, self.type):
            raise ValueError(f"default {self.default!r} is not of type {self.type}")
        if self.enum is not None and self.default is not None and self.default not in self.enum:
            raise ValueError(f"default {self.default!r} is not one of {list(self.enum)}")
        return self

    @property
    def is_required(self) -> bool:
        return self.required if self.required is not None else self.default is None

    def json_schema(self, lang: str) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": _JSON_TYPES[self.type]}
        text = _localised(self.description, lang) or self.description[FALLBACK_LANG]
        schema["description"] = text
        if self.type == "array":
            schema["items"] = {"type": _JSON_TYPES[self.items or "string"]}
        for key in ("default", "minimum", "maximum"):
            value = getattr(self, key)
            if value is not None:
                schema[key] = value
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        return schema


class OutputSpec(_Model):
    type: OutputType
    kind: str | None = Field(default=None, pattern=KIND_RE.pattern)  # as on an input
    enum: tuple[Scalar, ...] | None = None  # the only values it may take (a state, a verdict)
    # the input whose value this output gives back (fs_write's `path`): checked on each run
    # to be that value, so it holds nothing the planner did not already say
    echo: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,40}$")
    description: LangTable


class WishSpec(_Model):
    """A need the executor declares when a run shows it (a proto-mnest, SPEC §7.2): when the
    boolean output `when` is true, "from this executor, I wanted `capability`", which turns
    what it had (`have`, a kind) into what was wanted (`want`, a kind)."""

    when: str = Field(pattern=r"^[a-z][a-z0-9_]{0,40}$")
    have: str = Field(pattern=KIND_RE.pattern)
    want: str = Field(pattern=KIND_RE.pattern)
    why: LangTable


class Manifest(_Model):
    """A parsed `manifest.toml` (see the brief in `.dev/HELPERS.md` for the format)."""

    name: str = Field(pattern=NAME_RE.pattern)
    version: str = Field(pattern=VERSION_RE.pattern)
    entry: str = "main.py"
    risk: Literal["low", "medium", "high"]
    reversible: bool
    side_effects: bool
    # Law 3, taint by default: results are outside text unless `trusted_output = true` and
    # the declared outputs hold none (`metnos.mechanisms.executors.trust`). `untrusted_output` (the
    # old opt-in taint) is still read: it can only add taint, never remove it.
    trusted_output: bool = False
    untrusted_output: bool | None = None
    # what the host carries out from the run's validated result (the executor itself changes
    # nothing): "schedule_reminder" (metnos.features.reminders.effect); undone with the action
    effect: Literal["schedule_reminder", "notify", "summarize", "schedule_task"] | None = None
    # the account the host hands the run in its stdin envelope (never in the arguments, the
    # prompt, a log or the audit): "imap" is the `[mail]` account of `metnos mail add`
    account: Literal["imap"] | None = None
    # where it runs: None on this server; a place of `[remote] pools` (e.g. "laptop") sends
    # the step to that Prefect work pool, checked again there (SPEC §1 scale-out)
    runs_on: str | None = Field(None, pattern=NAME_RE.pattern)
    sandbox: SandboxProfile = Field(default_factory=SandboxProfile)
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
    outputs: dict[str, OutputSpec] = Field(default_factory=dict)
    description: dict[str, str]
    affinity: dict[str, tuple[str, ...]]
    utterances: dict[str, tuple[str, ...]]
    slots: dict[str, dict[str, dict[str, Scalar]]] = Field(default_factory=dict)
    wishes: dict[str, WishSpec] = Field(default_factory=dict)  # capability name → when

    @field_validator("entry")
    @classmethod
    def _plain_filename(cls, value: str) -> str:
        if not ENTRY_RE.match(value) or value in {".", ".."}:
            raise ValueError(f"entry must be a plain file name inside the folder: {value!r}")
        return value

    @field_validator("inputs", "outputs")
    @classmethod
    def _field_names(cls, table: dict[str, Any]) -> dict[str, Any]:
        for key in table:
            if not re.match(r"^[a-z][a-z0-9_]{0,40}$", key):
                raise ValueError(f"field name {key!r} must be lower_snake_case")
        return table

    @field_validator("description", "affinity", "utterances")
    @classmethod
    def _per_language(cls, table: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return _check_langs(table, f"[{info.field_name}]")

    @field_validator("slots")
    @classmethod
    def _slot_langs(cls, slots: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for slot, table in slots.items():
            if not re.match(r"^[a-z][a-z0-9_]{0,40}$", slot):
                raise ValueError(f"slot name {slot!r} must be lower_snake_case")
            _check_langs(table, f"slots.{slot}")
        return slots

    @field_validator("wishes")
    @classmethod
    def _capability_names(cls, table: dict[str, Any]) -> dict[str, Any]:
        for key in table:
            if not NAME_RE.match(key):
                raise ValueError(f"wished capability {key!r} must be lower_snake_case")
        return table

    @model_validator(mode="after")
    def _wishes_fit(self) -> Manifest:
        for capability, wish in self.wishes.items():
            out = self.outputs.get(wish.when)
            if out is None or out.type != "boolean":
                raise ValueError(f"wishes.{capability}.when must name a boolean output")
        return self

    @model_validator(mode="after")
    def _trust_provable(self) -> Manifest:
        """`trusted_output` only where the declared outputs leave no room for outside text."""
        if not self.trusted_output:
            return self
        if self.untrusted_output:
            raise ValueError("trusted_output and untrusted_output contradict each other")
        provable_trust(self.inputs, self.outputs)
        return self

    @property
    def outside_text(self) -> bool:
        """Whether a run's results are outside text (Law 3): yes unless proven otherwise."""
        return not self.trusted_output

    def result_holds_no_text(self, result: Any, args: Mapping[str, Any] | None = None) -> bool:
        """Whether one run's result keeps to the declared text-free outputs (checked on each
        run of a `trusted_output` executor: a result that strays taints the turn anyway);
        `args`: the step's arguments, which an `echo` output must give back unchanged."""
        return result_fits(result, self.outputs, args or {})

    @model_validator(mode="after")
    def _utterances_fit(self) -> Manifest:
        from metnos.mechanisms.executors._utterances import check_utterances

        check_utterances(self.utterances, set(self.inputs), self.slots)
        return self

    def tool_spec(self, lang: str) -> ToolSpec:
        """The executor as a planner tool, described in `lang` (descriptions fall back to en)."""
        planned = {name: spec for name, spec in self.inputs.items() if not spec.host_set}
        properties = {name: spec.json_schema(lang) for name, spec in planned.items()}
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": [name for name, spec in planned.items() if spec.is_required],
            "additionalProperties": False,
        }
        slot_values = {
            slot: dict(table_lang)
            for slot, table in self.slots.items()
            if (table_lang := _localised(table, lang)) is not None
        }
        return ToolSpec(
            name=self.name,
            description=_localised(self.description, lang) or self.description[FALLBACK_LANG],
            parameters=parameters,
            utterances=tuple(_localised(self.utterances, lang) or ()),
            affinity=tuple(_localised(self.affinity, lang) or ()),
            slot_values=slot_values,
            risk=self.risk,
            side_effects=self.side_effects,
            paths=tuple(name for name in self.path_inputs() if name in properties),
        )

    def input_schema(self) -> dict[str, dict[str, Any]]:
        """The `[inputs]` table as plain dicts (no descriptions), `required` made explicit:
        what `metnos.mechanisms.policy.validate_args` checks a model's arguments against. Inputs the
        host sets are left out: a planner passing one is refused."""
        return {
            name: {
                **spec.model_dump(exclude_none=True,
                                  exclude={"description", "host_set", "read_only"}),
                "required": spec.is_required,
            }
            for name, spec in self.inputs.items() if not spec.host_set
        }

    def path_inputs(self) -> dict[str, str]:
        """Input name → access (`read`|`write`) for every path-typed input."""
        return {name: spec.access for name, spec in self.inputs.items() if spec.access is not None}

    def host_checks(self) -> dict[str, str]:
        """Input name → the host-side check its value must pass (`check = "..."`)."""
        return {name: spec.check for name, spec in self.inputs.items() if spec.check is not None}

    @property
    def reversal(self) -> str:
        """How its changes are recorded and undone (`metnos.features.reversal`): on another machine,
        in a mailbox, by the host's effect's own undo, else its workspace files."""
        if self.runs_on is not None:
            return "remote"
        return "mailbox" if self.account else ("effect" if self.effect else "files")

    def changes(self, args: dict[str, Any]) -> bool:
        """Whether a run with `args` may change state: side-effecting, and no input holds one
        of its `read_only` values (`lists` with action "show" only reads)."""
        return self.side_effects and not any(
            spec.read_only is not None and args.get(name, spec.default) in spec.read_only
            for name, spec in self.inputs.items())

    @property
    def read_only(self) -> bool:
        """Neither changes state nor uses the network: may run beside other such calls."""
        return not self.side_effects and not self.sandbox.network

    def languages(self) -> list[str]:
        return sorted(self.description)


def parse_manifest(path: Path, data: bytes | None = None) -> Manifest:
    """Parse and validate `path` (a `manifest.toml`); the folder name must equal `name`.
    `data`: the file's content already read (so a caller hashes exactly the bytes parsed)."""
    folder = path.parent
    if data is None:
        try:
            data = manifest_bytes(path)
        except OSError as exc:
            detail = exc.strerror or str(exc)
            raise ManifestError(name=folder.name, path=str(path), detail=detail) from exc
    manifest = _validated(path, folder.name, data)
    if manifest.name != folder.name:
        detail = f"name {manifest.name!r} differs from the folder name {folder.name!r}"
        raise ManifestError(name=folder.name, path=str(path), detail=detail)
    entry = folder / manifest.entry
    if entry.is_symlink() or not entry.is_file():
        detail = f"entry {manifest.entry!r} is not a regular file in the folder"
        raise ManifestError(name=folder.name, path=str(path), detail=detail)
    return manifest


def manifest_bytes(path: Path) -> bytes:
    """The exact bytes of a manifest file, refusing oversize ones."""
    with path.open("rb") as fh:
        data = fh.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        detail = f"larger than {MAX_MANIFEST_BYTES} bytes"
        raise ManifestError(name=path.parent.name, path=str(path), detail=detail)
    return data


@functools.lru_cache(maxsize=512)
def _validated(path: Path, name: str, data: bytes) -> Manifest:
    """These bytes validated once per process (a frozen manifest, checks on its bytes alone):
    every gateway start re-reads every executor. Refusals are not kept: said every time."""
    try:
        return Manifest.model_validate(_load_toml(path, name, data))
    except ValidationError as exc:
        raise ManifestError(name=name, path=str(path), detail=_brief(exc)) from exc


def _load_toml(path: Path, name: str, data: bytes) -> dict[str, Any]:
    if len(data) > MAX_MANIFEST_BYTES:
        detail = f"larger than {MAX_MANIFEST_BYTES} bytes"
        raise ManifestError(name=name, path=str(path), detail=detail)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(name=name, path=str(path), detail=f"not valid TOML: {exc}") from exc


def _brief(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "manifest"
        parts.append(f"{loc}: {err['msg']}")
    more = exc.error_count() - 5
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
