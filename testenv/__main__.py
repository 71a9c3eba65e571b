"""``python -m testenv build|up|down|status|kubeconfig|seed-demo``.

build       build the pinned binaries into the cache (``--force`` rebuilds)
up          build if needed, start the control plane (or reuse a healthy one from this repo),
            wait until healthy, print the kubeconfig path
down        stop exactly the processes ``up`` started and delete the tmpfs etcd data
status      show each component's state and the binaries' build info
kubeconfig  print the kubeconfig path (fails when no healthy cluster is running)
seed-demo   create namespace serverless-harness with a demo SandboxTemplate and a warm
            pool of 2
"""

from __future__ import annotations

import argparse
import sys

from contextsvc.env import ConfigError
from testenv import build
from testenv.cluster.demo import seed_demo
from testenv.cluster.instance import KUBECONFIG, ClusterError
from testenv.cluster.lifecycle import down, running_state, status, up


def cmd_build(args: argparse.Namespace) -> int:
    if args.force:
        for component in build.COMPONENTS:
            build.build_component(component, force=True)
    else:
        build.ensure_built()
    for component in build.COMPONENTS:
        info = component.build_info()
        seconds = info.get("build_seconds", "?")
        print(f"{component.name} {component.version}: {component.bin_dir} ({seconds}s)")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    _state, started = up()
    if not started:
        build.say("a healthy cluster from this repo is already running; reusing it")
    print(KUBECONFIG)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    if down():
        build.say("cluster stopped")
    else:
        build.say("no cluster recorded; nothing to stop")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = running_state()
    for name, text in status().items():
        print(f"{name + ':':<26} {text}")
    print(f"{'healthy:':<26} {'yes' if state else 'no'}")
    if state:
        print(f"{'kubeconfig:':<26} {KUBECONFIG}")
        print(f"{'started:':<26} {state.started_at} (up in {state.startup_seconds}s)")
    for component in build.COMPONENTS:
        built = "built" if component.is_built() else "not built"
        print(f"{component.name + ' ' + component.version + ':':<26} {built}")
    return 0


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    if running_state() is None:
        build.say("no healthy cluster is running; start one with 'python -m testenv up'")
        return 1
    print(KUBECONFIG)
    return 0


def cmd_seed_demo(args: argparse.Namespace) -> int:
    if running_state() is None:
        build.say("no healthy cluster is running; start one with 'python -m testenv up'")
        return 1
    seed_demo(KUBECONFIG, args.namespace)
    build.say(f"seeded namespace {args.namespace}: SandboxTemplate demo, SandboxWarmPool demo (2)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testenv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="build the binaries")
    p_build.add_argument("--force", action="store_true", help="rebuild even if cached")
    p_build.set_defaults(func=cmd_build)
    sub.add_parser("up", help="start or reuse the cluster").set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop the cluster").set_defaults(func=cmd_down)
    sub.add_parser("status", help="show the cluster state").set_defaults(func=cmd_status)
    sub.add_parser("kubeconfig", help="print the kubeconfig path").set_defaults(func=cmd_kubeconfig)
    p_seed = sub.add_parser("seed-demo", help="create the demo namespace and pool")
    p_seed.add_argument("--namespace", default="serverless-harness")
    p_seed.set_defaults(func=cmd_seed_demo)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (build.BuildError, ClusterError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
