"""An executor may not take the name of one of the loop's own tools (`wish`): signed or not,
it is refused with a reason, and the model's `wish` stays the built-in one."""

from __future__ import annotations

from metnos.mechanisms.executors.registry import load_registry
from tests.support.home import MakeHome
from tests.synt.support import install


def test_an_executor_named_like_a_built_in_tool_is_refused(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    install(home.settings, "wish", {"text": "tst_words"}, {"count": "tst_count"})
    registry = load_registry(home.settings)
    assert "wish" not in registry
    refused = registry.refusal("wish")
    assert refused is not None and refused.key == "ERR_EXECUTOR_NAME_RESERVED"
    assert "fs_read" in registry  # the others are admitted as before
