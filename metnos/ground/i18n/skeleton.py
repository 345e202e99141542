"""The skeleton of a prompt template (SPEC §9.1): what every language of a role must share.

A translation may reword the prose; it may not change what the code feeds the template or
how the template is put together. `skeleton(source)` reads jinja2's AST (not only
`meta.find_undeclared_variables`, which misses `t.description` → `t.descrizione`):

- `variables`: the undeclared names the caller must pass;
- `attributes`: attribute paths rooted at a name (`t.description`, `r.path_prefix`, `a.b.c`;
  `x["k"]` is spelled `x.k`, `x[0]` stays `x[0]`);
- `blocks`: block names in document order;
- `shape`: the control tags outside blocks, and `block_shapes` the ones inside each block,
  in document order, each written with its enclosing tags (`If/For`), so two swapped blocks
  are one difference (their order), not three;
- `filters`, `tests`, `templates` (referenced by include/import/extends).

`compare(expected, got)` names each difference as a `Problem`. `Problem` lives here, the
lowest layer; `metnos.features.languages.checks` re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import SandboxedEnvironment

from metnos.ground.errors import ConfigError


class PromptTemplateError(ConfigError):
    """A prompt template (or a candidate translation of one) that is not valid Jinja."""

    key = "ERR_PROMPT_TEMPLATE_INVALID"


@dataclass(frozen=True)
class Problem:
    """One failed check. `enforced` problems reject a candidate before any review."""

    check: str
    detail: str
    enforced: bool = True


@dataclass(frozen=True)
class Skeleton:
    variables: frozenset[str] = frozenset()
    attributes: frozenset[str] = frozenset()
    blocks: tuple[str, ...] = ()
    shape: tuple[str, ...] = ()
    block_shapes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    filters: frozenset[str] = frozenset()
    tests: frozenset[str] = frozenset()
    templates: frozenset[str] = frozenset()


# Tags whose kind and nesting make the control shape; Block is a marker in its parent.
_CONTROL: tuple[type[nodes.Node], ...] = (
    nodes.For, nodes.If, nodes.Macro, nodes.CallBlock, nodes.Include, nodes.Extends,
    nodes.FilterBlock, nodes.With, nodes.Assign, nodes.AssignBlock, nodes.Import,
    nodes.FromImport, nodes.Block, nodes.Scope,
)
_TAG_NAMES: dict[type[nodes.Node], str] = {nodes.Assign: "Set", nodes.AssignBlock: "Set"}


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The environment prompts are parsed and rendered with (the loader uses it too)."""
    return SandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def parse(source: str, *, role: str = "", lang: str = "") -> nodes.Template:
    """The AST of `source`; PromptTemplateError when it does not parse."""
    try:
        return environment().parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise PromptTemplateError(role=role, lang=lang,
                                  detail=f"line {exc.lineno}: {exc.message}") from exc


def skeleton(source: str, *, role: str = "", lang: str = "") -> Skeleton:
    """The skeleton of a template text; PromptTemplateError when it does not parse."""
    return skeleton_of(parse(source, role=role, lang=lang))


def skeleton_of(ast: nodes.Template) -> Skeleton:
    attributes: set[str] = set()
    _collect_paths(ast, attributes)
    shapes: dict[str, list[str]] = {}
    top: list[str] = []
    _collect_shape(ast, (), top, shapes)
    return Skeleton(
        variables=frozenset(meta.find_undeclared_variables(ast)),
        attributes=frozenset(attributes),
        blocks=tuple(b.name for b in ast.find_all(nodes.Block)),
        shape=tuple(top),
        block_shapes={name: tuple(items) for name, items in shapes.items()},
        filters=frozenset(f.name for f in ast.find_all(nodes.Filter)),
        tests=frozenset(t.name for t in ast.find_all(nodes.Test)),
        templates=frozenset(t or "<dynamic>" for t in meta.find_referenced_templates(ast)),
    )


def tag_kinds(sk: Skeleton) -> frozenset[str]:
    """Every kind of control tag used anywhere (`If`, `For`, `Set`, `Include`, …)."""
    items = [*sk.shape, *(i for shape in sk.block_shapes.values() for i in shape)]
    return frozenset(i.rsplit("/", 1)[-1].split(":", 1)[0] for i in items)


