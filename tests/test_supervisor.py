"""``make run``'s supervisor restarts a process that exits, with a growing delay, and
leaves the others running (it used to stop everything when one process exited)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from celery.app.defaults import DEFAULT_PROCESS_LOG_FMT  # type: ignore[attr-defined]
from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS

from tests.support.processes import wait_until

SUPERVISE = """
import sys
from devenv.supervisor import ProcessSpec, run_all
crash = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write('x'); sys.exit(3)", sys.argv[1]]
steady = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"]
sys.exit(run_all([ProcessSpec("crashy", crash), ProcessSpec("steady", steady)], {}))
"""


def test_a_process_that_exits_is_restarted_with_backoff(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISE, str(starts)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Started at 0 s, again after 1 s, then after 2 s more: three starts by about 3 s.
        wait_until(
            lambda: starts.exists() and starts.read_text() == "xxx", timeout=20, message="3 starts"
        )
        assert supervisor.poll() is None
    finally:
        supervisor.send_signal(signal.SIGINT)
        output, _ = supervisor.communicate(timeout=30)
    lines = output.splitlines()
    # The delay doubles while it keeps failing.
    assert [line for line in lines if line.startswith("crashy exited")][:2] == [
        "crashy exited with status 3; restarting it in 1s",
        "crashy exited with status 3; restarting it in 2s",
    ]
    assert lines.count("starting crashy again") == 2
    # The steady process was started once and ran until Ctrl-C stopped it.
    assert len([line for line in lines if line.startswith("steady ")]) == 1
    assert any(line.startswith("stopping steady (pid ") for line in lines)
    assert supervisor.returncode == 0


def celery_line(message: str, process: str = "MainProcess", level: str = "INFO") -> str:
    """A line as Celery's default log format prints it."""
    return DEFAULT_PROCESS_LOG_FMT % {
        "asctime": "2026-12-05 15:00:00,123",
        "levelname": level,
        "processName": process,
        "message": message,
    }


TASK = {"name": "allocations.tasks.resync", "id": "5b1f6e0c-3f7a-4d0e-9a51-0c2b1d9e7f10"}
ROUTINE = [
    celery_line(LOG_RECEIVED % TASK),
    celery_line(
        LOG_SUCCESS % {**TASK, "runtime": 0.0123, "return_value": None}, "ForkPoolWorker-1"
    ),
    celery_line("Scheduler: Sending due task resync (allocations.tasks.resync)"),
]
NOT_ROUTINE = [
    celery_line("Connected to redis://127.0.0.1:6379/0"),
    celery_line(LOG_SUCCESS % {**TASK, "runtime": 0.1, "return_value": None}, level="WARNING"),
    celery_line("Task allocations.tasks.resync[5b1f] raised unexpected: OSError()", level="ERROR"),
    "allocation team1/job ready after 4.2 s",
]

LOUD = """
import sys
from devenv.stack import routine
from devenv.supervisor import ProcessSpec, run_all
lines = sys.argv[2:]
talk = [sys.executable, "-c", "import sys, time; print(*sys.argv[1:], sep=chr(10), flush=True); time.sleep(600)", *lines]
sys.exit(run_all([ProcessSpec("worker", talk, routine=routine)], {}, log_file=__import__("pathlib").Path(sys.argv[1])))
"""


def test_routine_task_lines_go_to_the_log_file_only(tmp_path: Path) -> None:
    """Issue 45: ``make run``'s foreground printed six beat/worker lines every 5 s."""
    log = tmp_path / "log" / "stack.log"
    lines = [*ROUTINE, *NOT_ROUTINE]
    supervisor = subprocess.Popen(
        [sys.executable, "-c", LOUD, str(log), *lines],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            lambda: log.exists() and len(log.read_text().splitlines()) == len(lines),
            timeout=20,
            message="every line in the log file",
        )
    finally:
        supervisor.send_signal(signal.SIGINT)
        output, _ = supervisor.communicate(timeout=30)

    assert log.read_text().splitlines() == [f"worker | {line}" for line in lines]
    shown = [line for line in output.splitlines() if line.startswith("worker | ")]
    assert shown == [f"worker | {line}" for line in NOT_ROUTINE]
