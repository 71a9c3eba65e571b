"""The live service keeps to its OpenAPI document, and a client generated from the
document works.

- schemathesis (property-based, from the document alone) calls every operation of the real
  web process with all its checks (the responses keep to the document, and the requests it
  allows are taken and those it forbids refused), through its examples,
  coverage, fuzzing and stateful phases; the stateful phase follows the document's links
  from each create to the reads and deletes of what it made.
- openapi-python-client generates a client from the document the web process serves, and
  that client creates, reads, lists and releases a real allocation.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings

from allocations.models import Allocation
from tests.support.api import issue_token
from tests.support.kube import NOTHING, pool_objects
from tests.support.processes import wait_until, web_process

pytestmark = pytest.mark.cluster

# Every check: besides the responses' conformance, that requests the document allows are
# taken (positive_data_acceptance), that those it forbids are refused
# (negative_data_rejection), and that undeclared methods are a 405.
CHECKS = ("all",)
# Bounds the run: about a minute and a half on the 2-core machine (docs/testing.md).
MAX_EXAMPLES = 12
LINKS_FOLLOWED_AT_LEAST = 10
SCHEMATHESIS_TIMEOUT = 600


def fetch_schema(url: str, token: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/api/schema/?format=json", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        document: dict[str, Any] = json.loads(response.read())
    return document


@pytest.mark.django_db(transaction=True)
def test_the_live_service_keeps_to_its_document(namespace: str, tmp_path: Path) -> None:
    token = issue_token("schemathesis", ["admin"])
    # The generated calls create allocations, contexts, profiles and approvals for real.
    # No worker consumes this web process's queue, so the cluster is only read (and, for
    # contexts, given PVCs in this test's namespace); the queue is dropped afterwards.
    queue = f"cs-schemathesis-{uuid.uuid4().hex[:12]}"
    env = {"CS_NAMESPACE": namespace, "CS_CELERY_QUEUE": queue}
    try:
        with web_process("web-schemathesis", env) as url:
            started = time.monotonic()
            result = subprocess.run(
                [
                    str(Path(sys.executable).parent / "st"),
                    "--config-file",
                    str(Path(__file__).with_name("schemathesis.toml")),
                    "--no-color",
                    "run",
                    f"{url}/api/schema/?format=json",
                    "--header",
                    f"Authorization: Bearer {token}",
                    "--checks",
                    ",".join(CHECKS),
                    "--phases",
                    "examples,coverage,fuzzing,stateful",
                    "--max-examples",
                    str(MAX_EXAMPLES),
                    "--seed",
                    "20261201",
                    # One thread: with two, CPython 3.11.7's ast module (which hypothesis
                    # uses to describe its filters) could fail with "SystemError: AST
                    # constructor recursion depth mismatch", a thread-safety bug of that
                    # version (its recursion counter is shared), and the run reported a
                    # "Runtime Error" of its own rather than of the service.
                    "--workers",
                    "1",
                    "--request-timeout",
                    "20",
                    "--report",
                    "junit",
                    "--report-dir",
                    str(tmp_path),
                ],
                cwd=tmp_path,  # its crash cache stays out of the checkout
                capture_output=True,
                text=True,
                timeout=SCHEMATHESIS_TIMEOUT,
                check=False,
            )
            elapsed = time.monotonic() - started
    finally:
        broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        for key in broker.scan_iter(match=f"{queue}*"):
            broker.delete(key)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    # It did test: every phase ran and the stateful phase followed links from creates to
    # the objects they made (about 15-19 of the 80 links with this seed: the bodies of
    # contexts and approvals must name a namespace and a profile that exist, which
    # generated data seldom does).
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅  {phase}" in output, output
    links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected", output)
    assert links is not None, output
    assert int(links[1]) >= LINKS_FOLLOWED_AT_LEAST, output
    print(f"schemathesis: {elapsed:.0f} s\n{output[-3000:]}")


def generate_client(document: dict[str, Any], where: Path) -> Any:
    """openapi-python-client's package for the document, imported."""
    (where / "openapi.json").write_text(json.dumps(document))
    # Generation only: the generated code is not reformatted (ruff runs on our code).
    (where / "config.yaml").write_text("post_hooks: []\n")
    generated = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-python-client"),
            "generate",
            "--path",
            str(where / "openapi.json"),
            "--output-path",
            str(where / "cs_generated_client"),
            "--meta",
            "none",
            "--config",
            str(where / "config.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module("cs_generated_client")
    finally:
        sys.path.remove(str(where))


@pytest.mark.usefixtures("service")
def test_a_generated_client_creates_reads_lists_and_releases(
    web_server: str, namespace: str, tmp_path: Path
) -> None:
    token = issue_token("generated-client", ["allocations"])
    package = generate_client(fetch_schema(web_server, token), tmp_path)
    models = importlib.import_module("cs_generated_client.models")
    create, get, listing, release = (
        importlib.import_module(f"cs_generated_client.api.v1.{name}")
        for name in (
            "sandbox_pools_create",
            "sandbox_pools_get",
            "sandbox_pools_list",
            "sandbox_pools_release",
        )
    )
    # contextctl's header, through the generated client's own option for it.
    client = package.AuthenticatedClient(
        base_url=web_server, token=token, prefix="", auth_header_name="X-SH-Auth"
    )

    created = create.sync_detailed(
        client=client,
        body=models.ManagedPoolRequest(
            name="generated",
            replicas=1,
            namespace=namespace,
            workspace=models.ManagedWorkspace(
                size="1Gi", access_mode=models.AccessModeEnum.READWRITEONCE
            ),
        ),
    )

    assert created.status_code == 201
    assert isinstance(created.parsed, models.SandboxPool)
    assert created.parsed.name == "generated"
    assert created.parsed.status == models.ResourceStatusEnum.PROVISIONING
    assert created.parsed.sandbox_selector == "context.rossoctl.io/pool=generated"
    assert created.headers["Location"] == "/v1/sandbox-pools/generated"

    def ready() -> bool:
        found = get.sync(name="generated", client=client)
        return isinstance(found, models.SandboxPool) and found.status.value == "ready"

    wait_until(ready, timeout=90, interval=0.5, message="the pool to become ready")
    pool = get.sync(name="generated", client=client)
    assert isinstance(pool, models.SandboxPool)
    assert (pool.replicas, pool.ready_replicas) == (1, 1)
    assert pool.workspace.size == "1Gi"
    assert pool.workspace.access_mode == "ReadWriteOnce"
    assert pool.namespace == namespace

    listed = listing.sync(client=client)
    assert isinstance(listed, models.SandboxPoolList)
    assert [item.name for item in listed.items] == ["generated"]

    released = release.sync_detailed(name="generated", client=client)
    assert released.status_code == 204
    missing = get.sync(name="generated", client=client)
    assert isinstance(missing, models.Error)
    assert (missing.error, missing.message) == ("not_found", 'sandbox pool "generated" not found')
    wait_until(
        lambda: pool_objects(namespace, "generated") == NOTHING,
        timeout=90,
        message="the pool's objects to be deleted",
    )
    # The row follows once the release (or the watcher) has seen nothing left.
    wait_until(
        lambda: Allocation.objects.get(name="generated").phase == "released",
        timeout=30,
        message="the allocation to be released",
    )
