"""``python -m devenv up|down|status|run -- CMD|stack``.

up       start the private PostgreSQL and Redis (unless DATABASE_URL / REDIS_URL are set)
down     stop them
status   say what is running
run      start what is missing, run CMD with the services' URLs exported, stop what it started
stack    the whole service in the foreground (what ``make run`` calls): services, the local
         Kubernetes control plane unless KUBECONFIG is set, migrations, an admin user, then
         web, worker, beat and watcher until Ctrl-C; with --agent (``make agent``) also
         seed 001's reference agent (devenv/agent.py)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from contextsvc.env import ConfigError
from devenv import services
from devenv.stack import run_stack
from devenv.system import DevEnvError, say
from testenv.build import BuildError
from testenv.cluster.instance import ClusterError


def _env_with_services() -> dict[str, str]:
    return {**services.local_env(), **os.environ}


def cmd_up(args: argparse.Namespace) -> int:
    services.up()
    for key, value in services.local_env().items():
        print(f"{key}={value}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    services.down()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    pg, redis = services.Postgres(), services.Redis()
    for name, service in (("postgres", pg), ("redis", redis)):
        state = f"running on 127.0.0.1:{service.port}" if service.running() else "stopped"
        print(f"{name + ':':<9} {state}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    command = [part for part in args.command if part != "--"]
    if not command:
        raise DevEnvError("run needs a command after --")
    started = services.up()
    try:
        return subprocess.run(command, env=_env_with_services(), check=False).returncode
    finally:
        if os.environ.get("CS_KEEP_SERVICES") != "1":
            services.down(started)


def cmd_stack(args: argparse.Namespace) -> int:
    return run_stack(bind=args.bind, agent=args.agent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devenv",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("up").set_defaults(func=cmd_up)
    sub.add_parser("down").set_defaults(func=cmd_down)
    sub.add_parser("status").set_defaults(func=cmd_status)
    run = sub.add_parser("run")
    run.add_argument("command", nargs=argparse.REMAINDER)
    run.set_defaults(func=cmd_run)
    stack = sub.add_parser("stack")
    stack.add_argument("--bind", default=os.environ.get("CS_BIND", "127.0.0.1:8000"))
    stack.add_argument(
        "--agent", action="store_true", help="and the reference A2A agent (make agent)"
    )
    stack.set_defaults(func=cmd_stack)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (DevEnvError, ConfigError, BuildError, ClusterError) as exc:
        say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except subprocess.CalledProcessError as exc:
        say(f"error: {' '.join(map(str, exc.cmd))} failed with status {exc.returncode}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
