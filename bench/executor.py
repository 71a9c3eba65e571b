"""What the executor's sandbox costs a command: ``Executor.execute`` of the same short
commands with isolation ``none`` (a plain ``bash -c``, the limits only) and ``namespaces``
(bubblewrap, Landlock, cgroups), measured alternately in one run. Needs no service: the
verdicts are written here as the service would send them."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from bench.report import machine, now, summary_ms, write_section
from cs_agent import Executor
from cs_agent.client import Verdict

COMMANDS = ("true", "cat notes.txt", "grep -c x notes.txt")
ROUNDS = 40


def _verdict(command: str, context: Path, isolation: str) -> Verdict:
    return Verdict(
        True,
        "allow",
        operation={"kind": "shell", "command": command},
        execution={
            "isolation": isolation,
            "workspace": str(context),
            "network": "pod",
            "effects": {"read": [f"{context}/notes.txt"], "write": [], "network": []},
        },
    )


def run() -> None:
    root = Path(tempfile.mkdtemp(prefix="cs-bench-executor-", dir="/var/tmp"))
    try:
        context = root / "ctx-bench"
        context.mkdir()
        (context / "notes.txt").write_text("x\n" * 1000)
        executor = Executor(None, workspace_root=str(root), allow_no_isolation=True)  # type: ignore[arg-type]
        samples: dict[tuple[str, str], list[float]] = {}
        for round_ in range(ROUNDS + 2):
            for command in COMMANDS:
                for isolation in ("none", "namespaces"):
                    started = time.perf_counter()
                    result = executor.execute(
                        _verdict(command, context, isolation), context_id="ctx-bench"
                    )
                    took = time.perf_counter() - started
                    assert (result.outcome, result.exit_status) == ("exited", 0), result
                    if round_ >= 2:  # the first two warm the page cache and bwrap's checks
                        samples.setdefault((command, isolation), []).append(took)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for command in COMMANDS:
        plain, boxed = samples[(command, "none")], samples[(command, "namespaces")]
        ratio = sorted(boxed)[len(boxed) // 2] / sorted(plain)[len(plain) // 2]
        rows.append(f"| `{command}` | {summary_ms(plain)} | {summary_ms(boxed)} | {ratio:.1f}× |")
    body = "\n".join(
        [
            f"Measured {now()} on {machine()}, `python -m bench executor`.",
            "",
            "`Executor.execute` of a short command (no service round trip): isolation "
            "`none` (bash with the limits) against `namespaces` (bubblewrap, the Landlock "
            "launcher, memory and pids cgroups), alternating, "
            f"{ROUNDS} rounds after two warm-up rounds.",
            "",
            "| command | none | namespaces | median ratio |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    write_section("Executor sandbox", body)
