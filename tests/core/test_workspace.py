"""The workspace files reach the planner's prompt in a fixed order, capped."""

from __future__ import annotations

from pathlib import Path

from metnos.workspace import FILES, prompt_context


def test_fixed_order_caps_and_skips(tmp_path: Path) -> None:
    for name in reversed(FILES):
        (tmp_path / name).write_text(f"text of {name}\n")
    (tmp_path / "MEMORY.md").write_text("m" * 5000)
    (tmp_path / "USER.md").unlink()
    out = prompt_context(tmp_path, per_file=100, total=10_000)
    order = [line[4:] for line in out.splitlines() if line.startswith("### ")]
    assert order == ["IDENTITY.md", "SOUL.md", "TELOS.md", "RULES.md", "MEMORY.md"]
    assert out.endswith("m" * 100 + " […]")
    assert len(prompt_context(tmp_path, per_file=4000, total=300)) < 400


def test_a_symlinked_file_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "SOUL.md").symlink_to(secret)
    assert "TOP SECRET" not in prompt_context(ws)
