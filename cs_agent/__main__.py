"""``python -m cs_agent check …`` and ``python -m cs_agent run …``: the client for scripts.

    python -m cs_agent check --context-id ctx-1 shell "pip install pandas"
    python -m cs_agent check --context-id ctx-1 file write /workspace/ctx-1/out.csv
    python -m cs_agent check --context-id ctx-1 network pypi.org
    python -m cs_agent run --context-id ctx-1 -- grep -rn error logs/

check exits 0 allowed, 1 denied, 2 error. run checks the command and runs it in the
context when allowed; it exits with the command's own status (128 + N when signal N ended
it), or 125 refused, 124 killed at the time limit, 123 killed at the memory limit, 122 the
executor could not run it. --json prints the whole result on stdout instead of the output.

Connection settings come from --url/--token/--agent-type or CS_URL, CS_TOKEN, CS_AGENT_TYPE;
run also reads CS_WORKSPACE_ROOT, CS_EXECUTOR_OUTPUT_LIMIT and CS_EXECUTOR_ALLOW_NONE.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import asdict

from cs_agent.client import ApprovalClient
from cs_agent.executor import Executor


def _connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=os.environ.get("CS_URL"))
    parser.add_argument("--token", default=os.environ.get("CS_TOKEN"))
    parser.add_argument("--agent-type", default=os.environ.get("CS_AGENT_TYPE"))
    # The sandbox's identity, as ApprovalClient.from_env reads it: the instance the
    # request names, and the allocation whose topology its risk notes describe.
    parser.add_argument("--agent-instance", default=os.environ.get("CS_AGENT_INSTANCE"))
    parser.add_argument("--allocation", default=os.environ.get("CS_ALLOCATION"))
    parser.add_argument("--context-id", required=True)
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="how long to wait for a human (seconds)"
    )


def _command_line(words: list[str]) -> str:
    """One argument is a command line, as ``sh -c`` would get it; several are the words of
    one command, quoted back so the line judged is the one that would run."""
    return words[0] if len(words) == 1 else shlex.join(words)


def _pending(request: dict[str, object]) -> None:
    print(
        f"waiting for a human: request {request['id']} (deadline {request['deadline']})",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cs_agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="ask whether an operation may run")
    _connection(check)
    check.add_argument(
        "--deadline-seconds",
        type=int,
        default=None,
        help="how long a human may take before the request expires (= deny)",
    )
    check.add_argument("kind", choices=["shell", "file", "network"])
    check.add_argument("what", nargs="+", help="shell: COMMAND; file: ACTION PATH; network: HOST")
    run = sub.add_parser("run", help="check a shell command and run it in the context")
    _connection(run)
    run.add_argument("--json", action="store_true", help="print the whole result as JSON")
    run.add_argument("words", nargs="+", metavar="COMMAND", help="after --: the command")
    args = parser.parse_args(argv)
    if not (args.url and args.token and args.agent_type):
        parser.error(
            "--url, --token and --agent-type (or CS_URL, CS_TOKEN, CS_AGENT_TYPE) are required"
        )
    client = ApprovalClient(
        args.url,
        args.token,
        agent_type=args.agent_type,
        agent_instance=args.agent_instance,
        allocation=args.allocation,
    )
    if args.command == "run":
        return _run(client, args)
    return _check(client, args, parser)


def _check(
    client: ApprovalClient, args: argparse.Namespace, parser: argparse.ArgumentParser
) -> int:
    if args.kind == "shell":
        operation = {"kind": "shell", "command": _command_line(args.what)}
    elif args.kind == "file":
        if len(args.what) != 2:
            parser.error("file needs ACTION PATH")
        operation = {"kind": "file", "action": args.what[0], "path": args.what[1]}
    else:
        if len(args.what) != 1:
            parser.error("network needs one HOST")
        operation = {"kind": "network", "host": args.what[0]}
    verdict = client.check(
        operation,
        args.context_id,
        timeout=args.timeout,
        deadline_seconds=args.deadline_seconds,
        on_pending=_pending,
    )
    print(json.dumps(asdict(verdict)))
    if verdict.status == "error":
        return 2
    return 0 if verdict.allowed else 1


def _run(client: ApprovalClient, args: argparse.Namespace) -> int:
    executor = Executor.from_env(client)
    executor.approval_timeout = args.timeout
    result = executor.run(
        _command_line(args.words), context_id=args.context_id, on_pending=_pending
    )
    if args.json:
        summary = asdict(result)
        summary["stdout"] = result.stdout.decode(errors="replace")
        summary["stderr"] = result.stderr.decode(errors="replace")
        summary["exit_code"] = result.exit_code
        print(json.dumps(summary))
    else:
        sys.stdout.buffer.write(result.stdout)
        sys.stderr.buffer.write(result.stderr)
        if result.outcome not in ("exited", "killed"):
            print(f"cs_agent: {result.outcome}: {result.message}".rstrip(": "), file=sys.stderr)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
