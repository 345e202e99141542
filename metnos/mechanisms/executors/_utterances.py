"""Checks on a manifest's hassil utterance templates (the embedded planner's sentences).

A template may reference `{input}` (a wildcard captured into that input) or
`{slot:input}` (the phrases of `[slots.<slot>]` in that language, captured into `input`).
Rule references (`<rule>`) are refused: the embedded planner defines no expansion rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hassil import Group, ListReference, RuleReference, parse_sentence
from hassil.expression import Expression


def check_utterances(
    utterances: dict[str, tuple[str, ...]],
    inputs: set[str],
    slots: dict[str, dict[str, Any]],
) -> None:
    """Raise ValueError naming the first template that does not parse or does not fit."""
    for lang, templates in utterances.items():
        for template in templates:
            try:
                sentence = parse_sentence(template)
            except Exception as exc:  # hassil raises several parse error types
                raise ValueError(f"utterances.{lang}: cannot parse {template!r}: {exc}") from exc
            for ref in _references(sentence.expression):
                _check_reference(ref, lang, template, inputs, slots)


def filled_inputs(templates: Iterable[str]) -> set[str]:
    """The inputs these templates capture (`{input}`, `{slot:input}`); a template that does
    not parse fills nothing."""
    found: set[str] = set()
    for template in templates:
        try:
            sentence = parse_sentence(template)
        except Exception:  # hassil raises several parse error types  # noqa: S112
            continue
        found.update(ref.slot_name for ref in _references(sentence.expression)
                     if isinstance(ref, ListReference))
    return found


def _check_reference(
    ref: Expression, lang: str, template: str, inputs: set[str], slots: dict[str, Any]
) -> None:
    where = f"utterances.{lang} {template!r}"
    if isinstance(ref, RuleReference):
        raise ValueError(f"{where}: rule references <{ref.rule_name}> are not supported")
    assert isinstance(ref, ListReference)
    if ref.slot_name not in inputs:
        raise ValueError(f"{where}: {{{ref.slot_name}}} is not an input of the executor")
    if ref.list_name in slots:
        if lang not in slots[ref.list_name]:
            raise ValueError(f"{where}: slots.{ref.list_name} has no {lang!r} phrases")
    elif ref.list_name != ref.slot_name:
        raise ValueError(f"{where}: there is no [slots.{ref.list_name}] table")


def _references(expr: Expression) -> Iterator[Expression]:
    if isinstance(expr, ListReference | RuleReference):
        yield expr
    elif isinstance(expr, Group):
        for item in expr.items:
            yield from _references(item)
