"""``make image``: the service's and the agent's images built without Docker, as OCI
archives under ``.local/images/``, by following their Dockerfiles (devenv/dockerfile.py).

- ``FROM debian:bookworm-slim`` is a root that mmdebstrap makes from Debian's packages
  (minbase, with the official slim image's exclusions: no manuals, no documentation but
  the copyright files, no translations), so no image is pulled from a registry.
- ``RUN`` runs in that root under bubblewrap, as root, with the machine's network and its
  name server (Docker's build does the same); the machine's pip settings (a certificate
  authority, an index) are lent to it for the step and never written to the image.
- ``COPY`` copies from the repository (minus .dockerignore) or from an earlier stage.
- The final stage is made into layers with umoci, one per ``RUN``, ``COPY`` and
  ``WORKDIR`` after the base, as Docker makes them; ``ENV``, ``WORKDIR``, ``USER``,
  ``EXPOSE``, ``ENTRYPOINT`` and ``CMD`` become its configuration.
- A stage ``FROM node:…`` (the dashboard's assets: ``npm ci`` from the lock) runs on the
  machine's own Node.js, which must be the version its tag names: its only output is the
  ``node_modules`` a later stage copies.

``python -m devenv.image build [NAME…]`` builds; ``make image-smoke`` builds and starts them
(tests/deploy/test_images_built.py). Needs root (mmdebstrap's root mode, a root's owners).
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from devenv import dockerfile
from devenv.dockerfile import DockerfileError, Stage
from devenv.system import LOCAL_DIR, REPO_DIR, DevEnvError, is_root, say, which_or_install

IMAGES_DIR = LOCAL_DIR / "images"
SUITE = "bookworm"
DEBIAN_BASE = "debian:bookworm-slim"
MIRROR = os.environ.get("CS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# What the official slim image leaves out (debuerreotype's slimify), as dpkg excludes.
SLIM = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/locale/locale.alias",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/lintian/*",
)
# What the official image's apt is told (its /etc/apt/apt.conf.d/docker-*): no package
# files or caches left behind an install, no translations fetched, indexes kept packed.
_CLEAN = (
    '"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
    '/var/cache/apt/*.bin || true";'
)
APT = (
    "APT::Install-Recommends false",
    f"DPkg::Post-Invoke {{ {_CLEAN} }}",
    f"APT::Update::Post-Invoke {{ {_CLEAN} }}",
    'Dir::Cache::pkgcache ""',
    'Dir::Cache::srcpkgcache ""',
    'Acquire::Languages "none"',
    'Acquire::GzipIndexes "true"',
)


@dataclass(frozen=True)
class Image:
    name: str
    dockerfile: Path

    @property
    def archive(self) -> Path:
        return IMAGES_DIR / f"{self.name}.oci.tar"


IMAGES = (
    Image("context-service", REPO_DIR / "deploy" / "Dockerfile"),
    Image("context-service-agent-base", REPO_DIR / "deploy" / "agent" / "Dockerfile"),
)
TAG = "latest"


def tools() -> dict[str, str]:
    return {
        "mmdebstrap": which_or_install("mmdebstrap", "mmdebstrap"),
        "umoci": which_or_install("umoci", "umoci"),
        "bwrap": which_or_install("bwrap", "bubblewrap"),
    }


def build(image: Image) -> Path:
    """The image as an OCI archive (``oci-archive:PATH:latest``); returns its path."""
    if not is_root():
        raise DevEnvError("make image runs as root (mmdebstrap's root mode keeps owners)")
    found = tools()
    stages = dockerfile.read(image.dockerfile)
    IMAGES_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log = IMAGES_DIR / f"{image.name}.log"
    say(f"building {image.name} from {image.dockerfile.relative_to(REPO_DIR)} (log: {log})")
    with (
        tempfile.TemporaryDirectory(prefix=f"image-{image.name}-", dir=IMAGES_DIR) as work,
        log.open("w") as output,
    ):
        builder = _Builder(Path(work), found, output)
        roots: dict[str, Path] = {}
        for index, stage in enumerate(stages):
            final = index == len(stages) - 1
            roots[stage.name] = builder.stage(stage, roots, final=final)
        # Each layer's repack wrote a manifest and a configuration the next replaced.
        builder.umoci("gc", "--layout", str(builder.layout))
        _archive(builder.layout, image.archive)
    say(f"{image.name}: {image.archive} in {time.monotonic() - started:.0f} s")
    return image.archive


class _Builder:
    def __init__(self, work: Path, found: dict[str, str], output: IO[str]) -> None:
        self.output = output
        self.work = work
        self.tools = found
        self.layout = work / "layout"
        self.image = f"{self.layout}:{TAG}"

    # --- stages ------------------------------------------------------------------------------

    def stage(self, stage: Stage, roots: dict[str, Path], *, final: bool) -> Path:
        if stage.base.startswith("node:"):
            if final:
                raise DockerfileError("a Node.js stage cannot be the image itself")
            return self._host_stage(stage)
        if stage.base != DEBIAN_BASE:
            raise DockerfileError(
                f"FROM {stage.base}: make image builds {DEBIAN_BASE} stages (and node: ones)"
            )
        say(f"stage {stage.name}: {DEBIAN_BASE} from Debian's packages (mmdebstrap)")
        bundle = self.work / f"bundle-{stage.name}"
        root = bundle / "rootfs"
        if final:
            self.umoci("init", "--layout", str(self.layout))
            self.umoci("new", "--image", self.image)
            self.umoci("unpack", "--image", self.image, str(bundle))
        else:
            root.mkdir(parents=True)
        self._debian_root(root)
        if final:
            self._layer(bundle, f"FROM {DEBIAN_BASE} (mmdebstrap {SUITE} minbase)")
        for item in stage.instructions:
            workdir = stage.workdir(before=item.line + 1)
            if item.keyword == "WORKDIR":
                (root / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif item.keyword == "RUN":
                if any(user.line < item.line for user in stage.each("USER")):
                    raise DockerfileError(f"line {item.line}: RUN after USER is not built here")
                self._run(root, item.arguments, workdir, stage.environment(before=item.line))
            elif item.keyword == "COPY":
                _copy(item.arguments, root, workdir, roots)
            else:
                continue
            if final:
                self._layer(bundle, f"{item.keyword} {item.arguments}")
        if final:
            self._configure(stage)
        return root

    def _host_stage(self, stage: Stage) -> Path:
        """A ``node:`` stage on this machine's Node.js, in a directory standing for its root."""
        wanted = stage.base.split(":", 1)[1].split("-", 1)[0]
        node = shutil.which("node")
        version = (
            subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
            .stdout.strip()
            .lstrip("v")
            if node
            else ""
        )
        if version != wanted:
            raise DevEnvError(
                f"stage {stage.name} is FROM {stage.base}: this machine's Node.js is "
                f"{version or 'missing'}, not {wanted}"
            )
        say(f"stage {stage.name}: on this machine's Node.js {version}")
        root = self.work / f"host-{stage.name}"
        root.mkdir()
        for item in stage.instructions:
            workdir = stage.workdir(before=item.line + 1)
            if item.keyword == "WORKDIR":
                (root / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif item.keyword == "COPY":
                _copy(item.arguments, root, workdir, {})
            elif item.keyword == "RUN":
                subprocess.run(
                    ["sh", "-c", item.arguments],
                    cwd=root / workdir.lstrip("/"),
                    check=True,
                    stdout=self.output,
                    stderr=subprocess.STDOUT,
                )
            else:
                raise DockerfileError(f"line {item.line}: {item.keyword} in a Node.js stage")
        return root

    # --- steps -------------------------------------------------------------------------------

    def _debian_root(self, root: Path) -> None:
        """Debian's minbase and nothing else, made from the archive (cached for the day:
        the archive's packages change with its updates, and a build names its versions)."""
        options = [
            *(f"--aptopt={option}" for option in APT),
            *(f"--dpkgopt={option}" for option in SLIM),
        ]
        key = hashlib.sha256("\0".join(options).encode()).hexdigest()[:8]
        cache = IMAGES_DIR / "cache" / f"{SUITE}-minbase-{time.strftime('%Y%m%d')}-{key}.tar"
        if not cache.exists():
            cache.parent.mkdir(parents=True, exist_ok=True)
            partial = cache.with_suffix(".partial")
            subprocess.run(
                [
                    self.tools["mmdebstrap"],
                    "--quiet",
                    "--mode=root",
                    "--variant=minbase",
                    "--format=tar",
                    *options,
                    SUITE,
                    str(partial),
                    MIRROR,
                    f"deb {MIRROR} {SUITE}-updates main",
                    f"deb {MIRROR}-security {SUITE}-security main",
                ],
                check=True,
                stdout=self.output,
                stderr=subprocess.STDOUT,
            )
            partial.rename(cache)
            for old in cache.parent.glob(f"{SUITE}-minbase-*.tar"):
                if old != cache:
                    old.unlink()
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(cache) as archive:
            # Our own root, made by mmdebstrap a moment ago: owners and devices kept.
            archive.extractall(root, filter="fully_trusted")  # noqa: S202

    def _run(self, root: Path, command: str, workdir: str, env: dict[str, str]) -> None:
        """A RUN step: as root in the image's root, with this machine's network and name
        server; the machine's pip settings lent for the step."""
        lent: list[str] = []
        made: list[Path] = []
        for host, inside in (("/etc/resolv.conf", "/etc/resolv.conf"), *_pip_files()):
            target = root / inside.lstrip("/")
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
                made.append(target)
            lent += ["--ro-bind", host, inside]
        step_env = {**env, **_pip_env()}
        try:
            subprocess.run(
                [
                    self.tools["bwrap"],
                    "--bind",
                    str(root),
                    "/",
                    "--dev",
                    "/dev",
                    "--proc",
                    "/proc",
                    *lent,
                    "--unshare-pid",
                    "--unshare-ipc",
                    "--unshare-uts",
                    "--die-with-parent",
                    "--chdir",
                    workdir,
                    "--clearenv",
                    *(part for key, value in step_env.items() for part in ("--setenv", key, value)),
                    "/bin/sh",
                    "-c",
                    command,
                ],
                check=True,
                stdout=self.output,
                stderr=subprocess.STDOUT,
            )
        finally:
            for target in made:
                target.unlink(missing_ok=True)

    def _layer(self, bundle: Path, created_by: str) -> None:
        self.umoci(
            "repack",
            "--refresh-bundle",
            "--image",
            self.image,
            "--history.created_by",
            created_by,
            str(bundle),
        )

    def _configure(self, stage: Stage) -> None:
        options = ["--clear=config.env", "--clear=config.exposedports"]
        options += [f"--config.env={key}={value}" for key, value in stage.environment().items()]
        options += [f"--config.exposedports={port}" for port in stage.ports()]
        if stage.last("USER"):
            options.append(f"--config.user={stage.last('USER')}")
        options.append(f"--config.workingdir={stage.workdir()}")
        options += ["--clear=config.entrypoint", "--clear=config.cmd"]
        options += [f"--config.entrypoint={part}" for part in stage.exec_form("ENTRYPOINT")]
        options += [f"--config.cmd={part}" for part in stage.exec_form("CMD")]
        self.umoci("config", "--image", self.image, "--no-history", *options)

    def umoci(self, *arguments: str) -> None:
        subprocess.run(
            [self.tools["umoci"], *arguments],
            check=True,
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )


@functools.cache  # the machine's pip settings: asked once, not twice for every RUN
def _pip_files() -> list[tuple[str, str]]:
    cert = os.environ.get("PIP_CERT") or _pip_config("global.cert")
    return [(cert, "/run/build/pip-cert.pem")] if cert and Path(cert).is_file() else []


def _pip_env() -> dict[str, str]:
    env = {"PIP_CERT": "/run/build/pip-cert.pem"} if _pip_files() else {}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def _pip_config(key: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", key],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else ""


# --- COPY ------------------------------------------------------------------------------------


def _ignored() -> list[str]:
    path = REPO_DIR / ".dockerignore"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]


def _is_ignored(relative: str, patterns: list[str]) -> bool:
    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for pattern in patterns:
        bare = pattern.removeprefix("**/")
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pattern):
                return True
            if pattern.startswith("**/") and fnmatch.fnmatchcase(prefix.rsplit("/", 1)[-1], bare):
                return True
    return False


