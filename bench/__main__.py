"""``python -m bench [allocations|approvals|claims|dashboard|executor|rules|scale|soak|all]``: each rewrites its section of
docs/performance.md."""

from __future__ import annotations

import os
import sys

from bench import allocations, approvals, claims, dashboard, executor, rules, scale, soak


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    names = argv or ["all"]
    # The soak runs for 20 minutes and breaks processes on purpose, the scale run takes
    # most of an hour, and the claims run brings up 600 kwok Sandboxes: only when named.
    known = {
        "allocations",
        "approvals",
        "claims",
        "dashboard",
        "executor",
        "rules",
        "scale",
        "soak",
    }
    if "all" in names:
        names = sorted(known - {"soak", "scale", "claims"})
    for name in names:
        if name not in known:
            print(f"unknown benchmark {name!r}; choose from {', '.join(sorted(known))}, all")
            return 2
        if name == "allocations":
            allocations.run()
        elif name == "approvals":
            approvals.run()
        elif name == "claims":
            claims.run()
        elif name == "dashboard":
            dashboard.run()
        elif name == "executor":
            executor.run()
        elif name == "rules":
            rules.run()
        elif name == "scale":
            scale.run()
        elif name == "soak":
            soak.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
