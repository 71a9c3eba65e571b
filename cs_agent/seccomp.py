"""The executor's seccomp filter: the system calls no everyday command needs and kernel
exploits usually start from, refused before the command starts.

bubblewrap loads it (``--seccomp FD``) just before it starts the launcher, so the launcher,
the egress bridge and the command all run under it; the kernel keeps it for everything
they start. It is built with libseccomp (the ``libseccomp2`` package, through ctypes: the
executor stays free of Python dependencies), which writes the classic-BPF program and
handles the architecture checks: a system call made through another ABI than the
machine's own (i386's ``int 0x80``, x32 on x86_64) kills the process.

Everything not listed in :data:`REFUSED` is allowed: the filter narrows the kernel's
surface, the namespaces and Landlock hold what is reached. What it refuses, and why, is
the table itself (docs/agent-client.md prints it):
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
from dataclasses import dataclass

_ACT_ALLOW = 0x7FFF0000
_ACT_KILL_PROCESS = 0x80000000
_FLTATR_ACT_BADARCH = 2
_CMP_NE = 1
_CMP_GE = 5
_CMP_EQ = 4
_CMP_MASKED_EQ = 7
_INT = 0xFFFFFFFF  # an int argument: the kernel reads only its low 32 bits

AF_UNIX, AF_INET, AF_NETLINK, AF_INET6 = 1, 2, 16, 10
AF_MAX = 46  # include/linux/socket.h: one past the last family the kernel knows
NETLINK_ROUTE = 0
# include/uapi/linux/sched.h: the flags that make a namespace.
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
CLONE_NEWTIME = 0x80  # unshare only: in clone()'s flags these bits are the exit signal
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
KEYCTL_JOIN_SESSION_KEYRING = 1


class SeccompError(Exception):
    """libseccomp is missing or refused to build the filter."""


@dataclass(frozen=True)
class Refusal:
    """System calls refused together, with the error they return and why."""

    calls: tuple[str, ...]
    error: int
    why: str


REFUSED = (
    Refusal(
        ("io_uring_setup", "io_uring_enter", "io_uring_register"),
        errno.EPERM,
        "io_uring: a second way into most of the kernel, behind much of 2022-24's kernel "
        "exploits; programs fall back to ordinary reads and writes",
    ),
    Refusal(("userfaultfd",), errno.EPERM, "the race-widening tool of many exploits"),
    Refusal(("bpf",), errno.EPERM, "loading programs into the kernel"),
    Refusal(("perf_event_open",), errno.EPERM, "performance counters: a kernel attack surface"),
    Refusal(
        ("add_key", "request_key", "keyctl"),
        errno.EPERM,
        "the kernel's keyrings: a command neither reads nor adds keys (keyctl only joins a "
        "fresh session keyring, with no name: the launcher's first step)",
    ),
    Refusal(
        ("ptrace", "process_vm_readv", "process_vm_writev"),
        errno.EPERM,
        "another process's memory and registers",
    ),
    Refusal(
        ("setns", "unshare", "clone", "clone3"),
        errno.EPERM,
        "new namespaces (unshare and clone with a CLONE_NEW* flag; clone3, whose flags a "
        "filter cannot read, answers ENOSYS so that the C library uses clone): a nested "
        "user namespace gives back the capabilities the sandbox dropped",
    ),
    Refusal(
        (
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "move_mount",
            "open_tree",
            "mount_setattr",
        ),
        errno.EPERM,
        "changing the file system's shape (already refused without capabilities)",
    ),
    Refusal(
        (
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "reboot",
            "swapon",
            "swapoff",
            "syslog",
            "acct",
            "quotactl",
            "uselib",
            "vhangup",
            "settimeofday",
            "clock_settime",
            "clock_adjtime",
            "open_by_handle_at",
        ),
        errno.EPERM,
        "the machine's own business (already refused without capabilities)",
    ),
    Refusal(
        ("ioctl",),
        errno.EPERM,
        "TIOCSTI and TIOCLINUX only: pushing input into a terminal",
    ),
    Refusal(
        ("socket", "socketpair"),
        errno.EAFNOSUPPORT,
        "every family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK's route queries "
        "(NETLINK_ROUTE): no packet sockets, no netfilter, no other protocol stacks",
    ),
)


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


@functools.cache
def _libseccomp() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        raise SeccompError(
            "the executor's seccomp filter needs libseccomp (install the libseccomp2 package "
            "in the agent image)"
        ) from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_attr_set.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32)
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    return lib


def _conditions(call: str) -> list[tuple[int, list[tuple[int, int, int, int]]]]:
    """For one system call: (the error, the comparisons that must all hold) per rule; an
    empty comparison list refuses every call."""
    refusal = next(r for r in REFUSED if call in r.calls)
    error = refusal.error
    if call == "keyctl":
        return [
            (error, [(0, _CMP_NE, KEYCTL_JOIN_SESSION_KEYRING, 0)]),
            (error, [(0, _CMP_EQ, KEYCTL_JOIN_SESSION_KEYRING, 0), (1, _CMP_NE, 0, 0)]),
        ]
    if call == "unshare":
        flags = [*NAMESPACE_FLAGS.values(), CLONE_NEWTIME]
        return [(error, [(0, _CMP_MASKED_EQ, flag, flag)]) for flag in flags]
    if call == "clone":
        return [(error, [(0, _CMP_MASKED_EQ, flag, flag)]) for flag in NAMESPACE_FLAGS.values()]
    if call == "clone3":
        return [(errno.ENOSYS, [])]
    if call == "ioctl":
        return [(error, [(1, _CMP_MASKED_EQ, _INT, request)]) for request in (TIOCSTI, TIOCLINUX)]
    if call in ("socket", "socketpair"):
        allowed = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}
        rules = [
            (error, [(0, _CMP_MASKED_EQ, _INT, family)])
            for family in range(AF_MAX)
            if family not in allowed
        ]
        # A family the kernel does not know yet, and anything with its high bits set
        # (which the kernel would cut to an int that the rules above did not compare).
        rules.append((error, [(0, _CMP_GE, AF_MAX, 0)]))
        rules.append(
            (error, [(0, _CMP_MASKED_EQ, _INT, AF_NETLINK), (2, _CMP_NE, NETLINK_ROUTE, 0)])
        )
        return rules
    return [(error, [])]


@functools.cache
def program() -> bytes:
    """The filter as the classic-BPF program bwrap's ``--seccomp`` reads."""
    lib = _libseccomp()
    context = lib.seccomp_init(_ACT_ALLOW)
    if not context:
        raise SeccompError("seccomp_init failed")
    try:
        if lib.seccomp_attr_set(context, _FLTATR_ACT_BADARCH, _ACT_KILL_PROCESS) < 0:
            raise SeccompError("could not make a foreign system-call ABI kill the process")
        for refusal in REFUSED:
            for call in refusal.calls:
                number = lib.seccomp_syscall_resolve_name(call.encode())
                if number < 0:
                    continue  # not a system call of this architecture
                for error, comparisons in _conditions(call):
                    array = (_ArgCmp * max(len(comparisons), 1))(
                        *(_ArgCmp(arg, op, a, b) for arg, op, a, b in comparisons)
                    )
                    added = lib.seccomp_rule_add_array(
                        context, _errno_action(error), number, len(comparisons), array
                    )
                    if added < 0:
                        raise SeccompError(
                            f"libseccomp refused a rule for {call}: {os.strerror(-added)}"
                        )
        read, write = os.pipe()
        try:
            exported = lib.seccomp_export_bpf(context, write)
            os.close(write)
            write = -1
            if exported < 0:
                raise SeccompError(f"seccomp_export_bpf failed: {os.strerror(-exported)}")
            chunks = []
            while chunk := os.read(read, 65536):
                chunks.append(chunk)
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)
        return b"".join(chunks)
    finally:
        lib.seccomp_release(context)


def program_fd() -> int:
    """A file descriptor holding :func:`program`, for one bwrap to read (the caller passes
    it and closes it)."""
    fd = os.memfd_create("cs-executor-seccomp", 0)
    data = program()
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
