"""The first program inside the sandbox: it finishes what only the inside can do, then
becomes the command.

Run by bubblewrap (after its mounts and its seccomp filter) as

    python3 -I -S launcher.py CONFIG_JSON PROGRAM ARGS...

where CONFIG_JSON is ``{"grants": [[path, rights], ...], "bridge": {"port": N, "socket":
PATH} or null}``. In order:

1. **A fresh session keyring** (``KEYCTL_JOIN_SESSION_KEYRING`` with no name, the one
   keyctl operation the seccomp filter lets through): nothing the agent keeps in its own
   session keyring can be searched for or read from inside, even where keyctl is allowed.
2. **Landlock** (``cs_agent/landlock.py``): the file accesses that were judged.
3. **The egress bridge**, when the run has a network: a process of its own, outside the
   command's process tree (double fork: the sandbox's init reaps it), that serves
   ``127.0.0.1:PORT`` in the sandbox's network namespace and relays each connection to the
   executor's proxy over the unix socket bound at PATH (``cs_agent/egress.py``). The port is
   listening before the command starts, and the bridge is held by the same Landlock rules.
4. ``exec`` of the command, which inherits all of it.

Any failure exits 126 before the command starts: it never runs with less held. Standard
library only: inside the sandbox there is only the image's Python.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

try:
    from cs_agent import landlock
except ImportError:  # inside the sandbox: a script, with landlock.py bound beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import landlock  # type: ignore[import-not-found,no-redef]

_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_JOIN_SESSION_KEYRING = 1
_ENOSYS = 38


def fresh_session_keyring() -> None:
    """Join a new anonymous session keyring (a kernel without keys has none to leave)."""
    number = _SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        raise OSError(f"no keyctl syscall number known for {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        errno = ctypes.get_errno()
        if errno != _ENOSYS:
            raise OSError(errno, "keyctl(KEYCTL_JOIN_SESSION_KEYRING)")


def start_bridge(port: int, socket_path: str) -> None:
    """Start the bridge (see the module's docstring). It listens before this returns: the
    socket is bound here and served by the forked process, so the command's first
    connection waits in the backlog rather than failing. Only the C modules ``_socket``
    and ``_thread`` are imported: every import is paid by each run's start (``socket``,
    ``threading`` and ``asyncio`` cost from 10 to 70 ms)."""
    import _socket

    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked children
        try:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            _serve(server, socket_path)
        finally:
            os._exit(1)
    server.close()
    os.waitpid(child, 0)


def _serve(server: Any, socket_path: str) -> None:  # pragma: no cover - inside the sandbox
    import _socket
    import _thread

    while True:
        try:
            fd, _ = server._accept()
        except OSError:
            continue
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        _thread.start_new_thread(_relay, (client, socket_path))


def _relay(client: Any, socket_path: str) -> None:  # pragma: no cover - inside the sandbox
    import _socket
    import _thread

    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_copy, (upstream, client, back))
    _copy(client, upstream, None)
    back.acquire()  # the other way is done too
    client.close()
    upstream.close()


def _copy(source: Any, target: Any, done: Any) -> None:  # pragma: no cover - inside
    try:
        while data := source.recv(65536):
            target.sendall(data)
        target.shutdown(1)  # SHUT_WR: half-close, the other way may still be talking
    except OSError:
        for end in (source, target):
            try:  # noqa: SIM105 - contextlib would be one more import for every run
                end.shutdown(2)  # SHUT_RDWR: unblocks the other way's recv
            except OSError:
                pass
    finally:
        if done is not None:
            done.release()


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        print("usage: launcher.py CONFIG_JSON PROGRAM [ARGS...]", file=sys.stderr)
        sys.exit(126)
    try:
        config = json.loads(argv[1])
        grants = [(str(path), list(names)) for path, names in config["grants"]]
        bridge = config.get("bridge")
        fresh_session_keyring()
        landlock.restrict(grants)
        if bridge is not None:
            start_bridge(int(bridge["port"]), str(bridge["socket"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"cs-executor: could not hold the command: {exc}", file=sys.stderr)
        sys.exit(126)
    os.execv(argv[2], argv[2:])  # noqa: S606 - the command, as judged, once held


if __name__ == "__main__":
    main(sys.argv)
