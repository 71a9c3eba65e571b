"""Defaults for development and tests: the project-local PostgreSQL, Redis and cluster.

``python -m devenv up`` writes ``.local/services.env`` with the URLs of the
private instances it started. Local and test settings read it so that ``manage.py`` works
without exporting anything; variables already set in the environment always win.
Production settings never read this file.
"""

from __future__ import annotations

import os
from pathlib import Path

SERVICES_ENV = Path(__file__).resolve().parent.parent.parent / ".local" / "services.env"


def load_local_defaults(path: Path = SERVICES_ENV) -> None:
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        os.environ.setdefault(key.strip(), value.strip())
