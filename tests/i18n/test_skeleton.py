"""The Jinja skeleton of a prompt: every language of a role shares it (SPEC §9.1)."""

from __future__ import annotations

import jinja2
import pytest
from jinja2 import meta

from metnos.ground.errors import ConfigError
from metnos.ground.i18n.skeleton import PromptTemplateError, compare, skeleton
from metnos.ground.paths import resources_path

EN = """{% block intro %}
Hello {{ user_message }}.
{% endblock %}
{% block tools %}
{% for t in tools %}
- {{ t.name }}: {{ t.description }}
{% endfor %}
{% endblock %}
{% block outro %}
{% if note %}Note: {{ note | trim }}{% endif %}
{% endblock %}
"""

# the notes' case: a translation that renamed a variable and an attribute, and swapped blocks
IT_BROKEN = """{% block intro %}
Ciao {{ user_msg }}.
{% endblock %}
{% block outro %}
{% if note %}Nota: {{ note | trim }}{% endif %}
{% endblock %}
{% block tools %}
{% for t in tools %}
- {{ t.name }}: {{ t.descrizione }}
{% endfor %}
{% endblock %}
"""


def _problems(en: str, other: str) -> dict[str, str]:
    found = compare(skeleton(en), skeleton(other))
    assert len({p.check for p in found}) == len(found), found  # one problem per aspect
    return {p.check: p.detail for p in found}


def test_the_notes_case_gives_three_named_problems() -> None:
    found = _problems(EN, IT_BROKEN)
    assert found == {
        "skeleton_variables": "variable user_message missing, user_msg unexpected",
        "skeleton_attributes": "attribute t.description missing, t.descrizione unexpected",
        "skeleton_blocks": "blocks in a different order: expected intro, tools, outro; "
                           "got intro, outro, tools",
    }
    assert all(p.enforced for p in compare(skeleton(EN), skeleton(IT_BROKEN)))


def test_undeclared_variables_alone_miss_the_renamed_attribute() -> None:
    env = jinja2.Environment()
    fixed = IT_BROKEN.replace("user_msg", "user_message")
    assert meta.find_undeclared_variables(env.parse(fixed)) == \
        meta.find_undeclared_variables(env.parse(EN))
    assert set(_problems(EN, fixed)) == {"skeleton_attributes", "skeleton_blocks"}


def test_a_faithful_translation_has_the_same_skeleton() -> None:
    it = EN.replace("Hello", "Ciao").replace("Note:", "Nota:")
    assert compare(skeleton(EN), skeleton(it)) == []


def test_attribute_paths_are_whole_chains_rooted_at_a_name() -> None:
    sk = skeleton('{{ a.b.c }} {{ x["k"] }} {{ y[0].z }} {{ f().w }} {{ m[n] }}')
    assert sk.attributes == {"a.b.c", "x.k", "y[0].z"}
    assert sk.variables == {"a", "x", "y", "f", "m", "n"}


def test_control_shape_filters_tests_and_templates_are_compared() -> None:
    base = "{% block b %}{% if x %}{{ x }}{% endif %}{% endblock %}"
    cases = {
        "{% block b %}{% if x %}{{ x }}{% else %}-{% endif %}{% endblock %}": "skeleton_shape",
        "{% block b %}{% for i in x %}{{ i }}{% endfor %}{% endblock %}": "skeleton_shape",
        "{% block b %}{% set y = 1 %}{% if x %}{{ x }}{% endif %}{% endblock %}":
            "skeleton_shape",
        "{% block b %}{% if x %}{{ x | upper }}{% endif %}{% endblock %}": "skeleton_filters",
        "{% block b %}{% if x is defined %}{{ x }}{% endif %}{% endblock %}": "skeleton_tests",
        "{% if x %}{% endif %}{% block b %}{% if x %}{{ x }}{% endif %}{% endblock %}":
            "skeleton_shape",
    }
    for text, check in cases.items():
        assert check in _problems(base, text), text
    included = skeleton('{% include "other.j2" %}{% include name %}')
    assert included.templates == {"other.j2", "<dynamic>"}


def test_nesting_is_part_of_the_shape() -> None:
    nested = skeleton("{% if a %}{% for i in a %}{{ i }}{% endfor %}{% endif %}")
    flat = skeleton("{% if a %}{% endif %}{% for i in a %}{{ i }}{% endfor %}")
    assert nested.shape == ("If", "If/For") and flat.shape == ("If", "For")
    assert "skeleton_shape" in {p.check for p in compare(nested, flat)}


def test_a_template_that_does_not_parse_is_a_config_error() -> None:
    with pytest.raises(PromptTemplateError) as caught:
        skeleton("{% if x %}never closed", role="planner", lang="it")
    assert isinstance(caught.value, ConfigError)
    assert caught.value.key == "ERR_PROMPT_TEMPLATE_INVALID"
    assert caught.value.vars["role"] == "planner" and caught.value.vars["lang"] == "it"
    assert "line 1" in caught.value.vars["detail"]
    with pytest.raises(PromptTemplateError) as unknown:
        skeleton("{{ x }")
    assert unknown.value.vars["role"] == "" and unknown.value.vars["lang"] == ""


def _roles() -> dict[str, dict[str, str]]:
    root = resources_path("prompts")
    found: dict[str, dict[str, str]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] not in "_."):
        for path in folder.glob("*.j2"):
            found.setdefault(path.stem, {})[folder.name] = path.read_text(encoding="utf-8")
    return found


def test_the_repository_has_roles() -> None:
    assert {"planner", "translator"} <= set(_roles())


@pytest.mark.parametrize("role", sorted(_roles()))
def test_every_role_has_english_and_italian_with_one_skeleton(role: str) -> None:
    langs = _roles()[role]
    assert {"en", "it"} <= set(langs), f"{role}: languages {sorted(langs)}"
    reference = skeleton(langs["en"], role=role, lang="en")
    assert reference.blocks, f"{role}: sections must be real Jinja blocks"
    for lang, text in langs.items():
        problems = compare(reference, skeleton(text, role=role, lang=lang))
        assert problems == [], f"{role}/{lang}: {problems}"
