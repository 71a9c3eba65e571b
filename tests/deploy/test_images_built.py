"""The images themselves (``make image``, devenv/image.py): both built from this tree as
OCI archives, held to their Dockerfiles, then started as a Pod would start them — as the
non-root user, on a read-only root with a writable /tmp only — against this run's
PostgreSQL, Redis and control plane on loopback.

- The service image runs its migrations, web, worker and watcher; it answers /healthz,
  /readyz and the login page, and a v1 sandbox pool goes POST → ready → DELETE through it.
  Its root is the same, file for file, afterwards.
- The agent image runs the executor's escape suite (cs_agent/tests/sandbox/test_escape.py)
  inside it, with bubblewrap and Landlock as the image has them and the Pod's seccomp
  setting (deploy/agent/pod.yaml: Unconfined, the executor's own filter inside). pytest is
  lent to it read-only for the run; the image has none.

Each process is started through bubblewrap as UID 10001 (setpriv: a real non-root user, not
root in a user namespace), sharing this machine's network for loopback only.

Serial: building the two images keeps both cores busy for a few minutes, which the other
test process's timing would feel."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from devenv import dockerfile
from devenv.image import IMAGES, Unpacked, build, packages, unpack
from devenv.system import REPO_DIR, free_port
from testenv import ClusterHandle
from tests.support.api import issue_token
from tests.support.processes import ManagedProcess, child_env, wait_until

# The first test to ask for the images pays for building them inside its own timeout:
# about 4 minutes on 2 cores from a clean checkout (no cached Debian root, mmdebstrap and
# umoci still to install), past the suite's 300 s with the test's own run added.
pytestmark = [pytest.mark.cluster, pytest.mark.serial, pytest.mark.timeout(900)]

USER = 10001


@pytest.fixture(scope="session")
def images() -> Iterator[dict[str, Unpacked]]:
    """Both images built from the tree as it is, and unpacked. The directory is readable by
    the image's user (a test's tmp_path is not). Once a session: pytest-django runs this
    module's database test apart from the others, and a module-scoped fixture was built
    twice."""
    work = Path(tempfile.mkdtemp(prefix="cs-images-"))
    work.chmod(0o755)
    try:
        yield {image.name: unpack(build(image), work / image.name) for image in IMAGES}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def final_stage(name: str) -> dockerfile.Stage:
    image = next(image for image in IMAGES if image.name == name)
    return dockerfile.read(image.dockerfile)[-1]


@pytest.mark.parametrize("name", [image.name for image in IMAGES])
def test_each_image_is_what_its_dockerfile_declares(images: dict[str, Unpacked], name: str) -> None:
    stage = final_stage(name)
    built = images[name]

    assert built.config.get("User") == stage.last("USER")
    assert built.config.get("Entrypoint") == (stage.exec_form("ENTRYPOINT") or None)
    assert built.config.get("Cmd") == (stage.exec_form("CMD") or None)
    assert sorted(built.config.get("ExposedPorts") or {}) == stage.ports()
    assert built.config["Env"] == [f"{k}={v}" for k, v in stage.environment().items()]
    assert built.config["WorkingDir"] == stage.last("WORKDIR")
    installed = packages(built.root)
    assert {package: installed.get(package) for package in stage.pinned_packages()} == (
        stage.pinned_packages()
    )
    # One layer per instruction that changes files, in the Dockerfile's order.
    assert built.history[1:] == [
        f"{item.keyword} {item.arguments}"
        for item in stage.instructions
        if item.keyword in ("RUN", "COPY", "WORKDIR")
    ]
    passwd = (built.root / "etc" / "passwd").read_text()
    assert f":{USER}:{USER}:" in passwd


# --- running an image ------------------------------------------------------------------------


def contained(
    root: Path,
    config: dict[str, Any],
    argv: Sequence[str],
    *,
    env: dict[str, str],
    binds: Sequence[tuple[str, str]] = (),
    writable: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """``argv`` in the image as its Pod runs it: UID/GID 10001, the root read-only, an
    empty /tmp (the emptyDir), the image's environment with ``env`` over it."""
    image_env = dict(item.split("=", 1) for item in config["Env"])
    setenv = [part for k, v in {**image_env, **env}.items() for part in ("--setenv", k, v)]
    mounts = [part for host, inside in binds for part in ("--ro-bind", host, inside)]
    mounts += [part for host, inside in writable for part in ("--bind", host, inside)]
    return [
        "setpriv",
        f"--reuid={USER}",
        f"--regid={USER}",
        "--clear-groups",
        "--",
        shutil.which("bwrap") or "bwrap",
        "--ro-bind",
        str(root),
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        *mounts,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--chdir",
        config["WorkingDir"] or "/",
        "--clearenv",
        *setenv,
        "--",
        *argv,
    ]


