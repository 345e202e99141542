"""The built-in executors: pinned by a committed lock, signed with the instance key at init.

No private key is ever committed. Instead `executors/BUILTIN.lock` (JSON) records, for each
executor shipped in the repository, its version and the SHA-256 of its manifest and code.
`metnos init` calls `sign_builtins`, which checks every built-in against the lock and only then
signs it with the instance's `executors` key. After a deliberate change to a built-in, run

    python -m metnos.mechanisms.executors.builtin --update-lock

and commit the new lock together with the change (a test asserts they agree).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from metnos.ground.errors import ManifestError, SignatureError
from metnos.ground.keys import load_private_key
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.registry import ExecutorSpec, discover_all
from metnos.mechanisms.executors.signing import (
    code_hash,
    sign_executor,
    signature_path,
    verify_executor,
)

LOCK_FILE = "BUILTIN.lock"
KEY_PURPOSE = "executors"
_LOCK_FIELDS = ("version", "manifest_sha256", "code_sha256")

Lock = dict[str, dict[str, str]]


def lock_path(executors_dir: Path | None = None) -> Path:
    return (executors_dir or resources_path("executors")) / LOCK_FILE


def read_lock(path: Path) -> Lock:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SignatureError("ERR_EXECUTOR_LOCK_UNREADABLE", path=str(path)) from exc
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and set(v) == set(_LOCK_FIELDS) for v in data.values()
    ):
        raise SignatureError("ERR_EXECUTOR_LOCK_UNREADABLE", path=str(path))
    return data


def lock_entry(spec: ExecutorSpec) -> dict[str, str]:
    """What the lock records for one executor, computed from its folder now."""
    return {
        "version": spec.manifest.version,
        "manifest_sha256": spec.manifest_sha256,
        "code_sha256": code_hash(spec.folder),
    }


def check_builtin(spec: ExecutorSpec, lock_file: Path | None = None) -> None:
    """Raise SignatureError unless `spec` is a built-in whose folder matches the lock."""
    lock = read_lock(lock_file or lock_path())
    expected = lock.get(spec.name)
    if expected is None:
        raise SignatureError("ERR_EXECUTOR_NOT_BUILTIN", name=spec.name)
    actual = lock_entry(spec)
    for key in _LOCK_FIELDS:
        if actual[key] != expected[key]:
            raise SignatureError("ERR_EXECUTOR_BUILTIN_MISMATCH", name=spec.name, field=key)


def sign_builtins(repo_executors_dir: Path, keys_dir: Path, signatures_dir: Path) -> list[str]:
    """Check every built-in against the lock, then sign the ones not yet validly signed.

    All are checked before any is signed, so a mismatch signs nothing. Idempotent: a valid
    existing signature is left alone. Returns the names signed by this call.
    """
    lock_file = lock_path(repo_executors_dir)
    lock = read_lock(lock_file)
    specs = _builtin_specs(repo_executors_dir, lock)
    for spec in specs:
        check_builtin(spec, lock_file)
    private_key = load_private_key(keys_dir, KEY_PURPOSE)
    public_key = private_key.public_key()
    signed: list[str] = []
    for spec in specs:
        sig = signature_path(signatures_dir, spec.name)
        try:
            verify_executor(spec.folder, public_key, sig)
            continue
        except SignatureError:
            pass
        sign_executor(spec.folder, private_key, sig)
        signed.append(spec.name)
    return signed


def build_lock(repo_executors_dir: Path) -> Lock:
    """The lock for every executor folder in `repo_executors_dir` (broken ones raise)."""
    specs, problems = discover_all([repo_executors_dir])
    if problems:
        raise ManifestError(problems[0].key, **problems[0].vars)
    return {spec.name: lock_entry(spec) for spec in sorted(specs, key=lambda s: s.name)}


def write_lock(repo_executors_dir: Path) -> Lock:
    lock = build_lock(repo_executors_dir)
    text = json.dumps(lock, indent=2, sort_keys=True) + "\n"
    lock_path(repo_executors_dir).write_text(text, encoding="utf-8")
    return lock


def _builtin_specs(repo_executors_dir: Path, lock: Lock) -> list[ExecutorSpec]:
    specs, problems = discover_all([repo_executors_dir])
    by_name = {spec.name: spec for spec in specs}
    for name in sorted(lock):
        if name not in by_name:
            problem = next((p for p in problems if p.name == name), None)
            if problem is not None:
                raise ManifestError(problem.key, **problem.vars)
            raise SignatureError("ERR_EXECUTOR_BUILTIN_MISSING", name=name)
    return [by_name[name] for name in sorted(lock)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metnos.mechanisms.executors.builtin")
    parser.add_argument("--update-lock", action="store_true", help="rewrite BUILTIN.lock")
    parser.add_argument("--dir", type=Path, default=resources_path("executors"))
    args = parser.parse_args(argv)
    if args.update_lock:
        lock = write_lock(args.dir)
        print(f"{lock_path(args.dir)}: {', '.join(lock)}")
        return 0
    current, committed = build_lock(args.dir), read_lock(lock_path(args.dir))
    if current != committed:
        changed = sorted(
            n for n in set(current) | set(committed) if current.get(n) != committed.get(n)
        )
        print(f"BUILTIN.lock is stale for: {', '.join(changed)}", file=sys.stderr)
        return 1
    print("BUILTIN.lock matches the tree")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
