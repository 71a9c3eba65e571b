"""Dashboard benchmark (issue: the live dashboard).

The allocations list with 10,000 allocations in the database: server time per request
(Django's handler, in process, so network and browser time are left out), and the number
of queries, which must not depend on the page or the filters. And the overview, whose
plots read up to 5,000 of those rows (they were all requested within the last day, each
with its readiness phases).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from statistics import fmean

import django
from django.core.management import call_command
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench.harness import fresh_database
from bench.report import machine, now, percentile, write_section

ROWS = 10_000
SAMPLES = 200


def run() -> None:
    os.environ["DATABASE_URL"] = fresh_database("contextsvc_bench_dashboard")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    django.setup()
    # Imported here: models load only once Django is set up on the database made above.
    from django.contrib.auth.models import User

    from allocations.models import Allocation
    from contextsvc.core.users import user_set_role

    call_command("migrate", verbosity=0)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Allocation.objects.bulk_create(
        (
            Allocation(
                name=f"alloc-{i:05d}",
                namespace=f"team-{i % 7}",
                replicas=3,
                strategy=("dedicated", "shared", "existing", "warmpool")[i % 4],
                workspace_size="1Gi",
                workspace_access_mode="ReadWriteOnce",
                phase=("ready", "provisioning", "failed")[i % 3],
                ready_replicas=i % 4,
                requester="api:serverless-harness",
                # Spread over the last hour, with the phases of a few seconds' start.
                provisioned_at=an_hour_ago + timedelta(seconds=i * 0.36 + 0.2),
                volumes_bound_at=an_hour_ago + timedelta(seconds=i * 0.36 + 1.5),
                pods_scheduled_at=an_hour_ago + timedelta(seconds=i * 0.36 + 0.8),
                ready_at=(an_hour_ago + timedelta(seconds=i * 0.36 + 3 + i % 7))
                if i % 3 == 0
                else None,
            )
            for i in range(ROWS)
        ),
        batch_size=2000,
    )
    # requested_at is set on insert (auto_now_add): moved to just before each one's phases.
    Allocation.objects.update(requested_at=F("provisioned_at") - timedelta(seconds=0.2))
    user = User.objects.create_user("bench-viewer", password="unused-password-123")
    user_set_role(user=user, role="viewer", actor="system:bench")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    pages = {
        "first page": "/allocations/",
        "page 100": "/allocations/?page=100",
        "filtered (phase + strategy + text)": "/allocations/?phase=ready&strategy=shared&q=alloc-0",
        "last page": f"/allocations/?page={ROWS // 50}",
        "overview, with its four plots": "/",
    }
    results = {}
    for label, path in pages.items():
        for _ in range(20):
            client.get(path)  # warm up
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        assert response.status_code == 200
        # Counted now: the next request clears the connection's query log.
        queries = len(captured)
        samples = []
        for _ in range(SAMPLES):
            started = time.perf_counter()
            client.get(path)
            samples.append((time.perf_counter() - started) * 1000)
        results[label] = (samples, queries)
    rows = "\n".join(
        f"| {label} | {percentile(samples, 50):.1f} ms | {percentile(samples, 99):.1f} ms | "
        f"{fmean(samples):.1f} ms | {queries} |"
        for label, (samples, queries) in results.items()
    )
    body = f"""
## Dashboard

Measured {now()} on {machine()}. Command: `make bench` (`python -m bench dashboard`).

The allocations page with {ROWS:,} allocations in PostgreSQL, 50 rows a page, rendered by
Django in process ({SAMPLES} requests each, server time only); and the overview, whose four
plots read up to 5,000 of those rows, requested over the last hour with their readiness
phases. Target: under 300 ms, with a fixed number of queries.

| page | p50 | p99 | mean | queries |
|---|---|---|---|---|
{rows}
"""
    write_section("dashboard", body)
    print(body)
