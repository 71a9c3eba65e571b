"""``make run``'s supervisor restarts a process that exits, with a growing delay, and
leaves the others running (it used to stop everything when one process exited)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

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
