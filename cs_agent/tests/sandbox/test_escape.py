"""The escape suite: each probe is a small, harmless program of this project's own whose
success would prove a break out of the sandbox, run as the command of an allowed verdict.
Every one must fail, and say how it failed.

No probe changes anything outside the sandbox even when it "succeeds": the writes go to
files a test made for that purpose and removes. No attack string from any corpus is run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cs_agent import Executor, sandbox
from cs_agent.client import Verdict
from cs_agent.executor import RunResult

MARKER = "cs-escape-probe-secret-5f0c1d"


@pytest.fixture
def executor(workspace_root: Path) -> Executor:
    # The agent's own environment holds a secret the command must never see.
    environ = {"CS_TOKEN": MARKER, "LANG": "C.UTF-8", "PATH": os.environ["PATH"]}
    return Executor(None, workspace_root=str(workspace_root), environ=environ)  # type: ignore[arg-type]


def verdict(
    command: str,
    workspace_root: Path,
    *,
    effects: dict[str, list[str]] | None = None,
    network: str = "pod",
    memory_mb: int = 128,
) -> Verdict:
    context = workspace_root / "ctx-a"
    if effects is None:
        # The widest a command gets: anywhere in its context, no network judged.
        effects = {"read": [f"{context}/**"], "write": [f"{context}/**"], "network": []}
    return Verdict(
        True,
        "approved",
        operation={"kind": "shell", "command": command},
        execution={
            "isolation": "namespaces",
            "workspace": str(context),
            "memoryLimitMb": memory_mb,
            "timeLimitSeconds": 20,
            "network": network,
            "effects": effects,
        },
    )


def probe(executor: Executor, workspace_root: Path, source: str, **kwargs: Any) -> RunResult:
    context = workspace_root / "ctx-a"
    context.mkdir(exist_ok=True)
    (context / "probe.py").write_text(textwrap.dedent(source))
    return executor.execute(
        verdict("python3 probe.py", workspace_root, **kwargs), context_id="ctx-a"
    )


def lines(result: RunResult) -> list[str]:
    assert result.outcome == "exited", (result.outcome, result.message, result.stderr)
    return result.stdout.decode().splitlines()


LIBC = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def failed(name, returned):
    if returned == 0:
        print(f"ESCAPED: {name}")
    else:
        print(f"blocked: {name}: {errno.errorcode[ctypes.get_errno()]}")
"""


def test_the_double_chroot_fails_for_want_of_the_capability(
    executor: Executor, workspace_root: Path
) -> None:
    result = probe(
        executor,
        workspace_root,
        """
        import errno, os
        os.makedirs("jail", exist_ok=True)
        try:
            os.chroot("jail")
        except OSError as exc:
            print(f"blocked: chroot: {errno.errorcode[exc.errno]}")
        else:
            for _ in range(64):
                os.chdir("..")
            os.chroot(".")
            print("ESCAPED: " + ",".join(sorted(os.listdir("/"))))
        """,
    )

    assert lines(result) == ["blocked: chroot: EPERM"]


def test_pivot_root_mount_and_umount_are_refused(executor: Executor, workspace_root: Path) -> None:
    syscall_pivot_root = {"x86_64": 155, "aarch64": 41}[os.uname().machine]
    result = probe(
        executor,
        workspace_root,
        LIBC
        + f"""
os.makedirs("old", exist_ok=True)
failed("pivot_root", libc.syscall({syscall_pivot_root}, b".", b"old"))
failed("mount tmpfs", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
failed("remount /usr rw", libc.mount(None, b"/usr", None, 32 | 4096, None))
failed("umount /usr", libc.umount2(b"/usr", 2))
failed("unshare a new mount namespace", libc.unshare(0x00020000))
""",
    )

    assert lines(result) == [
        "blocked: pivot_root: EPERM",
        "blocked: mount tmpfs: EPERM",
        "blocked: remount /usr rw: EPERM",
        "blocked: umount /usr: EPERM",
        "blocked: unshare a new mount namespace: EPERM",
    ]


def test_no_capability_and_no_new_privileges_inside(
    executor: Executor, workspace_root: Path
) -> None:
    result = probe(
        executor,
        workspace_root,
        """
        status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
        for key in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs"):
            print(key, status[key].strip())
        """,
    )

    assert lines(result) == [
        "CapEff 0000000000000000",
        "CapPrm 0000000000000000",
        "CapBnd 0000000000000000",
        "NoNewPrivs 1",
    ]


