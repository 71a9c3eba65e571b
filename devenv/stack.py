"""The whole service in the foreground, as ``make run`` starts it."""

from __future__ import annotations

import os
import subprocess
import sys

from devenv import services
from devenv.supervisor import ProcessSpec, run_all
from devenv.system import REPO_DIR, say
from testenv import ensure_cluster, seed_demo


def _manage(*args: str) -> list[str]:
    return [sys.executable, str(REPO_DIR / "manage.py"), *args]


def _celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "config", *args]


def process_specs(bind: str) -> list[ProcessSpec]:
    return [
        ProcessSpec("web", _manage("serve", "--bind", bind)),
        ProcessSpec("worker", _celery("worker", "--loglevel=INFO", "--concurrency=2")),
        ProcessSpec("beat", _celery("beat", "--loglevel=INFO")),
        ProcessSpec("watcher", _manage("watch")),
    ]


def run_stack(*, bind: str) -> int:
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
        say(f"Context Service on http://{bind}/ — Ctrl-C stops everything")
        return run_all(process_specs(bind), env)
    finally:
        if cluster is not None and cluster.started_here:
            cluster.stop()
            services.set_env_value("KUBECONFIG", None)
        services.down(started)
