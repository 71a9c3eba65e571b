"""What a command sees of the environment: the executor's scrubbed to a few variables, a
``PATH`` of the image's programs behind the run's own (git's guard, the virtualenv's
interpreter and pip), a home of its own, the egress proxy when the run has a network,
and git's settings that keep a repository from running its own code.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cs_agent.egress import PROXY_URL, SOCKS_URL
from cs_agent.sandbox import HOME, RUN_BIN, SYSTEM_PATH

# What a command sees of the environment: these, taken from the executor's own if set,
# and nothing else (no tokens, no service URLs, no proxies, no PYTHON*/LD_* variables).
PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
# git inside the sandbox never runs what a cloned repository configures: no hooks, no
# fsmonitor command, no bare repository found by walking up from the working directory,
# no ext:: transport (a command line as a URL). The programs git starts by a setting are
# its own defaults, found on the image's PATH, or nothing: the guard (cs_agent/gitguard.py)
# refuses a run whose repository names one, and these hold even where it is not asked.
GIT_CONFIG = (
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("protocol.ext.allow", "never"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.sshCommand", "ssh"),
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("gpg.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
)
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")


def command_environment(
    environ: Mapping[str, str],
    context: Path,
    *,
    sandboxed: bool,
    venv: bool,
    proxy: bool = False,
) -> dict[str, str]:
    """The whole environment of a command run in ``context``, from the executor's own
    ``environ``. ``sandboxed``: inside bubblewrap, where the run's directory is first on
    ``PATH`` and ``HOME`` is the run's own; ``venv``: the context has a virtualenv
    (``VIRTUAL_ENV``; outside a sandbox its bin directory is first on ``PATH``); ``proxy``:
    the run's network goes through the egress proxy."""
    env = {name: environ[name] for name in PASSED_THROUGH if name in environ}
    path = f"{RUN_BIN}:{SYSTEM_PATH}" if sandboxed else SYSTEM_PATH
    if venv:
        env["VIRTUAL_ENV"] = str(context / ".venv")
        if not sandboxed:
            path = f"{context / '.venv' / 'bin'}:{path}"
    env.update(
        {
            "PATH": path,
            "HOME": HOME if sandboxed else str(context),
            "PWD": str(context),
            "TMPDIR": "/tmp",  # noqa: S108 - the sandbox's own
        }
    )
    env.setdefault("LANG", "C.UTF-8")
    git = list(GIT_CONFIG)
    if proxy:
        env.update(dict.fromkeys(PROXY_VARIABLES, PROXY_URL))
        env.update({"ALL_PROXY": SOCKS_URL, "all_proxy": SOCKS_URL, "PIP_PROXY": PROXY_URL})
        git.append(("http.proxy", PROXY_URL))
    env["GIT_CONFIG_COUNT"] = str(len(git))
    for index, (key, value) in enumerate(git):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env
