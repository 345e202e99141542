"""Plain words for a settings file that names a setting Metnos does not know.

`[gatway]` or `drain_ss = 3` in metnos.toml used to get pydantic's "Extra inputs are not
permitted". `unknown_key_error` turns that error into `ERR_CONFIG_UNKNOWN_KEY`: the file, the
key as written (`gateway.drain_ss`) and the closest known key ("did you mean drain_s?", by
`difflib`), or the keys known there when none is close. The message is written in the
language of whoever reads it (`metnos.ground.i18n.message(error, lang)`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from metnos.ground.errors import ConfigError

CUTOFF = 0.6  # difflib's default: "drain_ss" → "drain_s", "gatway" → "gateway"


def unknown_key_error(exc: ValidationError, model: type[BaseModel], path: Path,
                      prefix: str = "") -> ConfigError | None:
    """`ERR_CONFIG_UNKNOWN_KEY` for the first key of `exc` that `model` (the table the file's
    keys were given to, named `prefix` in the file) does not have; None when every problem
    is of another kind."""
    for err in exc.errors():
        if err["type"] != "extra_forbidden" or not err["loc"]:
            continue
        *parents, key = (str(part) for part in err["loc"])
        table = _table(model, parents)
        if table is None:
            continue
        known = sorted(table.model_fields)
        where = ".".join([*filter(None, [prefix.rstrip(".")]), *parents])
        return unknown_key(path, where, key, known)
    return None


def unknown_key(path: Path, where: str, key: str, known: Iterable[str]) -> ConfigError:
    """The error for `key` of table `where` ("" at the top), among the `known` keys."""
    names = list(known)
    close = difflib.get_close_matches(key, names, n=1, cutoff=CUTOFF)
    shown = f"{where}.{key}" if where else key
    if close:
        return ConfigError("ERR_CONFIG_UNKNOWN_KEY_SUGGEST", file=str(path), setting=shown,
                           suggestion=f"{where}.{close[0]}" if where else close[0])
    return ConfigError("ERR_CONFIG_UNKNOWN_KEY", file=str(path), setting=shown,
                       known=", ".join(names))


def _table(model: type[BaseModel], parents: list[str]) -> type[BaseModel] | None:
    """The model of the table at `parents` inside `model` (None when it is not a model)."""
    for name in parents:
        field = model.model_fields.get(name)
        kind = field.annotation if field is not None else None
        if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
            return None
        model = kind
    return model


def config_error(exc: ValidationError, model: type[BaseModel], path: Path,
                 prefix: str = "") -> ConfigError:
    """The settings' error in plain words: an unknown key named with its closest known one,
    else `ERR_CONFIG_INVALID` with each problem's place (`gateway.port`, not just `port`)."""
    unknown = unknown_key_error(exc, model, path, prefix)
    if unknown is not None:
        return unknown
    detail = "; ".join(f"{prefix}{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                       for err in exc.errors())
    return ConfigError("ERR_CONFIG_INVALID", detail=detail)