def _copy(arguments: str, root: Path, workdir: str, roots: dict[str, Path]) -> None:
    """Docker's COPY: a directory's contents into the destination, a file into it (a
    destination ending in / is a directory); owned by root."""
    words = arguments.split()
    source_root = REPO_DIR
    ignore = _ignored()
    if words[0].startswith("--from="):
        source_root = roots[words.pop(0).split("=", 1)[1]]
        ignore = []
    *sources, destination = words
    into_dir = destination.endswith("/") or destination in (".", "./") or len(sources) > 1
    target = root / os.path.normpath(os.path.join(workdir, destination)).lstrip("/")
    for source in sources:
        origin = source_root / source.lstrip("/")
        if not origin.exists():
            raise DockerfileError(f"COPY {source}: not found")
        if origin.is_dir():
            _copy_tree(origin, target, source_root, ignore)
        else:
            place = target / origin.name if into_dir else target
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, place)
            os.chown(place, 0, 0)


def _copy_tree(origin: Path, target: Path, source_root: Path, ignore: list[str]) -> None:
    for directory, names, files in os.walk(origin):
        here = Path(directory)
        relative = here.relative_to(source_root).as_posix()
        place = target / here.relative_to(origin)
        place.mkdir(parents=True, exist_ok=True)
        os.chown(place, 0, 0)
        # A link to a directory (a virtualenv's lib64) is copied as the link.
        links = [n for n in names if (here / n).is_symlink()]
        names[:] = sorted(
            n for n in names if n not in links and not _is_ignored(f"{relative}/{n}", ignore)
        )
        for name in sorted(files + links):
            if _is_ignored(f"{relative}/{name}", ignore):
                continue
            copied = place / name
            if (here / name).is_symlink():
                copied.unlink(missing_ok=True)
                copied.symlink_to(os.readlink(here / name))
            else:
                shutil.copy2(here / name, copied)
            os.lchown(copied, 0, 0)