@pytest.fixture
def outside(workspace_root: Path) -> Iterator[Path]:
    """A file of the agent's, next to the workspace: what an escape would reach."""
    path = workspace_root.parent / f"{workspace_root.name}-outside"
    path.write_text("outside\n")
    yield path
    path.unlink()


def start_time(pid: int) -> str:
    """The process's start time (clock ticks after boot), as /proc/PID/stat says it."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def test_proc_shows_only_the_commands_own_processes(
    executor: Executor, workspace_root: Path, outside: Path
) -> None:
    # A process of the agent's with the secret on its command line (as --token puts it).
    agent = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--token={MARKER}"]
    )
    # A process is known by its PID and its start time: in a Pod the agent's PID is small,
    # and the command's own namespace may have another process under the same number.
    me = (os.getpid(), start_time(os.getpid()))
    them = (agent.pid, start_time(agent.pid))
    try:
        result = probe(
            executor,
            workspace_root,
            f"""
            import os
            pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
            def started(pid):
                try:
                    return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[19]
                except OSError:
                    return None
            seen = {{(pid, started(pid)) for pid in pids}}
            print("agent pid visible", {them!r} in seen or {me!r} in seen)
            print("every pid small", all(pid < 100 for pid in pids))
            try:
                open("/proc/1/root{outside}").read()
                print("ESCAPED: /proc/1/root")
            except OSError as exc:
                print("blocked: /proc/1/root:", type(exc).__name__)
            seen = []
            for pid in pids:
                for name in ("cmdline", "environ"):
                    try:
                        if b"{MARKER}" in open(f"/proc/{{pid}}/{{name}}", "rb").read():
                            seen.append(f"{{pid}}/{{name}}")
                    except OSError:
                        pass
            print("secret seen in", seen)
            print("secret in own environment", "{MARKER}" in str(os.environ))
            """,
        )
    finally:
        agent.kill()
        agent.wait()

    assert lines(result) == [
        "agent pid visible False",
        "every pid small True",
        "blocked: /proc/1/root: PermissionError",
        "secret seen in []",
        "secret in own environment False",
    ]


def test_ptrace_is_refused_and_a_process_outside_is_not_there_to_find(
    executor: Executor, workspace_root: Path
) -> None:
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        result = probe(
            executor,
            workspace_root,
            LIBC
            + f'failed("ptrace attach", libc.ptrace(16, {agent.pid}, None, None))\n'
            + f'print("agent visible", os.path.exists("/proc/{agent.pid}"))\n',
        )
    finally:
        agent.kill()
        agent.wait()

    # The seccomp filter refuses ptrace itself; the PID namespace hides the agent anyway.
    assert lines(result) == ["blocked: ptrace attach: EPERM", "agent visible False"]


def test_links_in_the_context_do_not_lead_outside_it(
    executor: Executor, workspace_root: Path, outside: Path
) -> None:
    other = workspace_root / "ctx-b"
    other.mkdir()
    (other / "secret").write_text("b's data\n")
    context = workspace_root / "ctx-a"
    context.mkdir()
    (context / "to-b").symlink_to(other / "secret")
    (context / "to-outside").symlink_to(outside)

    result = probe(
        executor,
        workspace_root,
        f"""
        import errno, os
        for path in ("to-b", "to-outside", "../ctx-b/secret", "{outside}"):
            try:
                open(path).read()
                print("ESCAPED:", path)
            except OSError as exc:
                print("blocked:", path, errno.errorcode[exc.errno])
        for source in ("{other}/secret", "/etc/hostname"):
            try:
                os.link(source, "hard")
                print("ESCAPED: hard link to", source)
            except OSError as exc:
                print("blocked: hard link to", source, errno.errorcode[exc.errno])
        """,
    )

    assert lines(result) == [
        "blocked: to-b ENOENT",
        "blocked: to-outside ENOENT",
        "blocked: ../ctx-b/secret ENOENT",
        f"blocked: {outside} ENOENT",
        f"blocked: hard link to {other}/secret ENOENT",
        "blocked: hard link to /etc/hostname EXDEV",
    ]
    assert (other / "secret").read_text() == "b's data\n"
    assert sorted(p.name for p in context.iterdir()) == ["probe.py", "to-b", "to-outside"]


def test_a_context_directory_that_is_a_symbolic_link_is_refused(
    executor: Executor, workspace_root: Path
) -> None:
    other = workspace_root / "ctx-b"
    other.mkdir()
    (workspace_root / "ctx-a").symlink_to(other)

    result = executor.execute(verdict("echo x > f", workspace_root), context_id="ctx-a")

    assert (result.outcome, result.message) == (
        "error",
        f"{workspace_root}/ctx-a is a symbolic link: the agent does not follow it",
    )
    assert list(other.iterdir()) == []


def test_a_context_swapped_for_a_link_after_it_was_opened_is_not_followed(
    executor: Executor, workspace_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = workspace_root / "ctx-a"
    context.mkdir()
    other = workspace_root / "ctx-b"
    other.mkdir()
    opened = sandbox.open_context

    def open_then_swap(root: Path, context_id: str) -> int:
        # The race: between the check and the run, the directory becomes a link.
        fd = opened(root, context_id)
        context.rename(workspace_root / "ctx-a-moved")
        context.symlink_to(other)
        return fd

    monkeypatch.setattr(sandbox, "open_context", open_then_swap)

    result = executor.execute(verdict("echo x > f", workspace_root), context_id="ctx-a")

    assert (result.outcome, result.exit_status) == ("exited", 0)
    assert list(other.iterdir()) == []
    assert (workspace_root / "ctx-a-moved" / "f").read_text() == "x\n"


def test_nothing_but_the_context_and_tmp_is_writable_not_even_a_sub_mount(
    workspace_root: Path, outside: Path
) -> None:
    # A system directory with a file system mounted below it, as /etc/hosts or a
    # ConfigMap often is in a Pod: binding read-only must cover the sub-mount too.
    if os.geteuid() != 0:
        pytest.skip("making a sub-mount on this machine needs root")
    system = workspace_root.parent / f"{workspace_root.name}-system"
    (system / "sub").mkdir(parents=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "cs-probe", system / "sub"], check=True
    )
    try:
        executor = Executor(
            None,  # type: ignore[arg-type]
            workspace_root=str(workspace_root),
            system_dirs=(*sandbox.SYSTEM_DIRS, str(system)),
        )
        result = probe(
            executor,
            workspace_root,
            f"""
            import errno, os
            context = os.getcwd()
            mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
            targets = sorted(set(mounts) | {{"/", "{workspace_root}", "{system}/sub"}})
            for target in targets:
                path = os.path.join(target, "cs-probe-write")
                try:
                    with open(path, "x") as f:
                        f.write("x")
                    os.unlink(path)
                    print("writable", target)
                except OSError as exc:
                    if target.startswith(("/proc", "/dev")) or target in ("/", "{workspace_root}", "{system}", "{system}/sub", "/usr", "/etc", "/opt"):
                        print("refused", target, errno.errorcode[exc.errno])
                    else:
                        print("refused", target)
            """,
        )
    finally:
        subprocess.run(["umount", system / "sub"], check=True)
        (system / "sub").rmdir()
        system.rmdir()

    got = lines(result)
    assert f"refused {system}/sub EROFS" in got
    assert f"refused {system} EROFS" in got
    assert f"refused {workspace_root} EROFS" in got
    assert "refused / EROFS" in got
    assert "refused /usr EROFS" in got
    assert "refused /etc EROFS" in got
    writable = sorted(line.split()[1] for line in got if line.startswith("writable"))
    assert writable == sorted([str(workspace_root / "ctx-a"), "/dev/shm", "/tmp"])


def test_a_write_outside_the_context_fails_with_a_status(
    executor: Executor, workspace_root: Path
) -> None:
    result = executor.execute(
        verdict("touch ../next-to-ctx && echo landed", workspace_root), context_id="ctx-a"
    )

    assert (result.outcome, result.exit_status, result.stdout) == ("exited", 1, b"")
    assert result.stderr == b"touch: cannot touch '../next-to-ctx': Read-only file system\n"
    assert result.refused_effects == (
        {
            "action": "write",
            "path": f"{workspace_root}/next-to-ctx",
            "error": "Read-only file system",
            "reportedBy": "program",
        },
    )
    assert sorted(p.name for p in workspace_root.iterdir()) == ["ctx-a"]


def test_tmp_cannot_be_filled_past_its_size(executor: Executor, workspace_root: Path) -> None:
    result = probe(
        executor,
        workspace_root,
        """
        import errno
        written = 0
        try:
            with open("/tmp/fill", "wb") as f:
                while written < 200 * 1024 * 1024:
                    f.write(b"x" * 1024 * 1024)
                    f.flush()
                    written += 1024 * 1024
            print("ESCAPED: wrote", written)
        except OSError as exc:
            print("blocked:", errno.errorcode[exc.errno], "after", written // (1024 * 1024), "MiB")
        """,
        memory_mb=64,
    )

    # /tmp is half the memory limit: 32 MiB.
    assert lines(result) in (["blocked: ENOSPC after 31 MiB"], ["blocked: ENOSPC after 32 MiB"])


def test_forking_past_the_process_limit_fails(workspace_root: Path) -> None:
    executor = Executor(None, workspace_root=str(workspace_root), max_processes=16)  # type: ignore[arg-type]

    result = probe(
        executor,
        workspace_root,
        """
        import os, signal, time
        children, refused = [], 0
        for _ in range(40):
            try:
                pid = os.fork()
            except BlockingIOError:
                refused += 1
                continue
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        print("forked", len(children), "refused", refused)
        """,
    )

    if os.geteuid() == 0:
        # Root divides its own cgroup: sixteen in the run's cgroup, three of them already
        # there (bwrap, the init of its PID namespace, and the launcher that became bash
        # and then python3).
        assert result.process_enforcement == "cgroup"
        assert lines(result) == ["forked 13 refused 27"]
    else:
        # As the agent image runs in a Pod (tests/deploy/test_images_built.py): no cgroup of
        # its own to divide, so RLIMIT_NPROC holds the user's processes, the agent's own
        # among them: fewer than sixteen forks, the rest refused.
        assert result.process_enforcement == "rlimit"
        forked, refused = (int(word) for word in lines(result)[0].split()[1::2])
        assert (forked + refused, forked < 16, refused > 24) == (40, True, True)


def test_no_network_when_none_was_judged(
    executor: Executor, workspace_root: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]

    result = probe(
        executor,
        workspace_root,
        f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
            print("ESCAPED: connected")
        except OSError as exc:
            print("blocked:", type(exc).__name__)
        print("interfaces", sorted(name for _, name in socket.if_nameindex()))
        """,
    )

    assert lines(result) == ["blocked: ConnectionRefusedError", "interfaces ['lo']"]
    assert result.network == "none"
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing reached the agent's loopback