def compare(expected: Skeleton, got: Skeleton) -> list[Problem]:
    """What `got` does differently from `expected`; [] when the skeletons agree."""
    problems = [
        *_set_problem("skeleton_variables", "variable", expected.variables, got.variables),
        *_set_problem("skeleton_attributes", "attribute", expected.attributes, got.attributes),
        *_block_problems(expected.blocks, got.blocks),
        *_shape_problems(expected, got),
        *_set_problem("skeleton_filters", "filter", expected.filters, got.filters),
        *_set_problem("skeleton_tests", "test", expected.tests, got.tests),
        *_set_problem("skeleton_templates", "template", expected.templates, got.templates),
    ]
    return problems


def _path(node: nodes.Node) -> str | None:
    """`a.b.c` for a chain of constant attribute/item lookups rooted at a name, else None."""
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        root = _path(node.node)
        return None if root is None else f"{root}.{node.attr}"
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
        root = _path(node.node)
        key = node.arg.value
        if root is None:
            return None
        return f"{root}.{key}" if isinstance(key, str) else f"{root}[{key!r}]"
    return None


def _collect_paths(node: nodes.Node, found: set[str]) -> None:
    if isinstance(node, nodes.Getattr | nodes.Getitem):
        path = _path(node)
        if path is not None:
            found.add(path)
            return  # the longest path is recorded; its prefixes are implied
    for child in node.iter_child_nodes():
        _collect_paths(child, found)


def _label(node: nodes.Node) -> str:
    name = _TAG_NAMES.get(type(node), type(node).__name__)
    if isinstance(node, nodes.If):
        name += f":elif{len(node.elif_)}" if node.elif_ else ""
        name += ":else" if node.else_ else ""
    elif isinstance(node, nodes.For) and node.else_:
        name += ":else"
    elif isinstance(node, nodes.Macro):
        name += f":{node.name}"
    return name


def _collect_shape(node: nodes.Node, trail: tuple[str, ...], out: list[str],
                   shapes: dict[str, list[str]]) -> None:
    for child in node.iter_child_nodes():
        if isinstance(child, nodes.Block):
            out.append("/".join((*trail, "Block")))
            shapes[child.name] = []
            _collect_shape(child, (), shapes[child.name], shapes)
        elif isinstance(child, _CONTROL):
            here = (*trail, _label(child))
            out.append("/".join(here))
            _collect_shape(child, here, out, shapes)
        else:
            _collect_shape(child, trail, out, shapes)


def _diff(expected: frozenset[str], got: frozenset[str]) -> Iterator[str]:
    missing, extra = sorted(expected - got), sorted(got - expected)
    if missing:
        yield f"{', '.join(missing)} missing"
    if extra:
        yield f"{', '.join(extra)} unexpected"


def _set_problem(check: str, what: str, expected: frozenset[str],
                 got: frozenset[str]) -> list[Problem]:
    parts = list(_diff(expected, got))
    return [Problem(check, f"{what} " + ", ".join(parts))] if parts else []


def _block_problems(expected: tuple[str, ...], got: tuple[str, ...]) -> list[Problem]:
    if expected == got:
        return []
    if set(expected) != set(got):
        parts = ", ".join(_diff(frozenset(expected), frozenset(got)))
        return [Problem("skeleton_blocks", f"block {parts}")]
    return [Problem("skeleton_blocks", f"blocks in a different order: expected "
                    f"{', '.join(expected)}; got {', '.join(got)}")]


def _shape_problems(expected: Skeleton, got: Skeleton) -> list[Problem]:
    problems: list[Problem] = []
    if expected.shape != got.shape:
        problems.append(Problem("skeleton_shape", "tags outside blocks differ: expected "
                                f"{_seq(expected.shape)}; got {_seq(got.shape)}"))
    for name in expected.blocks:
        want, have = expected.block_shapes.get(name), got.block_shapes.get(name)
        if have is not None and want != have:
            problems.append(Problem("skeleton_shape", f"tags of block {name} differ: "
                                    f"expected {_seq(want or ())}; got {_seq(have)}"))
    return problems


def _seq(items: tuple[str, ...]) -> str:
    return " ".join(items) if items else "(none)"
