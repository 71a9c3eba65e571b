"""What a command sees of the environment: the executor's scrubbed to a few variables, the
context's virtualenv once one exists, and git's settings that keep a cloned repository from
running its own code.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cs_agent.sandbox import SYSTEM_PATH

# What a command sees of the environment: these, taken from the executor's own if set,
# and nothing else (no tokens, no service URLs, no proxies, no PYTHON*/LD_* variables).
PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
# git inside the sandbox never runs what a cloned repository configures: no hooks, no
# fsmonitor command, no bare repository found by walking up from the working directory,
# no ext:: transport (a command line as a URL).
GIT_CONFIG = (
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("protocol.ext.allow", "never"),
)


def command_environment(environ: Mapping[str, str], context: Path, *, venv: bool) -> dict[str, str]:
    """The whole environment of a command run in ``context``, from the executor's own
    ``environ``; with the context's virtualenv first on ``PATH`` when ``venv`` and it exists."""
    env = {name: environ[name] for name in PASSED_THROUGH if name in environ}
    path = SYSTEM_PATH
    if venv and (context / ".venv" / "bin").is_dir():
        env["VIRTUAL_ENV"] = str(context / ".venv")
        path = f"{context / '.venv' / 'bin'}:{path}"
    env.update({"PATH": path, "HOME": str(context), "PWD": str(context), "TMPDIR": "/tmp"})  # noqa: S108 - the sandbox's own
    env.setdefault("LANG", "C.UTF-8")
    env["GIT_CONFIG_COUNT"] = str(len(GIT_CONFIG))
    for index, (key, value) in enumerate(GIT_CONFIG):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env
