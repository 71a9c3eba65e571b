"""The reference agent beside the service (``make agent``): seed 001's python-data-agent,
its profile loaded from seed 001's settings.json and sources.json, a token of its own, a
PostgreSQL database of its own (its checkpoints, waits and A2A tasks) and a workspace
under .local/."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from devenv.supervisor import ProcessSpec
from devenv.system import LOCAL_DIR, REPO_DIR, DevEnvError, say

AGENT_TYPE = "python-data-agent"
AGENT_BIND = os.environ.get("CS_AGENT_BIND", "127.0.0.1:8100")
AGENT_DATABASE = "cs_agent"
# The executor refuses a workspace under /tmp (the sandbox mounts a /tmp of its own over
# it): a checkout there keeps the agent's workspace under /var/tmp instead.
WORKSPACE = Path(
    os.environ.get("CS_AGENT_WORKSPACE")
    or (
        f"/var/tmp/cs-agent-workspace-{hashlib.sha256(bytes(REPO_DIR)).hexdigest()[:8]}"  # noqa: S108 - a fixed, per-checkout name, made by this user
        if REPO_DIR.parts[1:2] == ("tmp",)
        else LOCAL_DIR / "agent-workspace"
    )
)
# Kept so that a restart does not issue (and leave active) one more token each time.
TOKEN_FILE = LOCAL_DIR / "agent-token"
# Seed 001's files for the data agent (the rule engine's tests read the same ones).
SEED_001 = REPO_DIR / "rules" / "tests" / "fixtures"


def _manage(env: Mapping[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(REPO_DIR / "manage.py"), *args],
        env=dict(env),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise DevEnvError(f"manage.py {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _token(env: Mapping[str, str]) -> str:
    listed = _manage(env, "api_client", "list")
    exists = any(line.startswith(f"{AGENT_TYPE} ") for line in listed.splitlines())
    if exists and TOKEN_FILE.exists():
        return TOKEN_FILE.read_text().strip()
    issued = (
        _manage(env, "api_client", "token", AGENT_TYPE)
        if exists
        else _manage(
            env,
            "api_client",
            "create",
            AGENT_TYPE,
            "--scope",
            "agent",
            "--agent-type",
            AGENT_TYPE,
            "--description",
            "the reference agent of make agent",
        )
    )
    found = re.search(r"^token: (\S+)$", issued, re.MULTILINE)
    if found is None:
        raise DevEnvError(f"no token in what manage.py api_client printed: {issued!r}")
    TOKEN_FILE.write_text(found.group(1) + "\n")
    TOKEN_FILE.chmod(0o600)
    return found.group(1)


def _database(service_url: str) -> str:
    """The agent's database on the local PostgreSQL (made once); its URL."""
    parts = urlsplit(service_url)
    with psycopg.connect(service_url, autocommit=True) as connection:
        made = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (AGENT_DATABASE,)
        ).fetchone()
        if made is None:
            connection.execute(f'CREATE DATABASE "{AGENT_DATABASE}"')
    return urlunsplit(parts._replace(path=f"/{AGENT_DATABASE}"))


def agent_spec(env: Mapping[str, str], *, service_url: str) -> ProcessSpec:
    """Everything the reference agent needs, made if missing; the process to run."""
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    say(
        _manage(
            env,
            "profile",
            "load",
            AGENT_TYPE,
            "--settings",
            str(SEED_001 / "settings.json"),
            "--sources",
            str(SEED_001 / "sources.json"),
            "--context-workspace",
            f"{WORKSPACE}/${{CONTEXT_ID}}",
        ).strip()
    )
    host, _, port = AGENT_BIND.rpartition(":")
    agent_env = {
        "CS_URL": service_url,
        "CS_TOKEN": _token(env),
        "CS_AGENT_TYPE": AGENT_TYPE,
        "CS_AGENT_INSTANCE": "make-agent",
        "CS_WORKSPACE_ROOT": str(WORKSPACE),
        "CS_AGENT_DATABASE_URL": _database(env["DATABASE_URL"]),
    }
    say(f"the reference agent ({AGENT_TYPE}, A2A) on http://{AGENT_BIND}/")
    return ProcessSpec(
        "agent",
        [sys.executable, "-m", "cs_agent.a2a_server", "--host", host, "--port", port],
        env=agent_env,
    )
