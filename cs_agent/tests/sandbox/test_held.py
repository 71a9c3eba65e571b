"""What the contained allow promises, probed where a review found it broken: the agent
cannot be taken over from a ctx, the network is the proxy's and only to the hosts
judged, nothing a run writes makes a later run start other code or reach further, the
agent's keys stay its own, a ctx cannot hang the agent, refusals are facts, the kernel
surface is filtered, and limits are what they say.

Every probe is a small harmless program of this file's own (canary files, loopback ports
this test opens and nothing else; no attack string from any corpus is run), and each
asserts how it failed. The service is not needed: the verdicts are written here as the
service sends them.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cs_agent import Executor
from cs_agent.client import Verdict
from cs_agent.executor import RunResult
from cs_agent.workspace import directory_size

REPOSITORY = Path(__file__).resolve().parents[3]
DOCKERFILE = REPOSITORY / "deploy" / "agent" / "Dockerfile"
PYPI = {"hosts": ["pypi.org", "files.pythonhosted.org"], "blocked": ["*.internal"]}


def allowed(
    command: str,
    ctx: Path,
    *,
    network: list[str] | None = None,
    egress: dict[str, Any] | None = None,
    reads: list[str] | None = None,
) -> Verdict:
    """An allowed verdict as the service sends it: by default what a contained run gets
    (anywhere in its context) and, with ``network``, those hosts under ``egress``."""
    effects = {
        "read": reads if reads is not None else [f"{ctx}/**"],
        "write": [f"{ctx}/**"],
        "network": network or [],
    }
    execution: dict[str, Any] = {
        "isolation": "namespaces",
        "workspace": str(ctx),
        "memoryLimitMb": 256,
        "timeLimitSeconds": 30,
        "network": "pod",
        "effects": effects,
    }
    if egress is not None:
        execution["egress"] = {"ports": [80, 443], **egress}
    return Verdict(True, "allow", operation={"kind": "shell", "command": command},
                   execution=execution)  # fmt: skip


def ran(result: RunResult) -> list[str]:
    """The lines a run printed, once it exited 0."""
    assert (result.outcome, result.exit_status) == ("exited", 0), (result.message, result.stderr)
    return result.stdout.decode().splitlines()


@pytest.fixture
def executor(workspace_root: Path) -> Executor:
    return Executor(None, workspace_root=str(workspace_root), environ={"LANG": "C.UTF-8"})  # type: ignore[arg-type]


@pytest.fixture
def ctx(workspace_root: Path) -> Path:
    path = workspace_root / "ctx-a"
    path.mkdir()
    return path


def nothing_connected(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return True
    return False


def script(ctx: Path, name: str, source: str) -> str:
    (ctx / name).write_text(textwrap.dedent(source))
    return f"python3 {name}"


# --- 1. The agent cannot be taken over from a ctx -----------------------------------------


def _image_settings() -> tuple[str, dict[str, str]]:
    """The agent image's working directory and environment, as deploy/agent/Dockerfile
    sets them (its ENV lines, continued with backslashes)."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    workdir = re.findall(r"^WORKDIR (\S+)", text, re.MULTILINE)[-1]
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", text, re.MULTILINE):
        env.update(dict(pair.split("=", 1) for pair in line.split()))
    return workdir, env