# --- the archive -----------------------------------------------------------------------------


def _archive(layout: Path, archive: Path) -> None:
    """The OCI layout as one tar (``oci-archive:``), its entries in a fixed order."""
    partial = archive.with_suffix(".partial")
    with tarfile.open(partial, "w") as tar:
        for path in sorted(layout.rglob("*")):
            tar.add(path, arcname=path.relative_to(layout).as_posix(), recursive=False)
    partial.rename(archive)


@dataclass(frozen=True)
class Unpacked:
    """A built image taken apart: its root filesystem and its OCI configuration."""

    root: Path
    config: dict[str, Any]  # the configuration's "config": User, Env, Entrypoint, Cmd, …
    history: list[str]  # each layer's (and each configuration step's) created_by


def unpack(archive: Path, into: Path) -> Unpacked:
    layout = into / "layout"
    layout.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="data")
    bundle = into / "bundle"
    subprocess.run(
        [tools()["umoci"], "unpack", "--image", f"{layout}:{TAG}", str(bundle)],
        check=True,
        capture_output=True,
    )

    bundle.chmod(0o755)  # umoci makes it 0700: the image's user must reach its root
    into.chmod(0o755)

    def blob(digest: str) -> Any:
        return json.loads((layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_text())

    index = json.loads((layout / "index.json").read_text())
    manifest = blob(index["manifests"][0]["digest"])
    image = blob(manifest["config"]["digest"])
    history = [entry.get("created_by", "") for entry in image.get("history", [])]
    return Unpacked(bundle / "rootfs", image["config"], history)


def packages(root: Path) -> dict[str, str]:
    """The Debian packages installed in a root: name → version."""
    found: dict[str, str] = {}
    status = (root / "var/lib/dpkg/status").read_text()
    for block in status.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != " "
        )
        if fields.get("Status") == "install ok installed":
            found[fields["Package"]] = fields["Version"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devenv.image", description=__doc__)
    sub = parser.add_subparsers(dest="action", required=True)
    make = sub.add_parser("build")
    make.add_argument("names", nargs="*", help="context-service, context-service-agent-base")
    args = parser.parse_args(argv)
    chosen = [i for i in IMAGES if not args.names or i.name in args.names]
    unknown = set(args.names) - {image.name for image in IMAGES}
    if unknown:
        names = ", ".join(image.name for image in IMAGES)
        say(f"error: no image named {', '.join(sorted(unknown))} (there are {names})")
        return 2
    try:
        for image in chosen:
            build(image)
    except (DevEnvError, DockerfileError) as exc:
        say(f"error: {exc}")
        return 2
    except subprocess.CalledProcessError as exc:
        say(f"error: {' '.join(map(str, exc.cmd))[:300]} failed with status {exc.returncode}")
        say(f"its output is in {IMAGES_DIR}/<image>.log")
        return 2
    for image in chosen:
        with tarfile.open(image.archive) as tar:
            index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        size = image.archive.stat().st_size / 2**20
        say(f"{image.name}: {size:.0f} MiB, {index['manifests'][0]['digest']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
