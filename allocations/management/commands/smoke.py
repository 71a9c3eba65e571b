"""``manage.py smoke``: the hardened-sandbox smoke check (seed 002), on a live cluster.

Creates a one-replica allocation with a chosen profile (or the default runtime), waits for
it to become ready (the worker and the watcher must be running), checks the Pod it produced
and its NetworkPolicy, releases it, and prints one PASS/FAIL line per check. Exits 1 when
any check fails.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from allocations.models import Allocation, Phase
from allocations.requests import PoolRequest
from allocations.services.create import allocation_create
from allocations.services.release import allocation_release
from contextsvc.core.teams import EVERY_TEAM
from contextsvc.infra.errors import ServiceError
from contextsvc.kube import client as kube
from contextsvc.kube.objects.hardening import HARDENING_CHECKS
from contextsvc.kube.objects.kinds import NETWORK_POLICY, POD
from contextsvc.kube.objects.labels import pool_selector
from contextsvc.kube.objects.names import network_policy_name

ACTOR = "system:smoke"


class Command(BaseCommand):
    help = "Allocate one hardened sandbox, verify its Pod and NetworkPolicy, release it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--profile", default="", help="profile name (default: the default)")
        parser.add_argument("--namespace", default="", help=f"default {settings.CS_NAMESPACE}")
        parser.add_argument("--size", default="1Gi")
        parser.add_argument("--timeout", type=float, default=120.0)

    def handle(self, *args: Any, **options: Any) -> None:
        self.failures = 0
        name = f"smoke-{secrets.token_hex(3)}"
        request = PoolRequest(
            name,
            1,
            "dedicated",
            workspace_size=options["size"],
            workspace_access_mode="ReadWriteOnce",
            profile_name=options["profile"],
            namespace=options["namespace"],
        )
        try:
            allocation = allocation_create(request=request, actor=ACTOR).allocation
        except ServiceError as exc:
            raise CommandError(f"cannot allocate: {exc.message}") from None
        runtime = allocation.profile_name or "built-in runtime"
        self.stdout.write(f"allocated {allocation.namespace}/{name} ({runtime})")
        try:
            ready = self._wait(name, Phase.READY, options["timeout"])
            self._report(
                "allocation becomes ready",
                None if ready else f"not ready after {options['timeout']:.0f}s",
            )
            pods = kube.list_objects(POD, allocation.namespace, pool_selector(name))
            self._report(
                "one Pod carries the pool label", None if len(pods) == 1 else f"{len(pods)} Pods"
            )
            for label, check in HARDENING_CHECKS:
                self._report(label, check(pods[0]) if pods else "no Pod to check")
            policy = kube.get_object(
                NETWORK_POLICY, allocation.namespace, network_policy_name(name)
            )
            self._report(
                "NetworkPolicy present", None if policy else "no NetworkPolicy for the pool"
            )
        finally:
            allocation_release(name=name, actor=ACTOR, reach=EVERY_TEAM)
            released = self._wait(name, Phase.RELEASED, options["timeout"])
            self._report("release deletes everything", None if released else "objects remain")
        if self.failures:
            raise CommandError(f"{self.failures} check(s) failed")
        self.stdout.write("all checks passed")

    def _report(self, check: str, problem: str | None) -> None:
        if problem is None:
            self.stdout.write(f"PASS  {check}")
        else:
            self.failures += 1
            self.stdout.write(f"FAIL  {check}: {problem}")

    def _wait(self, name: str, phase: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = (
                Allocation.objects.filter(name=name)
                .order_by("-id")
                .values_list("phase", flat=True)
                .first()
            )
            if found == phase:
                return True
            if found == Phase.FAILED and phase != Phase.FAILED:
                return False
            time.sleep(0.5)
        return False