def test_a_context_named_like_the_agents_own_package_is_never_imported_by_the_agent(
    executor: Executor, workspace_root: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "agent-was-taken-over"
    # A contained run in the ctx "cs_agent" (a valid id) writes a package there.
    result = executor.execute(
        allowed(
            f'printf \'open({str(canary)!r}, "w").write("ran")\\n\' > __init__.py',
            workspace_root / "cs_agent",
        ),
        context_id="cs_agent",
    )
    assert (result.outcome, result.exit_status) == ("exited", 0)
    assert (workspace_root / "cs_agent" / "__init__.py").exists()
    # The agent starts again, as its image starts it: its working directory and its
    # environment, with the workspace at the image's CS_WORKSPACE_ROOT.
    workdir, image_env = _image_settings()
    standing_in = {
        image_env["CS_WORKSPACE_ROOT"]: workspace_root,
        image_env["PYTHONPATH"]: REPOSITORY,
    }
    cwd = standing_in.get(workdir, tmp_path)
    env = {**image_env, "PATH": os.environ["PATH"]}
    env.update({key: str(standing_in.get(value, value)) for key, value in env.items()})

    agent = subprocess.run(
        [sys.executable, "-m", "cs_agent", "--help"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (agent.returncode, agent.stdout.splitlines()[0]) == (
        0,
        "usage: python -m cs_agent [-h] {check,run} ...",
    )
    assert not canary.exists()
    assert Path(cwd) != workspace_root


def test_the_executor_refuses_to_work_where_it_could_import_a_context(
    workspace_root: Path, tmp_path: Path
) -> None:
    # An agent started in the workspace root with its directory on sys.path ("" is the
    # working directory): the executor says so and runs nothing.
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); from cs_agent import Executor; "
        "from cs_agent.client import Verdict; "
        "v = Verdict(True, 'allow', operation={'kind': 'shell', 'command': 'touch ran'}, "
        "execution={'workspace': sys.argv[2] + '/ctx-a'}); "
        "print(Executor(None, workspace_root=sys.argv[2]).execute(v, context_id='ctx-a').message)"
    )

    agent = subprocess.run(
        [sys.executable, "-c", program, str(REPOSITORY), str(workspace_root)],
        cwd=workspace_root,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert agent.stdout.strip() == (
        f"the agent imports Python code from the workspace root {workspace_root} (the working "
        f"directory ({workspace_root}) is on sys.path), where a context could stand in for one "
        "of its modules: start it from another directory, with PYTHONSAFEPATH=1"
    ), agent.stderr
    assert list(workspace_root.iterdir()) == []


# --- 2. The network is the proxy's, by host -----------------------------------------------------


class _StandIn(http.server.BaseHTTPRequestHandler):
    """pypi.org, as far as this test is concerned: 1 MB for any path."""

    body = b"p" * 1_000_000

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxied(workspace_root: Path, stand_in: int) -> tuple[Executor, list[tuple[str, int]]]:
    """An executor whose proxy maps pypi.org (ports 80 and 443) to the stand-in, and
    dials nothing but loopback: anything else it tried would be recorded and refused."""
    import asyncio

    dialled: list[tuple[str, int]] = []

    async def connect(host: str, port: int) -> Any:
        dialled.append((host, port))
        if host != "127.0.0.1":
            raise OSError(f"the test's proxy dials loopback only, not {host}")
        return await asyncio.open_connection(host, port)

    executor = Executor(
        None,  # type: ignore[arg-type]
        workspace_root=str(workspace_root),
        egress_pinned={f"pypi.org:{port}": ("127.0.0.1", stand_in) for port in (80, 443)},
        egress_connect=connect,
    )
    return executor, dialled


FETCH = """
import socket, sys, urllib.request
def tunnel(host, port):
    # An HTTP CONNECT through the proxy, as pip, git and curl make for https.
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n\\r\\n".encode())
    answer = s.recv(4096).split(b"\\r\\n")[0].decode()
    if answer.endswith("200 Connection established"):
        s.sendall(b"GET /simple/ HTTP/1.0\\r\\nHost: pypi.org\\r\\n\\r\\n")
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        body = got.split(b"\\r\\n\\r\\n", 1)[1]
        return f"{answer} then {len(body)} bytes"
    return answer
print("http", len(urllib.request.urlopen("http://pypi.org/simple/", timeout=10).read()))
for host, port in [("pypi.org", 443), ("127.0.0.1", OTHER), ("10.1.2.3", 443),
                   ("evil.example", 443), ("pypi.org", 8080)]:
    print(host, port, tunnel(host, port))
try:
    socket.create_connection(("127.0.0.1", OTHER), timeout=3)
    print("direct: connected")
except OSError as exc:
    print("direct:", exc.strerror)
print("interfaces", sorted(name for _, name in socket.if_nameindex()))
print("netns", __import__("os").readlink("/proc/self/ns/net"))
"""


def test_a_contained_run_reaches_its_sources_through_the_proxy_and_nothing_else(
    proxied: tuple[Executor, list[tuple[str, int]]],
    ctx: Path,
    listener: socket.socket,
    stand_in: int,
) -> None:
    executor, dialled = proxied
    other = listener.getsockname()[1]
    command = script(ctx, "fetch.py", FETCH.replace("OTHER", str(other)))

    # Contained: a host only known at run time ("*"), under sources.json's hosts.
    result = executor.execute(allowed(command, ctx, network=["*"], egress=PYPI), context_id="ctx-a")

    got = ran(result)
    assert got[:7] == [
        "http 1000000",
        "pypi.org 443 HTTP/1.1 200 Connection established then 1000000 bytes",
        f"127.0.0.1 {other} HTTP/1.1 403 Forbidden",
        "10.1.2.3 443 HTTP/1.1 403 Forbidden",
        "evil.example 443 HTTP/1.1 403 Forbidden",
        "pypi.org 8080 HTTP/1.1 403 Forbidden",
        "direct: Connection refused",
    ]
    assert got[7] == "interfaces ['lo']"
    assert got[8] != f"netns {os.readlink('/proc/self/ns/net')}"
    assert result.network == "proxy"
    assert result.refused_effects == tuple(
        {"action": "network", "path": path, "error": error, "reportedBy": "executor"}
        for path, error in [
            (f"127.0.0.1:{other}", "127.0.0.1 is not a host the agent type may reach (sources.json)"),
            ("10.1.2.3:443", "10.1.2.3 is not a host the agent type may reach (sources.json)"),
            ("evil.example:443", "evil.example is not a host the agent type may reach (sources.json)"),
            ("pypi.org:8080", "port 8080 is not one this agent type may reach (80, 443)"),
        ]
    )  # fmt: skip
    assert dialled == [("127.0.0.1", stand_in), ("127.0.0.1", stand_in)]
    assert nothing_connected(listener)


def test_with_web_access_to_any_host_the_proxy_still_refuses_private_addresses(
    proxied: tuple[Executor, list[tuple[str, int]]], ctx: Path
) -> None:
    executor, dialled = proxied
    addresses = ["10.1.2.3", "169.254.169.254", "[::ffff:10.0.0.1]", "[64:ff9b::a00:1]",
                 "100.100.100.200", "[fd00:ec2::254]", "127.0.0.1", "0.0.0.0"]  # noqa: S104  # fmt: skip
    command = script(
        ctx,
        "private.py",
        f"""
        import urllib.request
        for address in {addresses!r}:
            try:
                urllib.request.urlopen(f"http://{{address}}/", timeout=10)
                print(address, "reached")
            except Exception as exc:
                print(address, exc)
        """,
    )
    # sources.json's web_access without allowed_domains: any host, by name.
    anywhere = {"hosts": ["*"], "blocked": ["*.internal"]}

    result = executor.execute(
        allowed(command, ctx, network=["*"], egress=anywhere), context_id="ctx-a"
    )

    assert ran(result) == [f"{address} HTTP Error 403: Forbidden" for address in addresses]
    assert [(e["path"], e["error"]) for e in result.refused_effects] == [
        (f"{a.strip('[]')}:80", f"{a.strip('[]')} is not a public address") for a in addresses
    ]
    assert dialled == []


def test_a_run_reaches_only_the_hosts_judged_for_it_within_the_ceiling(
    proxied: tuple[Executor, list[tuple[str, int]]], ctx: Path
) -> None:
    executor, dialled = proxied
    command = script(
        ctx,
        "judged.py",
        """
        import urllib.request
        for url in ("http://pypi.org/simple/", "http://files.pythonhosted.org/x"):
            try:
                print(url, len(urllib.request.urlopen(url, timeout=10).read()))
            except Exception as exc:
                print(url, exc)
        """,
    )

    # The rules judged this command to reach pypi.org only: the ceiling allows more.
    result = executor.execute(
        allowed(command, ctx, network=["pypi.org"], egress=PYPI), context_id="ctx-a"
    )

    assert ran(result) == [
        "http://pypi.org/simple/ 1000000",
        "http://files.pythonhosted.org/x HTTP Error 403: Forbidden",
    ]
    assert [e["error"] for e in result.refused_effects] == [
        "files.pythonhosted.org is not a host this command was judged to reach"
    ]
    # A host judged but outside the agent type's ceiling is refused too: no run is given
    # more than a contained run of its ctx would be.
    beyond = executor.execute(
        allowed(command, ctx, network=["pypi.org"], egress={"hosts": ["github.com"]}),
        context_id="ctx-a",
    )
    assert ran(beyond)[0] == "http://pypi.org/simple/ HTTP Error 403: Forbidden"
    assert len(dialled) == 1


def test_socks5_and_a_blocked_domain(
    proxied: tuple[Executor, list[tuple[str, int]]], ctx: Path
) -> None:
    executor, _ = proxied
    command = script(
        ctx,
        "socks.py",
        """
        import socket, struct
        for host in ("pypi.org", "metadata.internal"):
            s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
            s.sendall(b"\\x05\\x01\\x00")
            assert s.recv(2) == b"\\x05\\x00"
            name = host.encode()
            s.sendall(b"\\x05\\x01\\x00\\x03" + bytes([len(name)]) + name + struct.pack(">H", 80))
            reply = s.recv(10)
            print(host, "reply", reply[1])
            if reply[1] == 0:
                s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
                print(host, s.recv(12).decode())
        """,
    )
    egress = {"hosts": ["*"], "blocked": ["*.internal"]}

    result = executor.execute(
        allowed(command, ctx, network=["*"], egress=egress), context_id="ctx-a"
    )

    assert ran(result) == ["pypi.org reply 0", "pypi.org HTTP/1.0 200", "metadata.internal reply 2"]
    assert [e["error"] for e in result.refused_effects] == [
        "metadata.internal is a blocked domain of the agent type (sources.json)"
    ]


def test_no_network_at_all_when_none_was_judged_not_even_the_proxy(
    executor: Executor, ctx: Path
) -> None:
    command = script(
        ctx,
        "none.py",
        """
        import os, socket
        try:
            socket.create_connection(("127.0.0.1", 3128), timeout=3)
            print("connected")
        except OSError as exc:
            print(exc.strerror)
        print(sorted(k for k in os.environ if "proxy" in k.lower()))
        """,
    )

    result = executor.execute(allowed(command, ctx, egress=PYPI), context_id="ctx-a")

    assert ran(result) == ["Connection refused", "[]"]
    assert result.network == "none"


# --- 3. Code planted for later commands --------------------------------------------------------


def test_a_program_planted_in_the_virtualenv_never_stands_in_for_an_image_tool(
    executor: Executor, ctx: Path, listener: socket.socket, workspace_root: Path
) -> None:
    outside = workspace_root.parent / f"{workspace_root.name}-planted"
    port = listener.getsockname()[1]
    planted = textwrap.dedent(
        f"""\
        #!/bin/bash
        echo planted $0 >> {ctx}/ran-planted
        echo x 2>/dev/null > {outside}
        (echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected >> {ctx}/ran-planted
        true
        """
    )
    # One run (a contained one may write anywhere in its context) plants them.
    plant = script(
        ctx,
        "plant.py",
        f"""
        import os
        os.makedirs(".venv/bin")
        os.symlink("/usr/bin/python3", ".venv/bin/python3")
        for name in ("ls", "pip", "git"):
            with open(f".venv/bin/{{name}}", "w") as program:
                program.write({planted!r})
            os.chmod(f".venv/bin/{{name}}", 0o755)
        """,
    )
    assert ran(executor.execute(allowed(plant, ctx), context_id="ctx-a")) == []

    # Later runs the rules allowed as image tools: ls (the context holds only
    # plant.py), and git. The venv's own pip is the
    # venv's (it may be what the run wrote), and it is held like the rest.
    later = executor.execute(
        allowed(
            "ls; git --version; pip --version; echo pip=$?; command -v ls python3 pip",
            ctx,
            network=["pypi.org"],
            egress=PYPI,
        ),
        context_id="ctx-a",
    )

    assert ran(later) == [
        "plant.py",
        "git version 2.39.5",
        "pip=0",
        "/usr/bin/ls",
        "/.cs-executor/run/bin/python3",
        "/.cs-executor/run/bin/pip",
    ]
    assert (ctx / "ran-planted").read_text() == f"planted {ctx}/.venv/bin/pip\n"
    assert not outside.exists()
    assert nothing_connected(listener)


def test_git_refuses_what_a_repository_configures_it_to_start(
    executor: Executor, ctx: Path
) -> None:
    canary = ctx / "driver-ran"
    plant = (
        "git init -q . && git config user.email a@example.com && git config user.name a && "
        f"git config filter.x.clean 'touch {canary}; cat' && echo '* filter=x' > .gitattributes"
        f" && git config gpg.program 'touch {canary}' && git config commit.gpgsign true && "
        "git config alias.st '!touch " + str(canary) + "' && echo data > notes.txt"
    )
    # /usr/bin/git would still be git's own guard if the stub on PATH were bypassed.
    first = executor.execute(allowed(plant + " && git status --short", ctx), context_id="ctx-a")
    assert (first.outcome, first.exit_status, first.stdout) == ("exited", 128, b"")

    later = executor.execute(
        allowed("git add notes.txt; echo add=$?; /usr/bin/git commit -qm x; echo commit=$?; "
                "git st; echo st=$?", ctx),
        context_id="ctx-a",
    )  # fmt: skip

    assert ran(later) == ["add=128", "commit=128", "st=128"]
    refusal = (
        "cs-executor: git refused: this repository's configuration sets filter.x.clean (local), "
        "gpg.program (local), alias.st (local), which would make git start a program "
        "nobody judged. Remove the setting (git config --unset KEY) to use git in this "
        "context.\n"
    )
    assert later.stderr == refusal.encode() * 3
    assert not canary.exists()
    # git config itself is let through, so the settings can be taken out.
    mended = executor.execute(
        allowed(
            "git config --unset filter.x.clean && git config --unset gpg.program && "
            "git config --unset alias.st && git config --unset commit.gpgsign && "
            "git add notes.txt && git commit -qm x && git log --format=%s",
            ctx,
        ),
        context_id="ctx-a",
    )
    assert ran(mended) == ["x"]
    assert not canary.exists()


def test_configuration_a_run_plants_keeps_a_later_run_inside_the_ceiling(
    executor: Executor, ctx: Path, listener: socket.socket, workspace_root: Path
) -> None:
    """A .pth file in the venv runs in every later Python run, and ~/.gitconfig would be
    read by every later git: neither reaches past the ctx."""
    outside = workspace_root.parent / f"{workspace_root.name}-reached"
    port = listener.getsockname()[1]
    (ctx / "payload.py").write_text(
        textwrap.dedent(
            f"""
            import socket
            try:
                open("{outside}", "w").write("x")
                print("wrote outside")
            except OSError as exc:
                print("write outside:", exc.strerror)
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3)
                print("connected")
            except OSError as exc:
                print("connect:", exc.strerror)
            """
        )
    )
    plant = script(
        ctx,
        "plant.py",
        f"""
        import os, subprocess
        subprocess.run(["python3", "-m", "venv", "--without-pip", ".venv"], check=True)
        purelib = subprocess.run([".venv/bin/python3", "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True, text=True, check=True).stdout.strip()
        with open(os.path.join(purelib, "planted.pth"), "w") as pth:
            pth.write("import runpy; runpy.run_path('{ctx}/payload.py')\\n")
        with open(os.path.join(os.environ["HOME"], ".gitconfig"), "w") as config:
            config.write("[alias]\\n\\tst = !touch planted-home\\n")
        print("home", os.environ["HOME"])
        """,
    )
    assert ran(executor.execute(allowed(plant, ctx), context_id="ctx-a")) == ["home /tmp/home"]

    # Later: a Python run and a look for the home's configuration.
    later = executor.execute(
        allowed("python3 -c 'print(1)'; test -e ~/.gitconfig && echo kept || echo fresh", ctx),
        context_id="ctx-a",
    )

    # Python reads the .pth once per site directory it finds it in (lib and lib64).
    got = ran(later)
    assert got[-2:] == ["1", "fresh"]
    assert set(got[:-2]) == {"write outside: Read-only file system", "connect: Connection refused"}
    assert not outside.exists()
    assert nothing_connected(listener)


# --- 4. The agent's session keyring -------------------------------------------------------------

KEYRING = """
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL = {{"x86_64": 250, "aarch64": 219}}[os.uname().machine]
ADD_KEY = {{"x86_64": 248, "aarch64": 217}}[os.uname().machine]
# The agent keeps a secret in a session keyring of its own (this process only).
assert libc.syscall(KEYCTL, 1, None) > 0
key = libc.syscall(ADD_KEY, b"user", b"cs-probe-key", b"{secret}", len(b"{secret}"), -3)
assert key > 0, ctypes.get_errno()
from cs_agent import Executor
from cs_agent.client import Verdict
context = sys.argv[2]
verdict = Verdict(True, "allow", operation={{"kind": "shell", "command": "python3 probe.py"}},
    execution={{"isolation": "namespaces", "workspace": context, "memoryLimitMb": 128,
    "effects": {{"read": [context + "/**"], "write": [context + "/**"], "network": []}}}})
result = Executor(None, workspace_root=os.path.dirname(context)).execute(
    verdict, context_id=os.path.basename(context))
print(json.dumps([result.outcome, result.stdout.decode(), result.stderr.decode()]))
"""

KEYRING_PROBE = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
found = libc.syscall(KEYCTL, 10, -3, b"user", b"cs-probe-key", 0)  # KEYCTL_SEARCH
if found < 0:
    print("search:", errno.errorcode[ctypes.get_errno()])
else:
    buffer = ctypes.create_string_buffer(256)
    size = libc.syscall(KEYCTL, 11, found, buffer, 256)  # KEYCTL_READ
    print("ESCAPED: read", buffer.raw[:max(size, 0)])
"""


def test_the_agents_session_keyring_is_not_reachable_from_inside(
    ctx: Path, workspace_root: Path
) -> None:
    secret = "cs-keyring-secret-41a7"
    (ctx / "probe.py").write_text(KEYRING_PROBE)

    agent = subprocess.run(
        [sys.executable, "-c", KEYRING.format(secret=secret), str(REPOSITORY), str(ctx)],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    outcome, stdout, stderr = json.loads(agent.stdout)
    assert (outcome, stdout) == ("exited", "search: EPERM\n"), stderr
    assert secret not in stdout


# --- 5. A ctx cannot hang the agent --------------------------------------------------------
# (cs_agent/tests/sandbox/test_context_file.py, with the service: open_context.)

# --- 6. Refused effects are facts, and nothing the sandbox names is looked up outside -----------


def test_what_a_program_prints_is_reported_as_its_words_and_never_looked_up(
    executor: Executor, ctx: Path, workspace_root: Path
) -> None:
    # A path that exists only outside the sandbox, beside one that exists nowhere: if the
    # executor looked either up on the agent's side, their reports would differ.
    there = workspace_root.parent / f"{workspace_root.name}-only-outside"
    there.write_text("x")
    nowhere = workspace_root.parent / f"{workspace_root.name}-nowhere"
    command = script(
        ctx,
        "liar.py",
        f"""
        import sys
        for path in ("{there}", "{nowhere}"):
            print(f"PermissionError: [Errno 13] Permission denied: '{{path}}'", file=sys.stderr)
        print("curl: (6) Could not resolve host: evil.example", file=sys.stderr)
        """,
    )
    try:
        result = executor.execute(allowed(command, ctx), context_id="ctx-a")
    finally:
        there.unlink()

    assert (result.outcome, result.exit_status, result.network) == ("exited", 0, "none")
    assert result.refused_effects == tuple(
        {"action": "read", "path": str(path), "error": "Permission denied",
         "reportedBy": "program"}
        for path in (there, nowhere)
    )  # fmt: skip


# --- 7. The seccomp filter ---------------------------------------------------------------------

SYSCALLS = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
x86 = os.uname().machine == "x86_64"
def report(name, returned):
    print(name, "ESCAPED" if returned >= 0 else errno.errorcode[ctypes.get_errno()])
report("unshare(CLONE_NEWUSER)", libc.unshare(0x10000000))
report("unshare(CLONE_NEWNET)", libc.unshare(0x40000000))
report("io_uring_setup", libc.syscall(425, 1, ctypes.create_string_buffer(120)))
report("userfaultfd", libc.syscall(323 if x86 else 282, 1))
report("bpf", libc.syscall(321 if x86 else 280, 0, ctypes.create_string_buffer(128), 128))
report("perf_event_open", libc.syscall(298 if x86 else 241, ctypes.create_string_buffer(128), 0, -1, -1, 0))
report("keyctl(KEYCTL_GET_KEYRING_ID)", libc.syscall(250 if x86 else 219, 0, -3, 0))
report("add_key", libc.syscall(248 if x86 else 217, b"user", b"k", b"v", 1, -3))
for name, family, kind, protocol in [
    ("AF_PACKET", 17, socket.SOCK_RAW, 0), ("AF_NETLINK NETLINK_NETFILTER", 16, socket.SOCK_RAW, 12),
    ("AF_NETLINK NETLINK_ROUTE", 16, socket.SOCK_RAW, 0), ("AF_INET", 2, socket.SOCK_STREAM, 0),
    ("AF_INET6", 10, socket.SOCK_STREAM, 0), ("AF_UNIX", 1, socket.SOCK_STREAM, 0),
    ("AF_ALG", 38, socket.SOCK_SEQPACKET, 0), ("AF_VSOCK", 40, socket.SOCK_STREAM, 0),
]:
    try:
        socket.socket(family, kind, protocol).close()
        print(name, "allowed")
    except OSError as exc:
        print(name, errno.errorcode[exc.errno])
"""


def test_the_seccomp_filter_refuses_the_kernels_exploit_surfaces(
    executor: Executor, ctx: Path
) -> None:
    result = executor.execute(allowed(script(ctx, "calls.py", SYSCALLS), ctx), context_id="ctx-a")

    assert ran(result) == [
        "unshare(CLONE_NEWUSER) EPERM",
        "unshare(CLONE_NEWNET) EPERM",
        "io_uring_setup EPERM",
        "userfaultfd EPERM",
        "bpf EPERM",
        "perf_event_open EPERM",
        "keyctl(KEYCTL_GET_KEYRING_ID) EPERM",
        "add_key EPERM",
        "AF_PACKET EAFNOSUPPORT",
        "AF_NETLINK NETLINK_NETFILTER EAFNOSUPPORT",
        "AF_NETLINK NETLINK_ROUTE allowed",
        "AF_INET allowed",
        "AF_INET6 allowed",
        "AF_UNIX allowed",
        "AF_ALG EAFNOSUPPORT",
        "AF_VSOCK EAFNOSUPPORT",
    ]


def test_everyday_programs_still_run_under_the_filter(executor: Executor, ctx: Path) -> None:
    command = (
        "python3 -c 'import threading, subprocess, multiprocessing; "
        "t = threading.Thread(target=print, args=(\"thread\",)); t.start(); t.join(); "
        "print(subprocess.run([\"echo\", \"child\"], capture_output=True, text=True).stdout.strip()); "
        "print(multiprocessing.Pool(2).map(abs, [-1, -2]))' && git init -q r && echo git && "
        "tar czf r.tgz r && echo tar && sort -S 1M --parallel=2 /etc/passwd | head -c0 && echo sort"
    )  # fmt: skip

    result = executor.execute(allowed(command, ctx), context_id="ctx-a")

    assert ran(result) == ["thread", "child", "[1, 2]", "git", "tar", "sort"]


# --- 8. Disk use counts blocks --------------------------------------------------------------


def test_a_sparse_file_counts_the_blocks_it_holds_not_its_length(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as file:
        file.truncate(1 << 30)  # 1 GiB long, nothing written
        file.seek((1 << 30) - 4096)
        file.write(b"x" * 4096)
    (tmp_path / "same").hardlink_to(sparse)

    used = directory_size(tmp_path)

    assert used == sparse.stat().st_blocks * 512
    assert used < 1 << 20
