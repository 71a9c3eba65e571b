"""Landlock for the executor: hold a command to the file accesses that were judged.

Applied inside the bubblewrap sandbox by its launcher (``cs_agent/launcher.py``), after
the mounts are made (a Landlock-restricted process may no longer mount anything, so bwrap
itself cannot be restricted first): grants are ``[[path, rights], ...]`` with rights from
``RIGHTS``' names; :func:`restrict` sets no-new-privs, then one ruleset with every
file-system right the kernel knows handled, and everything the process then starts
inherits it. A path that does not exist, or is a symbolic link (its target was not
judged), grants nothing.

It is also imported by the executor, for ``abi()`` and the names of the rights; it uses
the standard library only, because inside the sandbox only the image's Python is there.
"""

from __future__ import annotations

import ctypes
import os

_SYS_CREATE_RULESET = 444  # the same number on every architecture Linux has
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# File-system rights (include/uapi/linux/landlock.h), with the ABI that introduced them.
RIGHTS = {
    "execute": (1 << 0, 1),
    "write_file": (1 << 1, 1),
    "read_file": (1 << 2, 1),
    "read_dir": (1 << 3, 1),
    "remove_dir": (1 << 4, 1),
    "remove_file": (1 << 5, 1),
    "make_char": (1 << 6, 1),
    "make_dir": (1 << 7, 1),
    "make_reg": (1 << 8, 1),
    "make_sock": (1 << 9, 1),
    "make_fifo": (1 << 10, 1),
    "make_block": (1 << 11, 1),
    "make_sym": (1 << 12, 1),
    "refer": (1 << 13, 2),
    "truncate": (1 << 14, 3),
    "ioctl_dev": (1 << 15, 5),
}
# The rights that apply to a file itself (the others only to what is below a directory).
FILE_RIGHTS = frozenset({"execute", "write_file", "read_file", "truncate", "ioctl_dev"})
# Scopes (ABI 6): no signals to, and no abstract unix sockets of, processes outside.
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_SCOPE_SIGNAL = 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The Landlock ABI this kernel offers; 0 when it has none (or it is switched off)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _mask(names: list[str] | set[str] | frozenset[str], version: int) -> int:
    return sum(RIGHTS[name][0] for name in names if RIGHTS[name][1] <= version)


def restrict(grants: list[tuple[str, list[str]]]) -> int:
    """Restrict this process to ``grants``; returns the ABI used. Raises OSError."""
    version = abi()
    if version < 1:
        raise OSError("Landlock is not available in this kernel")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    # Scopes are only known from ABI 6; the struct's size tells the kernel which fields
    # are there (an older kernel refuses a larger struct with non-zero extra fields).
    attr = _RulesetAttr(_mask(set(RIGHTS), version), 0, 0)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else 16
    if version >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, names in grants:
            if os.path.islink(path):
                continue  # what a link points to was not judged: the link grants nothing
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # nothing there to grant
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
                usable = names if is_dir else [name for name in names if name in FILE_RIGHTS]
                allowed = _mask(usable, version)
                if not allowed:
                    continue
                rule = _PathBeneathAttr(allowed, fd)
                if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0):
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return version
