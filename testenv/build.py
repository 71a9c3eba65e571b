"""Build and cache the control-plane binaries from the Go module proxy.

Every component is built once per pinned version into
``$CS_CACHE_DIR/bin/<component>-<version>/`` (default cache dir
``~/.cache/context-service``). A ``.complete`` marker (JSON with the build's wall time) is
written only after the binaries are in place, so an interrupted build is simply redone.

Only the Go toolchain and the Go module proxy are used: ``go build`` in a small wrapper
module per component (the upstream modules carry relative ``replace`` directives that make
a plain ``go install pkg@version`` fail for etcd and Kubernetes).
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ETCD_VERSION = "v3.6.16"
KUBERNETES_VERSION = "v1.36.3"
KWOK_VERSION = "v0.8.0"
# The agent-sandbox release `make test` and `make run` build and run. Every release in
# AGENT_SANDBOX_SUPPORTED is one the service is known to work with; `make test-compat`
# runs the cluster and controller tests against another (AGENT_SANDBOX_VERSION=v0.5.6).
AGENT_SANDBOX_DEFAULT = "v1.0.1"
AGENT_SANDBOX_SUPPORTED = ("v1.0.1", "v0.5.6")
AGENT_SANDBOX_VERSION = os.environ.get("AGENT_SANDBOX_VERSION") or AGENT_SANDBOX_DEFAULT
if AGENT_SANDBOX_VERSION not in AGENT_SANDBOX_SUPPORTED:
    raise SystemExit(
        f"AGENT_SANDBOX_VERSION={AGENT_SANDBOX_VERSION} is not one this checkout supports "
        f"({', '.join(AGENT_SANDBOX_SUPPORTED)})"
    )


def agent_sandbox_before_v1() -> bool:
    """v0.5 serves its conversion webhook unless told not to; v1 has neither."""
    return AGENT_SANDBOX_VERSION.startswith("v0.")


# Renders deploy/ for the manifest tests (v5.8.3 needs a newer Go than 1.26).
KUSTOMIZE_VERSION = "v5.8.2"

# How often a running build reports that it is still going.
PROGRESS_EVERY = 20.0


class BuildError(RuntimeError):
    """A component could not be built; the message names it and points at its log."""


def cache_dir() -> Path:
    return Path(os.environ.get("CS_CACHE_DIR", str(Path.home() / ".cache" / "context-service")))


def say(message: str) -> None:
    print(f"[testenv] {message}", file=sys.stderr, flush=True)


def _fmt_duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass(frozen=True)
class Component:
    """One buildable unit: a set of binaries that come from one pinned module version."""

    name: str
    version: str
    binaries: tuple[str, ...]
    # Writes the wrapper module into the work dir and returns the go build arguments
    # (after ``go build -o OUTDIR``).
    prepare: Callable[[Path], list[str]] = field(compare=False, repr=False)
    # Bumped when the way we build changes, so an old cached build is redone.
    recipe: str = "1"

    @property
    def bin_dir(self) -> Path:
        return cache_dir() / "bin" / f"{self.name}-{self.version}"

    @property
    def marker(self) -> Path:
        return self.bin_dir / ".complete"

    def path(self, binary: str) -> Path:
        return self.bin_dir / binary

    def is_built(self) -> bool:
        if not all(self.path(b).is_file() for b in self.binaries):
            return False
        return self.build_info().get("recipe", "1") == self.recipe

    def build_info(self) -> dict[str, object]:
        try:
            return dict(json.loads(self.marker.read_text()))
        except (OSError, ValueError):
            return {}


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"
    # Never let go download another toolchain; the installed one is what we build with.
    env["GOTOOLCHAIN"] = "local"
    # -mod=mod lets go build fill in go.sum of the wrapper modules from the proxy.
    flags = env.get("GOFLAGS", "").split()
    env["GOFLAGS"] = " ".join([f for f in flags if not f.startswith("-mod=")] + ["-mod=mod"])
    return env


def _go(args: list[str], cwd: Path, log: Path) -> str:
    """Run a short go command (module download / edit), logging its output."""
    with log.open("a") as out:
        out.write(f"$ go {' '.join(args)}\n")
        out.flush()
        result = subprocess.run(
            ["go", *args], cwd=cwd, env=_go_env(), capture_output=True, text=True, check=False
        )
        out.write(result.stdout + result.stderr)
    if result.returncode != 0:
        raise BuildError(f"go {' '.join(args)} failed in {cwd}:\n{result.stderr[-3000:]}")
    return result.stdout


def _write_module(
    work: Path, module: str, requires: dict[str, str], replaces: dict[str, str]
) -> None:
    lines = [f"module {module}", "", "go 1.26.0", "", "require ("]
    lines += [f"\t{mod} {ver}" for mod, ver in sorted(requires.items())]
    lines.append(")")
    if replaces:
        lines += ["", "replace ("]
        lines += [f"\t{mod} => {target}" for mod, target in sorted(replaces.items())]
        lines.append(")")
    (work / "go.mod").write_text("\n".join(lines) + "\n")


def _download(work: Path, log: Path, module: str, version: str) -> dict[str, object]:
    """``go mod download -json module@version``: fetches it and says where it is."""
    out = _go(["mod", "download", "-json", f"{module}@{version}"], work, log)
    return dict(json.loads(out))


def module_dir(module: str, version: str) -> Path:
    """Source directory of a module version in the Go module cache (downloading it)."""
    work = cache_dir() / "src" / "download"
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "go.mod").exists():
        (work / "go.mod").write_text("module download\n\ngo 1.26.0\n")
    info = _download(work, cache_dir() / "logs" / "download.log", module, version)
    return Path(str(info["Dir"]))


def _prepare_etcd(work: Path) -> list[str]:
    # etcd's own main package (go.etcd.io/etcd/v3) is just ``etcdmain.Main(os.Args)``.
    _write_module(work, "cs-etcd", {"go.etcd.io/etcd/server/v3": ETCD_VERSION}, {})
    (work / "main.go").write_text(
        "// Command etcd: the same entry point as etcd's own main package.\n"
        "package main\n\n"
        'import (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
        "func main() { etcdmain.Main(os.Args) }\n"
    )
    return ["-trimpath", "-ldflags=-s -w", "-o", str(work / "out" / "etcd"), "."]


def _staging_replaces(gomod: Path) -> dict[str, str]:
    """Every ``k8s.io/*`` staging module the release requires at v0.0.0, pinned to its tag.

    The release's go.mod replaces them with ``./staging/...`` paths, which a dependent
    module cannot use; each staging module is also published as ``v0.<minor>.<patch>``.
    """
    staging_version = "v0" + KUBERNETES_VERSION[2:]  # v1.36.3 -> v0.36.3
    replaces = {}
    for raw in gomod.read_text().splitlines():
        parts = raw.strip().split()
        if len(parts) >= 2 and parts[0].startswith("k8s.io/") and parts[1] == "v0.0.0":
            replaces[parts[0]] = f"{parts[0]} {staging_version}"
    if not replaces:
        raise BuildError(f"no v0.0.0 staging requirements found in {gomod}")
    return replaces


def _prepare_kubernetes(work: Path) -> list[str]:
    log = cache_dir() / "logs" / f"kubernetes-{KUBERNETES_VERSION}.log"
    (work / "go.mod").write_text("module cs-kubernetes\n\ngo 1.26.0\n")
    info = _download(work, log, "k8s.io/kubernetes", KUBERNETES_VERSION)
    replaces = _staging_replaces(Path(str(info["GoMod"])))
    _write_module(work, "cs-kubernetes", {"k8s.io/kubernetes": KUBERNETES_VERSION}, replaces)
    major, minor = KUBERNETES_VERSION[1:].split(".")[:2]
    origin = info.get("Origin")
    commit = str(origin.get("Hash", "")) if isinstance(origin, dict) else ""
    values = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": commit,
        "buildDate": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    ldflags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        ldflags += [f"-X {pkg}.{key}={value}" for key, value in values.items() if value]
    return [
        "-trimpath",
        "-ldflags=" + " ".join(ldflags),
        "-o",
        str(work / "out") + "/",
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-scheduler",
    ]


def _prepare_plain(
    module: str, version: str, package: str, binary: str
) -> Callable[[Path], list[str]]:
    """A module whose main package builds as a plain dependency (no replace needed)."""

    def prepare(work: Path) -> list[str]:
        _write_module(work, f"cs-{binary}", {module: version}, {})
        return ["-trimpath", "-ldflags=-s -w", "-o", str(work / "out" / binary), package]

    return prepare


ETCD = Component("etcd", ETCD_VERSION, ("etcd",), _prepare_etcd)
KUBERNETES = Component(
    "kubernetes",
    KUBERNETES_VERSION,
    ("kube-apiserver", "kube-controller-manager", "kube-scheduler"),
    _prepare_kubernetes,
)
KWOK = Component(
    "kwok",
    KWOK_VERSION,
    ("kwok",),
    _prepare_plain("sigs.k8s.io/kwok", KWOK_VERSION, "sigs.k8s.io/kwok/cmd/kwok", "kwok"),
)
# The controller reads its label allow-list only from a file at a fixed path,
# /etc/sandbox-config/allowed-label-domains, where its Deployment mounts the ConfigMap
# agent-sandbox-config (namespace agent-sandbox-system); it never reads the ConfigMap
# through the API. Outside a Pod we cannot put a file there without root and writing to
# /etc, so we build from a copy of the module (as served by the proxy) whose main.go has
# one change: the environment variable below can override that path.
SANDBOX_CONFIG_ENV = "CS_SANDBOX_CONFIG_FILE"
_SANDBOX_CONFIG_LINE = 'configPath := "/etc/sandbox-config/allowed-label-domains"'
_SANDBOX_CONFIG_PATCH = f"""configPath := os.Getenv("{SANDBOX_CONFIG_ENV}")
		if configPath == "" {{
			configPath = "/etc/sandbox-config/allowed-label-domains"
		}}"""


def _prepare_agent_sandbox(work: Path) -> list[str]:
    source = module_dir("sigs.k8s.io/agent-sandbox", AGENT_SANDBOX_VERSION)
    copy = work / "agent-sandbox"
    # The module cache is read-only; the copy must be writable (and removable later).
    shutil.copytree(source, copy, copy_function=shutil.copyfile)
    main_go = copy / "cmd" / "agent-sandbox-controller" / "main.go"
    text = main_go.read_text()
    if text.count(_SANDBOX_CONFIG_LINE) != 1:
        raise BuildError(f"cannot find the config path line to patch in {main_go}")
    main_go.write_text(text.replace(_SANDBOX_CONFIG_LINE, _SANDBOX_CONFIG_PATCH))
    # Built as its own main module: its go.mod and go.sum pin every dependency.
    return [
        "-C",
        str(copy),
        "-trimpath",
        "-ldflags=-s -w",
        "-o",
        str(work / "out" / "agent-sandbox-controller"),
        "./cmd/agent-sandbox-controller",
    ]


AGENT_SANDBOX = Component(
    "agent-sandbox",
    AGENT_SANDBOX_VERSION,
    ("agent-sandbox-controller",),
    _prepare_agent_sandbox,
    recipe="2-config-path-env",
)
# Small ones first so a fresh machine gets useful binaries early.
KUSTOMIZE = Component(
    "kustomize",
    KUSTOMIZE_VERSION,
    ("kustomize",),
    _prepare_plain(
        "sigs.k8s.io/kustomize/kustomize/v5",
        KUSTOMIZE_VERSION,
        "sigs.k8s.io/kustomize/kustomize/v5",
        "kustomize",
    ),
)
COMPONENTS: tuple[Component, ...] = (AGENT_SANDBOX, ETCD, KWOK, KUBERNETES, KUSTOMIZE)


def build_component(component: Component, *, force: bool = False) -> float:
    """Build one component unless cached; returns the seconds spent (0 when cached). One
    process builds it at a time (the suite's processes may ask at once); the others wait
    for it and find it built."""
    if component.is_built() and not force:
        return 0.0
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{component.name}-{component.version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if component.is_built() and not force:
            return 0.0
        return _build(component)


def _build(component: Component) -> float:
    if shutil.which("go") is None:
        raise BuildError("the Go toolchain ('go') is not on PATH; install Go 1.26 first")
    started = time.monotonic()
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{component.name}-{component.version}.log"
    log.write_text("")
    work = cache_dir() / "src" / f"{component.name}-{component.version}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "out").mkdir(parents=True)
    say(f"building {component.name} {component.version} (log: {log})")
    args = ["build", *component.prepare(work)]
    with log.open("a") as out:
        out.write(f"$ go {' '.join(args)}\n")
        out.flush()
        proc = subprocess.Popen(["go", *args], cwd=work, env=_go_env(), stdout=out, stderr=out)
        next_report = started + PROGRESS_EVERY
        while proc.poll() is None:
            time.sleep(0.5)
            if time.monotonic() >= next_report:
                names = ", ".join(component.binaries)
                say(f"building {names}… {_fmt_duration(time.monotonic() - started)}")
                next_report += PROGRESS_EVERY
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-30:])
        raise BuildError(f"building {component.name} failed (full log: {log}):\n{tail}")
    elapsed = time.monotonic() - started
    # Move the finished binaries into place, then write the marker last.
    shutil.rmtree(component.bin_dir, ignore_errors=True)
    component.bin_dir.mkdir(parents=True)
    for binary in component.binaries:
        shutil.move(str(work / "out" / binary), component.path(binary))
    shutil.rmtree(work, ignore_errors=True)  # the wrapper module is not needed any more
    go_version = subprocess.run(
        ["go", "env", "GOVERSION"], capture_output=True, text=True, check=False
    ).stdout.strip()
    component.marker.write_text(
        json.dumps(
            {
                "component": component.name,
                "version": component.version,
                "recipe": component.recipe,
                "build_seconds": round(elapsed, 1),
                "go": go_version,
                "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            },
            indent=2,
        )
        + "\n"
    )
    say(f"built {component.name} {component.version} in {_fmt_duration(elapsed)}")
    return elapsed


def build_workers() -> int:
    """How many components build at once: one per core (each ``go build`` compiles in
    parallel too, but downloading modules and linking are mostly one process's work, and
    another build's compiling fills the core meanwhile); CS_BUILD_JOBS overrides."""
    return max(1, int(os.environ.get("CS_BUILD_JOBS") or os.cpu_count() or 1))


def ensure_built(*, force: bool = False) -> dict[str, Path]:
    """Build whatever is missing, the largest first and up to ``build_workers()`` at once;
    returns binary name -> path for every component."""
    started = time.monotonic()
    missing = [c for c in COMPONENTS if force or not c.is_built()]
    missing.sort(key=lambda c: c is not KUBERNETES)  # the longest build starts first
    if missing:
        with concurrent.futures.ThreadPoolExecutor(max_workers=build_workers()) as pool:
            builds = [pool.submit(build_component, c, force=force) for c in missing]
            for done in builds:
                done.result()  # a failed build raises here, after the others finished
        say(f"all binaries built in {_fmt_duration(time.monotonic() - started)}")
    return binaries()


def binaries() -> dict[str, Path]:
    return {b: c.path(b) for c in COMPONENTS for b in c.binaries}


def all_built() -> bool:
    return all(c.is_built() for c in COMPONENTS)


if __name__ == "__main__":
    # Run as a file (``python3 testenv/build.py``) it needs neither the project's
    # virtualenv nor its package: ``make test`` builds while it installs and checks the rest.
    ensure_built()
