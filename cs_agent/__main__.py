"""``python -m cs_agent check …``: the client for scripts. Exit 0 allowed, 1 denied, 2 error.

    python -m cs_agent check --context-id ctx-1 shell "pip install pandas"
    python -m cs_agent check --context-id ctx-1 file write /workspace/ctx-1/out.csv
    python -m cs_agent check --context-id ctx-1 network pypi.org

Connection settings come from --url/--token/--agent-type or CS_URL, CS_TOKEN, CS_AGENT_TYPE.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import asdict

from cs_agent.client import ApprovalClient


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs_agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="ask whether an operation may run")
    check.add_argument("--url", default=os.environ.get("CS_URL"))
    check.add_argument("--token", default=os.environ.get("CS_TOKEN"))
    check.add_argument("--agent-type", default=os.environ.get("CS_AGENT_TYPE"))
    check.add_argument("--context-id", required=True)
    check.add_argument("--timeout", type=float, default=300.0)
    check.add_argument(
        "--deadline-seconds",
        type=int,
        default=None,
        help="how long a human may take before the request expires (= deny)",
    )
    check.add_argument("kind", choices=["shell", "file", "network"])
    check.add_argument("what", nargs="+", help="shell: COMMAND; file: ACTION PATH; network: HOST")
    args = parser.parse_args(argv)
    if not (args.url and args.token and args.agent_type):
        parser.error(
            "--url, --token and --agent-type (or CS_URL, CS_TOKEN, CS_AGENT_TYPE) are required"
        )
    client = ApprovalClient(args.url, args.token, agent_type=args.agent_type)
    if args.kind == "shell":
        # One argument is a command line, as `sh -c` would get it; several are the words of
        # one command, quoted back so the line judged is the one that would run.
        command = args.what[0] if len(args.what) == 1 else shlex.join(args.what)
        operation = {"kind": "shell", "command": command}
    elif args.kind == "file":
        if len(args.what) != 2:
            parser.error("file needs ACTION PATH")
        operation = {"kind": "file", "action": args.what[0], "path": args.what[1]}
    else:
        if len(args.what) != 1:
            parser.error("network needs one HOST")
        operation = {"kind": "network", "host": args.what[0]}

    def pending(request: dict[str, object]) -> None:
        print(
            f"waiting for a human: request {request['id']} (deadline {request['deadline']})",
            file=sys.stderr,
            flush=True,
        )

    verdict = client.check(
        operation,
        args.context_id,
        timeout=args.timeout,
        deadline_seconds=args.deadline_seconds,
        on_pending=pending,
    )
    print(json.dumps(asdict(verdict)))
    if verdict.status == "error":
        return 2
    return 0 if verdict.allowed else 1


if __name__ == "__main__":
    sys.exit(main())
