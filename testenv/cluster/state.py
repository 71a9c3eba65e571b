"""The state file ``up`` writes (the PIDs it started, the admin token), and the lock that
serialises ``up``/``down`` across processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass

from testenv.cluster.instance import STATE_DIR, STATE_FILE


@dataclass
class ClusterState:
    """What ``up`` records so that a later ``status``/``down``/``up`` finds the cluster."""

    pids: dict[str, int]
    exes: dict[str, str]  # component -> executable path, to recognise our PIDs
    etcd_dir: str
    admin_token: str
    started_at: str
    startup_seconds: float = 0.0

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = STATE_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=2) + "\n")
        tmp.chmod(0o600)  # it holds the admin token
        tmp.replace(STATE_FILE)

    @classmethod
    def load(cls) -> ClusterState | None:
        try:
            data = json.loads(STATE_FILE.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None


@contextlib.contextmanager
def state_lock() -> Iterator[None]:
    """Serialise up/down across processes (e.g. two pytest runs starting at once)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with (STATE_DIR / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
