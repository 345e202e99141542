"""A seccomp filter for every sandbox, built in pure Python and handed to `bwrap --seccomp FD`.

Defence in depth on top of the namespaces (notes/security.md §1, Flatpak's and Codex's lists):
the kernel interfaces an executor never needs and an exploit often does answer EPERM: tracing
(`ptrace`, `process_vm_*`), mounting and root changes (`mount`, `umount2`, `pivot_root`,
`chroot`, the new mount API), namespaces (`unshare`, `setns`), keyrings, `bpf`,
`perf_event_open`, `userfaultfd`, io_uring, kexec and kernel modules, and `ioctl(TIOCSTI)`
(terminal injection; `--new-session` already takes the terminal away). Hard links too
(`link`, `linkat`; issue 25): the path policy refuses a file with a second name (it may be a
planted link to a secret), so a link made inside (`cp -l`, `ln`) would lock the owner's own
files out of every `fs_*` tool; copies, renames and symbolic links still work.

The program is a classic BPF array of `struct sock_filter` (`u16 code; u8 jt; u8 jf; u32 k`)
over `struct seccomp_data` (`int nr; u32 arch; u64 ip; u64 args[6]`). A process of another
architecture is killed (else a 32-bit syscall table would bypass the numbers), and on x86_64
the x32 ABI (`nr | 0x40000000`) is denied. Only x86_64 and aarch64 are known; elsewhere
`program()` returns None and the sandbox runs without this layer (the namespaces still hold).
"""

from __future__ import annotations

import os
import platform
import struct
from dataclasses import dataclass

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_KILL_PROCESS = 0x80000000
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_OFF_NR, _OFF_ARCH, _OFF_ARG1_LOW = 0, 4, 24  # little-endian seccomp_data
_X32_BIT = 0x40000000
TIOCSTI = 0x5412

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
    "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "unshare", "setns", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "link", "linkat",
)


@dataclass(frozen=True, slots=True)
class _Arch:
    audit: int
    numbers: dict[str, int]
    x32: bool = False
    absent: frozenset[str] = frozenset()  # denied calls this architecture does not have


_COMMON = {  # the same number on both (asm-generic for new syscalls)
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
}
_ARCHES = {  # from <asm/unistd_64.h> and <asm-generic/unistd.h>
    "x86_64": _Arch(0xC000003E, {
        **_COMMON, "ioctl": 16, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "mount": 165, "umount2": 166, "pivot_root": 155,
        "chroot": 161, "unshare": 272, "setns": 308, "keyctl": 250, "add_key": 248,
        "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "link": 86, "linkat": 265}, x32=True),
    "aarch64": _Arch(0xC00000B7, {
        **_COMMON, "ioctl": 29, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "unshare": 97, "setns": 268, "keyctl": 219, "add_key": 217, "request_key": 218,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "linkat": 37}, absent=frozenset({"link"})),  # libc's link() is linkat there
}


def program(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (default: this host's), or None when it is not supported."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    head = [(_LD_W_ABS, 0, 0, _OFF_ARCH), (_JEQ_K, 1, 0, arch.audit), (_RET_K, 0, 0,
            _RET_KILL_PROCESS), (_LD_W_ABS, 0, 0, _OFF_NR)]
    # Jumps are relative and filled in once the positions of ALLOW and DENY are known.
    body: list[tuple[int, str, str, int]] = []
    if arch.x32:
        body.append((_JGE_K, "deny", "next", _X32_BIT))
    body += [(_JEQ_K, "deny", "next", arch.numbers[name]) for name in DENIED
             if name not in arch.absent]
    body.append((_JEQ_K, "next", "allow", arch.numbers["ioctl"]))
    body.append((_LD_W_ABS, "next", "next", _OFF_ARG1_LOW))
    body.append((_JEQ_K, "deny", "next", TIOCSTI))
    allow = len(head) + len(body)
    deny = allow + 1
    targets = {"allow": allow, "deny": deny}
    code = list(head)
    for offset, (op, jt, jf, k) in enumerate(body, start=len(head)):
        rel = {name: pos - offset - 1 for name, pos in targets.items()} | {"next": 0}
        code.append((op, rel[jt], rel[jf], k))
    code += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_EPERM)]
    return b"".join(struct.pack("=HBBI", *insn) for insn in code)


def program_fd(machine: str | None = None) -> int | None:
    """A memfd holding the program, positioned at 0 (bwrap reads it to EOF);
    None when there is no program for this machine. The caller closes it."""
    code = program(machine)
    if code is None:
        return None
    fd = os.memfd_create("metnos-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, code)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
