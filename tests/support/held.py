"""Whether the executor holds what an allowed attack would do: the "held" measure of
docs/rules.md. For a case the engine allows, the grants the run would get are computed
with the executor's own code — the Landlock grants of ``cs_agent.sandbox.grants_for`` on the
evaluation's effects, the mounts of its bubblewrap command line, and the egress proxy's
policy (``cs_agent.egress.EgressPolicy``) under the agent type's ceiling
(``rules.egress_ceiling``) — and each harm of the case (tests/support/harms.py) is held when
those grants do not give it. Nothing is run.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cs_agent.egress import EgressPolicy, public_address
from cs_agent.sandbox import INSIDE, SYSTEM_DIRS, grants_for
from rules import Evaluation, RuleSet, Sources, egress_ceiling
from tests.support.harms import Harm

# A file read needs read_file on it or a directory above it (read_dir only lists).
READ_RIGHTS = {"read_file"}
WRITE_RIGHTS = {"write_file", "make_reg", "make_dir", "make_sym", "truncate", "remove_file"}
# What the sandbox has of its own at these paths: not the agent's, whatever is there.
PRIVATE = ("/tmp", "/dev", "/proc", INSIDE)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _covered(grants: list[tuple[str, list[str]]], path: str, rights: set[str]) -> bool:
    return any(rights & set(names) and _inside(path, granted) for granted, names in grants)


@dataclass(frozen=True)
class Grants:
    """What one run of an allowed evaluation may do, as the executor would run it."""

    context: str
    files: list[tuple[str, list[str]]]
    egress: EgressPolicy | None  # None: no network at all

    @classmethod
    def of(
        cls, evaluation: Evaluation, rules: RuleSet, sources: Sources | None, context: str
    ) -> Grants:
        effects: dict[str, Any] = evaluation.effects or {}
        files = grants_for(effects, Path(context))
        judged = effects.get("network") or []
        egress = EgressPolicy.for_run(judged, egress_ceiling(rules, sources)) if judged else None
        return cls(context, files, egress if egress and egress.reaches_anything else None)

    def gives(self, harm: Harm) -> bool:
        """Would the run be able to do ``harm``?"""
        if harm.kind == "read":
            return self._mounted(harm.target) and _covered(self.files, harm.target, READ_RIGHTS)
        if harm.kind == "write":
            # Only the context is writable of what is the agent's: the rest is read-only
            # or not there; the sandbox's own /tmp is not the agent's.
            return _inside(harm.target, self.context) and _covered(
                self.files, harm.target, WRITE_RIGHTS
            )
        if harm.kind == "connect":
            return self._reaches(harm.target, harm.port)
        # Code outside the sandbox: every command runs inside bubblewrap (no capability, no
        # setuid, its own namespaces) and the agent never imports from the workspace
        # (cs_agent/tests/sandbox/ proves both): nothing of a run can start there.
        return False

    def _mounted(self, path: str) -> bool:
        """Is the agent's file at ``path`` there inside the sandbox at all?"""
        if any(_inside(path, private) for private in PRIVATE):
            return False
        return _inside(path, self.context) or any(_inside(path, d) for d in SYSTEM_DIRS)

    def _reaches(self, host: str, port: int) -> bool:
        if self.egress is None or self.egress.refusal(host, port) is not None:
            return False
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return True  # a name the proxy would resolve: assume the worst, a public one
        return public_address(address)


def held(
    evaluation: Evaluation,
    harms: tuple[Harm, ...],
    rules: RuleSet,
    sources: Sources | None,
    context: str,
) -> list[Harm]:
    """The harms of an allowed case that the executor would NOT hold (empty: all held)."""
    grants = Grants.of(evaluation, rules, sources, context)
    return [harm for harm in harms if grants.gives(harm)]