def test_git_run_inside_never_runs_what_a_repository_configures(
    executor: Executor, workspace_root: Path
) -> None:
    result = executor.execute(
        verdict(
            "git config --get safe.bareRepository; git config --get core.fsmonitor; "
            "git config --get core.hooksPath; git config --get protocol.ext.allow",
            workspace_root,
        ),
        context_id="ctx-a",
    )

    assert (result.exit_status, result.stdout) == (0, b"explicit\nfalse\n/dev/null\nnever\n")


def test_landlock_refuses_a_read_that_was_not_judged_and_the_report_names_it(
    executor: Executor, workspace_root: Path
) -> None:
    context = workspace_root / "ctx-a"
    context.mkdir()
    (context / "judged.txt").write_text("judged\n")
    (context / "second.txt").write_text("not judged\n")
    (context / "reader.py").write_text(
        "print(open('judged.txt').read(), end='')\nprint(open('second.txt').read(), end='')\n"
    )
    effects = {
        "read": [f"{context}/reader.py", f"{context}/judged.txt"],
        "write": [],
        "network": [],
    }

    result = executor.execute(
        verdict("python3 reader.py", workspace_root, effects=effects), context_id="ctx-a"
    )

    assert (result.outcome, result.exit_status, result.stdout) == ("exited", 1, b"judged\n")
    assert result.stderr.endswith(b"PermissionError: [Errno 13] Permission denied: 'second.txt'\n")
    assert result.refused_effects == (
        {
            "action": "read",
            "path": f"{context}/second.txt",
            "error": "Permission denied",
            "reportedBy": "program",
        },
    )


