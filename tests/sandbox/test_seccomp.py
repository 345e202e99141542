"""The seccomp program, run through a small classic-BPF interpreter for both architectures
(so aarch64 is checked on an x86_64 host too); the real filter is attacked in
tests/security/test_sandbox_attacks.py."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from metnos.mechanisms.sandbox import seccomp
from metnos.mechanisms.sandbox.bwrap import PythonRuntime, build_argv
from metnos.mechanisms.sandbox.profile import SandboxProfile
from tests.support.system import skip_or_fail

ALLOW, EPERM, KILL = 0x7FFF0000, 0x00050001, 0x80000000
TCGETS = 0x5401
PY = Path("/usr/bin/python3")


def run_bpf(code: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Evaluate a seccomp program on one `struct seccomp_data`; the return value."""
    full = (*args, *(0,) * (6 - len(args)))
    data = struct.pack("<iIQ6Q", nr, arch, 0, *full)
    insns = [struct.unpack("=HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = insns[pc]
        if op == 0x20:
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif op in (0x15, 0x35):
            hit = acc == k if op == 0x15 else acc >= k
            pc += 1 + (jt if hit else jf)
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_denied_calls_get_eperm_and_others_pass(machine: str) -> None:
    arch = seccomp._ARCHES[machine]
    code = seccomp.program(machine)
    assert code is not None and len(code) % 8 == 0
    nums = arch.numbers
    present = [name for name in seccomp.DENIED if name not in arch.absent]
    for name in present:
        assert run_bpf(code, nums[name], arch.audit) == EPERM, name
    harmless = set(range(0, 450)) - {nums[n] for n in present} - {nums["ioctl"]}
    assert all(run_bpf(code, nr, arch.audit) == ALLOW for nr in harmless)
    assert run_bpf(code, nums["ioctl"], arch.audit, (0, seccomp.TIOCSTI)) == EPERM
    assert run_bpf(code, nums["ioctl"], arch.audit, (0, seccomp.TIOCSTI | 1 << 32)) == EPERM
    assert run_bpf(code, nums["ioctl"], arch.audit, (0, TCGETS)) == ALLOW


def test_foreign_architecture_is_killed_and_x32_denied() -> None:
    x86 = seccomp.program("x86_64")
    assert x86 is not None
    assert run_bpf(x86, 1, 0x40000003) == KILL  # i386 audit arch: another syscall table
    assert run_bpf(x86, 0x40000000 | 101, 0xC000003E) == EPERM  # x32 ptrace
    arm = seccomp.program("aarch64")
    assert arm is not None and run_bpf(arm, 117, 0xC000003E) == KILL


def test_unknown_machine_has_no_program() -> None:
    assert seccomp.program("riscv64") is None


def test_argv_carries_the_filter_fd() -> None:
    common = {"bwrap": PY, "exec_dir_fd": 5, "workspace_fd": 6, "entry": "main.py",
              "python": PythonRuntime(executable=PY)}
    argv = build_argv(SandboxProfile(), seccomp_fd=9, **common)  # type: ignore[arg-type]
    i = argv.index("--seccomp")
    assert argv[i + 1] == "9" and i < argv.index("--")
    assert "--seccomp" not in build_argv(SandboxProfile(), **common)  # type: ignore[arg-type]


def test_program_fd_holds_the_program() -> None:
    fd = seccomp.program_fd()
    if fd is None:
        skip_or_fail("no seccomp filter for this machine")
    try:
        assert os.read(fd, 1 << 16) == seccomp.program()
    finally:
        os.close(fd)
