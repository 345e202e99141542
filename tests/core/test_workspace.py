"""The workspace files reach the planner's prompt in a fixed order, capped."""

from __future__ import annotations

import os
from pathlib import Path

from metnos.mechanisms.workspace import FILES, prompt_context


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


def test_a_hard_linked_file_is_left_out_and_reported(tmp_path: Path) -> None:
    key = tmp_path / "id_rsa"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(key, ws / "MEMORY.md")
    (ws / "RULES.md").write_text("be kind")
    (ws / "SOUL.md").mkdir()  # not a plain file either
    refused: list[tuple[str, str]] = []
    out = prompt_context(ws, refused=lambda name, why: refused.append((name, why)))
    assert "PRIVATE KEY" not in out and "be kind" in out
    assert refused == [("SOUL.md", "not_a_file"), ("MEMORY.md", "hardlink")]


def test_a_fifo_does_not_hang_the_turn(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "USER.md")
    refused: list[tuple[str, str]] = []
    assert prompt_context(tmp_path, refused=lambda n, w: refused.append((n, w))) == ""
    assert refused == [("USER.md", "not_a_file")]


def test_a_failing_reporter_never_fails_the_turn(tmp_path: Path) -> None:
    (tmp_path / "IDENTITY.md").symlink_to(tmp_path / "nowhere")

    def broken(name: str, why: str) -> None:
        raise OSError("audit disk gone")

    assert prompt_context(tmp_path, refused=broken) == ""
