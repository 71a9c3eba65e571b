"""What the executor's sandbox costs a command: ``Executor.execute`` of the same short
commands with isolation ``none`` (a plain ``bash -c``, the limits only) and ``namespaces``
(bubblewrap, Landlock, seccomp, cgroups), and what the egress proxy adds — a sandboxed
``true`` with and without a network, and a 1 MB fetch from a loopback server through the
proxy against the same fetch without it — measured alternately in one run. Needs no
service: the verdicts are written here as the service would send them, and the proxy maps
the name it is asked for to the loopback server (nothing else is dialled)."""

from __future__ import annotations

import http.server
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.report import machine, now, summary_ms, write_section
from cs_agent import Executor
from cs_agent.client import Verdict

COMMANDS = ("true", "cat notes.txt", "grep -c x notes.txt")
ROUNDS = 40
FETCH_BYTES = 1_000_000
# Prints how long the transfer itself took, so the proxy's share is seen apart from the
# process's start: the URL is the loopback server's own (no proxy) or the stand-in name's
# (through the proxy, which the environment names).
FETCH = """
import sys, time, urllib.request
started = time.perf_counter()
body = urllib.request.urlopen(sys.argv[1], timeout=30).read()
assert len(body) == {size}, len(body)
print(time.perf_counter() - started)
"""


class _Server(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    body = b"b" * FETCH_BYTES

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


def _verdict(command: str, context: Path, isolation: str, hosts: list[str]) -> Verdict:
    return Verdict(
        True,
        "allow",
        operation={"kind": "shell", "command": command},
        execution={
            "isolation": isolation,
            "workspace": str(context),
            "network": "pod",
            "egress": {"hosts": ["mirror.example"], "blocked": [], "ports": [80, 443]},
            "effects": {
                "read": [f"{context}/notes.txt", f"{context}/fetch.py"],
                "write": [],
                "network": hosts,
            },
        },
    )


def _timed(executor: Executor, verdict: Verdict) -> tuple[float, Any]:
    started = time.perf_counter()
    result = executor.execute(verdict, context_id="ctx-bench")
    took = time.perf_counter() - started
    assert (result.outcome, result.exit_status) == ("exited", 0), result
    return took, result


def run() -> None:
    root = Path(tempfile.mkdtemp(prefix="cs-bench-executor-", dir="/var/tmp"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        context = root / "ctx-bench"
        context.mkdir()
        (context / "notes.txt").write_text("x\n" * 1000)
        (context / "fetch.py").write_text(FETCH.format(size=FETCH_BYTES))
        executor = Executor(
            None,  # type: ignore[arg-type]
            workspace_root=str(root),
            allow_no_isolation=True,
            egress_pinned={"mirror.example:80": ("127.0.0.1", port)},
        )
        direct = f"python3 fetch.py http://127.0.0.1:{port}/"
        proxied = "python3 fetch.py http://mirror.example/"
        cases = {
            **{
                (command, isolation): (command, isolation, [])
                for command in COMMANDS
                for isolation in ("none", "namespaces")
            },
            ("true", "proxy"): ("true", "namespaces", ["mirror.example"]),
            ("fetch", "none"): (direct, "none", []),
            ("fetch", "proxy"): (proxied, "namespaces", ["mirror.example"]),
        }
        samples: dict[tuple[str, str], list[float]] = {}
        transfers: dict[str, list[float]] = {"none": [], "proxy": []}
        for round_ in range(ROUNDS + 2):
            for key, (command, isolation, hosts) in cases.items():
                took, result = _timed(executor, _verdict(command, context, isolation, hosts))
                if round_ < 2:
                    continue  # the first two warm the page cache and the one-time checks
                samples.setdefault(key, []).append(took)
                if key[0] == "fetch":
                    transfers[key[1]].append(float(result.stdout))
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)
    write_section("Executor sandbox", _body(samples, transfers))


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def _body(samples: dict[tuple[str, str], list[float]], transfers: dict[str, list[float]]) -> str:
    rows = []
    for command in COMMANDS:
        plain, boxed = samples[(command, "none")], samples[(command, "namespaces")]
        ratio = _median(boxed) / _median(plain)
        rows.append(f"| `{command}` | {summary_ms(plain)} | {summary_ms(boxed)} | {ratio:.1f}× |")
    offline, online = samples[("true", "namespaces")], samples[("true", "proxy")]
    fetch_plain, fetch_proxy = samples[("fetch", "none")], samples[("fetch", "proxy")]
    return "\n".join(
        [
            f"Measured {now()} on {machine()}, `python -m bench executor`.",
            "",
            "`Executor.execute` of a short command (no service round trip): isolation "
            "`none` (bash with the limits) against `namespaces` (bubblewrap, the seccomp "
            "filter, the Landlock launcher, memory and pids cgroups), alternating, "
            f"{ROUNDS} rounds after two warm-up rounds.",
            "",
            "| command | none | namespaces | median ratio |",
            "|---|---|---|---|",
            *rows,
            "",
            "**The egress proxy**, in the same rounds: a sandboxed `true` without a network "
            "against one whose effects name a host (the run's proxy thread and unix socket, "
            "and the bridge inside, started and stopped); and a 1 MB fetch (`urllib` in "
            "`python3`) from a loopback HTTP server, without the proxy (isolation `none`, "
            "straight to the server) against through it (`namespaces`: the bridge, the unix "
            "socket, the proxy's judgement of the name, port and address, the relay). "
            "*Transfer* is the fetch alone, timed inside the program.",
            "",
            "| case | without the proxy | with the proxy | median ratio |",
            "|---|---|---|---|",
            f"| sandboxed `true` | {summary_ms(offline)} | {summary_ms(online)} | "
            f"{_median(online) / _median(offline):.2f}× |",
            f"| 1 MB fetch, whole run | {summary_ms(fetch_plain)} | {summary_ms(fetch_proxy)} | "
            f"{_median(fetch_proxy) / _median(fetch_plain):.2f}× |",
            f"| 1 MB fetch, transfer | {summary_ms(transfers['none'])} | "
            f"{summary_ms(transfers['proxy'])} | "
            f"{_median(transfers['proxy']) / _median(transfers['none']):.2f}× |",
        ]
    )
