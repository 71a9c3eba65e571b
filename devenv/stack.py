"""The whole service in the foreground, as ``make run`` starts it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from devenv import services
from devenv.agent import agent_spec
from devenv.supervisor import ProcessSpec, run_all
from devenv.system import LOCAL_DIR, REPO_DIR, say
from testenv import ensure_cluster, seed_demo


def _manage(*args: str) -> list[str]:
    return [sys.executable, str(REPO_DIR / "manage.py"), *args]


def _celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "config", *args]


# Where ``make run`` keeps every line of every process; the foreground leaves out the
# routine ones below.
LOG_FILE = LOCAL_DIR / "log" / "stack.log"
# What the worker and beat print at INFO for every periodic task, every few seconds:
# "[…: INFO/MainProcess] Task contextsvc.x[id] received", "… succeeded in 0.01s: None",
# "[…: INFO/MainProcess] Scheduler: Sending due task resync (…)".
_ROUTINE = re.compile(
    r"^\[[^\]]*: INFO/[^\]]*\] "
    r"(Task \S+\[[0-9a-f-]+\] (received|succeeded in )|Scheduler: Sending due task )"
)


def routine(line: str) -> bool:
    return _ROUTINE.match(line) is not None


def process_specs(bind: str) -> list[ProcessSpec]:
    return [
        ProcessSpec("web", _manage("serve", "--bind", bind)),
        ProcessSpec(
            "worker", _celery("worker", "--loglevel=INFO", "--concurrency=2"), routine=routine
        ),
        ProcessSpec("beat", _celery("beat", "--loglevel=INFO"), routine=routine),
        ProcessSpec("watcher", _manage("watch")),
    ]


def run_stack(*, bind: str, agent: bool = False) -> int:
    started = services.up()
    cluster = None
    try:
        if not os.environ.get("KUBECONFIG"):
            cluster = ensure_cluster()
            services.set_env_value("KUBECONFIG", str(cluster.kubeconfig))
            seed_demo(cluster.kubeconfig)
        env = {**services.local_env(), **os.environ}
        env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
        subprocess.run(_manage("migrate", "--no-input"), env=env, check=True)
        subprocess.run(
            _manage("ensure_admin", "--login-url", f"http://{bind}/login/"), env=env, check=True
        )
        specs = process_specs(bind)
        if agent:
            specs.append(agent_spec(env, service_url=f"http://{bind}"))
        say(f"Context Service on http://{bind}/ — Ctrl-C stops everything")
        say(f"every process's output, routine task lines included: {LOG_FILE}")
        return run_all(specs, env, log_file=LOG_FILE)
    finally:
        if cluster is not None and cluster.started_here:
            cluster.stop()
            services.set_env_value("KUBECONFIG", None)
        services.down(started)
