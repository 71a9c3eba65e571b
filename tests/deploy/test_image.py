"""The image's steps on the host, quicker than building it (test_images_built.py builds and
starts the image itself, among the serial tests): a virtualenv from ``requirements.runtime.lock`` alone, static files
collected as the Dockerfile collects them, and the web process started through
``deploy/entrypoint.sh`` on production settings, answering ``/readyz`` against the real
PostgreSQL, Redis and API server and serving the collected assets. A package missing from
the runtime lock (say, one only the dev lock brings) or a broken entrypoint fails here."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devenv.system import REPO_DIR, free_port
from testenv import ClusterHandle, build
from tests.support.processes import ManagedProcess, child_env

pytestmark = pytest.mark.cluster

ENTRYPOINT = ["sh", str(REPO_DIR / "deploy" / "entrypoint.sh")]


@pytest.fixture(scope="module")
def runtime_venv() -> Path:
    """A virtualenv holding exactly requirements.runtime.lock, kept in the build cache under
    the lock's hash (installing it takes most of a minute; the lock fixes its contents)."""
    lock = REPO_DIR / "requirements.runtime.lock"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    venv = build.cache_dir() / f"image-venv-{digest}"
    if (venv / ".complete").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",  # bytecode is the image build's concern, not this check's
            "--require-hashes",
            "--no-deps",
            "-r",
            str(lock),
        ],
        check=True,
    )
    (venv / ".complete").touch()
    return venv


@pytest.fixture(scope="module")
def image_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/app as the Dockerfile's build stage fills it: only what its COPY lines copy, so a
    package it leaves out fails here as it would in the cluster."""
    app = tmp_path_factory.mktemp("image") / "app"
    app.mkdir()
    dockerfile = (REPO_DIR / "deploy" / "Dockerfile").read_text()
    for source, target in re.findall(r"^COPY (\S+) \./(\S*)$", dockerfile, flags=re.MULTILINE):
        origin = REPO_DIR / source
        if origin.is_dir():
            shutil.copytree(
                origin, app / target, ignore=shutil.ignore_patterns("__pycache__", "tests")
            )
        else:
            shutil.copy2(origin, app / (target or origin.name))
    return app


@pytest.fixture
def image_env(
    runtime_venv: Path, tmp_path: Path, django_db_setup: None, kube_cluster: ClusterHandle
) -> dict[str, str]:
    """The image's environment (Dockerfile ENV plus a deployment's ConfigMap and Secret),
    pointed at this test run's database, Redis and cluster (nothing from .local/: the image
    has none)."""
    env = child_env()
    env.update(
        {
            "KUBECONFIG": str(kube_cluster.kubeconfig),
            "PATH": f"{runtime_venv / 'bin'}:{os.environ['PATH']}",
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": "image-test-" + "k" * 60,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "CS_SANDBOX_IMAGE": "registry.example.com/agents/sandbox:1.0.0",
            "CS_PUBLIC_URL": "https://context-service.example.com",
            "CS_STATIC_ROOT": str(tmp_path / "staticfiles"),
            "CS_WEB_WORKERS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


@pytest.fixture
def image_web(image_env: dict[str, str], image_app: Path) -> Iterator[str]:
    collected = subprocess.run(
        [*ENTRYPOINT, "manage", "collectstatic", "--no-input", "--verbosity", "0"],
        env=image_env,
        cwd=image_app,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (collected.returncode, collected.stderr) == (0, "")
    port = free_port()
    # The image binds 0.0.0.0; a later --bind wins, and this machine stays on loopback.
    web = ManagedProcess(
        "image-web",
        [*ENTRYPOINT, "web", "--bind", f"127.0.0.1:{port}"],
        image_env,
        cwd=image_app,
    ).start()
    try:
        web.wait_listening(port, timeout=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        web.stop()


def get(url: str) -> tuple[int, str, bytes]:
    # As behind the ingress, which ends TLS (production settings redirect plain HTTP).
    request = urllib.request.Request(url, headers={"X-Forwarded-Proto": "https"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.headers["Content-Type"], response.read()


@pytest.mark.django_db(transaction=True)
def test_the_runtime_lock_and_entrypoint_serve_the_web_process(image_web: str) -> None:
    status, _, body = get(f"{image_web}/readyz")
    assert status == 200
    assert json.loads(body) == {
        "status": "ok",
        "checks": {"postgres": "ok", "redis": "ok", "kubernetes": "ok"},
        "features": {"sandboxes": True, "extensions": True, "missing": []},
    }

    status, _, page = get(f"{image_web}/login/")
    assert status == 200
    # Hashed names: the collected manifest, not the source tree, serves the assets.
    stylesheet = re.search(rb'href="(/static/frontend/app\.[0-9a-f]{12}\.css)"', page)
    assert stylesheet is not None, page[:500]
    status, content_type, css = get(f"{image_web}{stylesheet.group(1).decode()}")
    assert (status, content_type.split(";")[0]) == (200, "text/css")
    assert css == (REPO_DIR / "frontend" / "static" / "frontend" / "app.css").read_bytes()


def test_the_entrypoint_refuses_an_unknown_command(image_env: dict[str, str]) -> None:
    result = subprocess.run(
        [*ENTRYPOINT, "serve-everything"],
        env=image_env,
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
        check=False,
    )

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "unknown command 'serve-everything': use web, worker, beat, watcher, migrate or manage\n"
    )


def test_the_dockerfile_copies_every_package_the_service_imports() -> None:
    """The image is never built here, so a package left out of its COPY lines (as rules/
    and workspaces/ once were) would only fail in a cluster: hold the lines to the tree.
    The tools beside the service (the local stack, the test cluster, the benches, the
    tests) stay out of it."""
    dockerfile = (REPO_DIR / "deploy" / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, flags=re.MULTILINE))
    tools = {"tests", "bench", "devenv", "testenv"}
    packages = {path.parent.name for path in REPO_DIR.glob("*/__init__.py")}

    assert tools <= packages
    assert copied == packages - tools