def test_bwrap_missing_stops_the_executor_with_a_clear_message(
    executor: Executor, workspace_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.bwrap_path.cache_clear()
    monkeypatch.setattr(sandbox, "SYSTEM_PATH", "/nonexistent")
    try:
        result = executor.execute(verdict("echo x > f", workspace_root), context_id="ctx-a")
    finally:
        sandbox.bwrap_path.cache_clear()

    assert (result.outcome, result.message) == (
        "error",
        "namespaces isolation needs bubblewrap (bwrap), which is not installed: install "
        "the bubblewrap package in the agent image",
    )
    assert not (workspace_root / "ctx-a").exists()


def test_without_a_memory_cgroup_nothing_runs_unless_a_limit_per_process_is_accepted(
    workspace_root: Path,
) -> None:
    refusing = Executor(
        None,  # type: ignore[arg-type]
        workspace_root=str(workspace_root),
        memory_cgroups=False,
        memory_rlimit=False,  # as without CS_EXECUTOR_MEMORY_RLIMIT (a Pod may set it)
    )

    result = refusing.execute(verdict("touch ran", workspace_root), context_id="ctx-a")

    assert (result.outcome, result.message) == (
        "error",
        "the memory limit (128 MB) cannot be held here: the executor cannot make a memory "
        "cgroup of its own (docs/agent-client.md, 'Limits'); set CS_EXECUTOR_MEMORY_RLIMIT=1 "
        "to accept it per process (RLIMIT_AS), where each process the command starts may use "
        "it all",
    )
    assert list((workspace_root / "ctx-a").iterdir()) == []


def test_without_a_cgroup_every_process_inherits_the_rlimits(workspace_root: Path) -> None:
    executor = Executor(
        None,  # type: ignore[arg-type]
        workspace_root=str(workspace_root),
        memory_cgroups=False,
        memory_rlimit=True,
        max_processes=32,
    )

    result = probe(
        executor,
        workspace_root,
        """
        import subprocess
        # A grandchild: what the command starts is held too.
        limits = subprocess.run(["cat", "/proc/self/limits"], capture_output=True, text=True).stdout
        for line in limits.splitlines():
            if line.startswith(("Max address space", "Max processes")):
                print(" ".join(line.split()[:-1]))
        """,
        memory_mb=256,
    )

    assert (result.memory_enforcement, result.process_enforcement) == ("rlimit", "rlimit")
    assert lines(result) == [
        "Max processes 32 32",
        f"Max address space {256 * 1024 * 1024} {256 * 1024 * 1024}",
    ]


def test_what_the_deny_rules_hide_cannot_be_read_even_inside_a_granted_tree(
    executor: Executor, workspace_root: Path
) -> None:
    # The contained allow (docs/rules.md): a run whose paths were only known at run time
    # gets the image; the paths deny rules forbid reading are left out of it. /etc/hostname
    # stands in for /etc/shadow, which Landlock leaves out the same way.
    context = workspace_root / "ctx-a"
    context.mkdir()
    (context / "notes.txt").write_text("notes\n")
    effects = {
        "read": ["/etc/**", f"{context}/**"],
        "write": [f"{context}/**"],
        "network": [],
        "hidden": ["/etc/hostname"],
    }
    command = "head -c 4 /etc/passwd; echo; cat notes.txt; cat /etc/hostname"

    result = executor.execute(verdict(command, workspace_root, effects=effects), context_id="ctx-a")

    assert (result.outcome, result.exit_status) == ("exited", 1)
    assert result.stdout == b"root\nnotes\n"
    assert result.stderr == b"cat: /etc/hostname: Permission denied\n"


def test_a_read_of_a_place_the_sandbox_does_not_mount_is_reported_as_refused(
    executor: Executor, workspace_root: Path
) -> None:
    """Issue 45: another context and the agent's home are not mounted, so a contained read
    there fails with ENOENT, and was never reported; a file missing inside the context is
    not a refusal, and stays unreported."""
    context = workspace_root / "ctx-a"
    context.mkdir()
    (workspace_root / "ctx-b").mkdir()
    (workspace_root / "ctx-b" / "secret.txt").write_text("other context\n")
    (context / "reader.py").write_text(
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path).read()\n"
        "    except OSError as error:\n"
        "        print(error, file=sys.stderr)\n"
    )
    effects = {"read": [f"{context}/**"], "write": [], "network": []}

    result = executor.execute(
        verdict(
            "python3 reader.py ../ctx-b/secret.txt /home/agent/.netrc missing.txt",
            workspace_root,
            effects=effects,
        ),
        context_id="ctx-a",
    )

    assert (result.outcome, result.exit_status) == ("exited", 0)
    assert result.stderr.decode().splitlines() == [
        "[Errno 2] No such file or directory: '../ctx-b/secret.txt'",
        "[Errno 2] No such file or directory: '/home/agent/.netrc'",
        "[Errno 2] No such file or directory: 'missing.txt'",
    ]
    assert result.refused_effects == tuple(
        {
            "action": "read",
            "path": path,
            "error": "No such file or directory (not in the sandbox)",
            "reportedBy": "program",
        }
        for path in (f"{workspace_root}/ctx-b/secret.txt", "/home/agent/.netrc")
    )