def tree_digest(root: Path) -> str:
    """Every path of a root with its type, mode, size and content's digest."""
    digest = hashlib.sha256()
    for directory, names, files in os.walk(root):
        names.sort()
        for name in sorted(files + [n for n in names if os.path.islink(Path(directory) / n)]):
            path = Path(directory) / name
            info = path.lstat()
            digest.update(f"{path.relative_to(root)}\0{info.st_mode}\0{info.st_size}\0".encode())
            if path.is_file() and not path.is_symlink():
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def call(base: str, method: str, path: str, token: str = "", body: Any = None) -> tuple[int, Any]:
    headers = {"X-Forwarded-Proto": "https", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read(), error.code
    kind = "json" if raw[:1] in (b"{", b"[") else "text"
    return status, (json.loads(raw) if kind == "json" else raw.decode(errors="replace"))


@pytest.fixture
def kubeconfig(kube_cluster: ClusterHandle) -> Iterator[Path]:
    """The cluster's kubeconfig, readable by the image's user (as a mounted Secret is)."""
    folder = Path(tempfile.mkdtemp(prefix="cs-image-kube-"))
    folder.chmod(0o755)
    copy = folder / "kubeconfig"
    shutil.copy(kube_cluster.kubeconfig, copy)
    os.chown(copy, USER, USER)
    copy.chmod(0o400)
    yield copy
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.django_db(transaction=True)
def test_the_service_image_serves_a_pool_from_a_read_only_root(
    images: dict[str, Unpacked], kubeconfig: Path, namespace: str
) -> None:
    built = images["context-service"]
    before = tree_digest(built.root)
    test_env = child_env()
    env = {
        # The deployment's ConfigMap and Secret, pointed at this run's services.
        "DJANGO_SECRET_KEY": "image-smoke-" + "k" * 60,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": test_env["DATABASE_URL"],
        "REDIS_URL": test_env["REDIS_URL"],
        "CS_CELERY_QUEUE": test_env["CS_CELERY_QUEUE"],
        "CS_PUBLIC_URL": "https://context-service.example.com",
        "CS_SANDBOX_IMAGE": "registry.example.com/agents/sandbox:1.0.0",
        "CS_NAMESPACE": namespace,
        "CS_ALLOWED_NAMESPACES": namespace,
        "CS_WEB_WORKERS": "1",
        "CS_WORKER_CONCURRENCY": "2",
        "KUBECONFIG": "/tmp/kube/kubeconfig",
    }
    # Over the Pod's /tmp: a read-only root has no mount point of its own to offer it (the
    # kubelet makes one; bubblewrap cannot), and the service reads it and nothing more.
    binds = [(str(kubeconfig), "/tmp/kube/kubeconfig")]
    entry = built.config["Entrypoint"]

    def start(name: str, *arguments: str) -> ManagedProcess:
        """The entrypoint's process ``name`` (web, worker, watcher)."""
        argv = contained(built.root, built.config, [*entry, name, *arguments], env=env, binds=binds)
        return ManagedProcess(f"image-{name}", argv, {"PATH": os.environ["PATH"]}).start()

    migrate = subprocess.run(
        contained(built.root, built.config, [*entry, "migrate"], env=env, binds=binds),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert migrate.returncode == 0, migrate.stderr[-2000:]

    port = free_port()
    processes = [
        start("worker"),
        start("watcher"),
        start("web", "--bind", f"127.0.0.1:{port}"),
    ]
    base = f"http://127.0.0.1:{port}"
    try:
        processes[-1].wait_listening(port, timeout=120)
        wait_until(
            lambda: "watching" in processes[1].log_path.read_text(errors="replace"),
            timeout=120,
            interval=0.5,
            message="the image's watcher to watch",
        )
        assert call(base, "GET", "/healthz")[0] == 200
        assert call(base, "GET", "/readyz") == (
            200,
            {
                "status": "ok",
                "checks": {"postgres": "ok", "redis": "ok", "kubernetes": "ok"},
                "features": {"sandboxes": True, "extensions": True, "missing": []},
            },
        )
        status, page = call(base, "GET", "/login/")
        assert status == 200
        assert "/static/frontend/app." in page

        token = issue_token("image-smoke", ["allocations"])
        body = {
            "name": "smoke",
            "replicas": 1,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        }
        status, created = call(base, "POST", "/v1/sandbox-pools", token, body)
        assert (status, created["name"], created["status"]) == (201, "smoke", "provisioning")
        status, shown = call(base, "GET", "/v1/sandbox-pools/smoke?wait=60", token)
        assert (status, shown["status"], shown["readyReplicas"]) == (200, "ready", 1)
        status, _ = call(base, "DELETE", "/v1/sandbox-pools/smoke", token)
        assert status in (200, 202, 204)

        def gone() -> bool:
            return call(base, "GET", "/v1/sandbox-pools/smoke", token)[0] == 404

        wait_until(gone, timeout=120, interval=0.5, message="the pool to be released")
        for process in processes:
            process.assert_running()
    finally:
        for process in reversed(processes):
            process.stop()

    # Nothing was written outside the Pod's volumes (its /tmp and the mounted kubeconfig).
    assert tree_digest(built.root) == before


def test_the_agent_image_holds_the_escape_suite_inside_it(
    images: dict[str, Unpacked], tmp_path: Path
) -> None:
    """The escape suite, run by the image's own Python, cs_agent and bubblewrap."""
    built = images["context-service-agent-base"]
    # The workspace volume's mount point, which the container runtime makes in the root
    # before it is made read-only (bubblewrap cannot on a read-only one).
    (built.root / "workspace").mkdir(exist_ok=True)
    before = tree_digest(built.root)
    suite = Path(tempfile.mkdtemp(prefix="cs-image-suite-"))
    workspace = Path(tempfile.mkdtemp(prefix="cs-image-workspace-", dir="/var/tmp"))
    lent = Path(tempfile.mkdtemp(prefix="cs-image-pytest-"))
    try:
        for folder in (suite, workspace, lent):
            folder.chmod(0o755)
        os.chown(workspace, USER, USER)
        escape = REPO_DIR / "cs_agent" / "tests" / "sandbox"
        # The suite with its own conftest, under one that stands for the project's.
        (suite / "sandbox").mkdir()
        for name in ("test_escape.py", "conftest.py"):
            shutil.copy(escape / name, suite / "sandbox" / name)
        (suite / "conftest.py").write_text(IN_IMAGE_CONFTEST)
        _lend_pytest(lent)
        result = subprocess.run(
            contained(
                built.root,
                built.config,
                ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "/tmp/suite"],
                env={
                    "PYTHONPATH": "/opt/cs_agent:/tmp/pytest",
                    # As deploy/agent/pod.yaml sets it: no delegated cgroup here either.
                    "CS_EXECUTOR_MEMORY_RLIMIT": "1",
                },
                # Lent for the run, over the Pod's /tmp (the root has no place for them).
                binds=[(str(suite), "/tmp/suite"), (str(lent), "/tmp/pytest")],
                writable=[(str(workspace), "/workspace")],
            ),
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    finally:
        for folder in (suite, workspace, lent):
            shutil.rmtree(folder, ignore_errors=True)

    source = (escape / "test_escape.py").read_text().splitlines()
    tests = sum(1 for line in source if line.startswith("def test_"))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # All but the probe of a sub-mount, which must mount a tmpfs to set itself up: only
    # root may, and the image runs as 10001 (it runs in the suite on the host, as root).
    assert result.stdout.splitlines()[-1].startswith(f"{tests - 1} passed, 1 skipped in ")
    assert tree_digest(built.root) == before


# The fixture the escape suite takes from the project's conftest, for a run with only the
# image and pytest: the workspace is the Pod's /workspace volume.
IN_IMAGE_CONFTEST = """
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def workspace_root():
    root = Path(tempfile.mkdtemp(prefix="ws-", dir="/workspace"))
    yield root
    shutil.rmtree(root, ignore_errors=True)
"""


def _lend_pytest(into: Path) -> None:
    """pytest and what it imports, from this environment (pure Python, for the image's
    Python 3.11)."""
    import _pytest
    import iniconfig
    import packaging
    import pluggy
    import pygments  # type: ignore[import-untyped]

    for module in (_pytest, iniconfig, packaging, pluggy, pygments, pytest):
        source = Path(module.__file__ or "").parent
        shutil.copytree(source, into / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    shim = Path(pytest.__file__ or "").parent.parent / "py.py"
    if shim.exists():
        shutil.copy(shim, into / "py.py")
