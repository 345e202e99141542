"""Whether an executor's results can be trusted to hold no outside text (Law 3, taint by
default): the shapes a manifest may declare under `trusted_output` (numbers, booleans,
enums, formatted times, the step's own argument handed back) and the check of each result
against them. `metnos.mechanisms.executors.manifest` refuses a trusted manifest whose outputs could
carry text, and the runner taints a turn whose result strays from its declared shape.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metnos.mechanisms.executors.manifest import InputSpec, OutputSpec

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "path": (str,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
}


def holds_no_text(out: OutputSpec) -> bool:
    """Whether an output's declared shape admits no outside text."""
    if out.echo is not None or out.type in ("integer", "number", "boolean"):
        return True
    if out.type == "string":
        return out.enum is not None or out.kind in TRUSTED_STRING_KINDS
    return False


def text_free(value: Any, out: OutputSpec, args: Mapping[str, Any]) -> bool:
    """Whether `value` is what a text-free output declares (None: the output is absent)."""
    if value is None:
        return True
    if out.echo is not None:  # the step's own argument given back, nothing more
        given = args.get(out.echo)
        if not isinstance(value, str) or not isinstance(given, str):
            return value == given and isinstance(value, (int, float, bool))
        return value == given or (out.type == "path"
                                  and posixpath.normpath(value) == posixpath.normpath(given))
    if out.enum is not None:
        return value in out.enum and not isinstance(value, (list, dict))
    if out.type == "string":
        return isinstance(value, str) and bool(_FORMATTED_TIME.fullmatch(value))
    return fits(value, out.type) and not (isinstance(value, float) and value != value)


# a formatted time, date or duration: digits and the separators ISO 8601 uses, nothing else
_FORMATTED_TIME = re.compile(r"[0-9TZPWYMDHS:+.\- ]{1,40}")


def fits(value: Any, kind: str) -> bool:
    if kind != "boolean" and isinstance(value, bool):
        return False
    return isinstance(value, _PY_TYPES[kind])


# the output kinds whose strings the host can tell hold no outside text: a formatted time
TRUSTED_STRING_KINDS = frozenset({"datetime", "date", "time", "duration"})


def provable_trust(inputs: Mapping[str, InputSpec], outputs: Mapping[str, OutputSpec]) -> None:
    """Raise ValueError unless every declared output leaves no room for outside text."""
    for name, out in outputs.items():
        spec = inputs.get(out.echo) if out.echo is not None else None
        if out.echo is not None and (spec is None or spec.type != out.type):
            raise ValueError(f"outputs.{name}.echo must name an input of type {out.type}")
    wordy = [name for name, out in outputs.items() if not holds_no_text(out)]
    if wordy:
        raise ValueError(f"trusted_output: outputs {', '.join(wordy)} may carry outside "
                         "text (only numbers, booleans, enums and formatted times may)")


def result_fits(result: Any, outputs: Mapping[str, OutputSpec],
                args: Mapping[str, Any]) -> bool:
    """Whether one run's result keeps to the declared text-free outputs."""
    if not isinstance(result, dict):
        return False
    return all(out is not None and holds_no_text(out) and text_free(value, out, args)
               for out, value in ((outputs.get(key), v) for key, v in result.items()))
