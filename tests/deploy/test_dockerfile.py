"""The Dockerfiles as make image reads them (devenv/dockerfile.py): what it would build
differently from Docker is refused by name, never built another way."""

from __future__ import annotations

from pathlib import Path

import pytest

from devenv import dockerfile
from devenv.dockerfile import DockerfileError
from devenv.system import REPO_DIR

SAMPLE = """\
# syntax=docker/dockerfile:1
FROM node:20.20.2-bookworm-slim AS assets
WORKDIR /frontend

FROM debian:bookworm-slim
# a comment before a continued line
RUN apt-get update \\
 # and one inside it, which is no part of it
 && apt-get install -y --no-install-recommends python3.11=3.11.2-6+deb12u9 \\
      netbase=6.4 \\
 && rm -rf /var/lib/apt/lists/*
ENV A=1 PATH=/venv/bin:$PATH
WORKDIR /app
ENV B=${A}2
WORKDIR sub
USER 10001:10001
EXPOSE 8000 9000/udp
ENTRYPOINT ["/entrypoint.sh"]
CMD ["web"]
"""


def read(tmp_path: Path, text: str) -> list[dockerfile.Stage]:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return dockerfile.read(path)


def test_stages_and_what_the_final_one_declares(tmp_path: Path) -> None:
    assets, final = read(tmp_path, SAMPLE)

    assert (assets.base, assets.name, final.base, final.name) == (
        "node:20.20.2-bookworm-slim",
        "assets",
        "debian:bookworm-slim",
        "1",
    )
    assert [(item.keyword, item.line) for item in final.instructions] == [
        ("RUN", 7),
        ("ENV", 12),
        ("WORKDIR", 13),
        ("ENV", 14),
        ("WORKDIR", 15),
        ("USER", 16),
        ("EXPOSE", 17),
        ("ENTRYPOINT", 18),
        ("CMD", 19),
    ]
    assert final.pinned_packages() == {"python3.11": "3.11.2-6+deb12u9", "netbase": "6.4"}
    assert final.environment() == {
        "PATH": f"/venv/bin:{dockerfile.DEBIAN_PATH}",
        "A": "1",
        "B": "12",
    }
    assert final.environment(before=13) == {"PATH": f"/venv/bin:{dockerfile.DEBIAN_PATH}", "A": "1"}
    assert (final.workdir(), final.workdir(before=15)) == ("/app/sub", "/app")
    assert (final.last("USER"), final.ports()) == ("10001:10001", ["8000/tcp", "9000/udp"])
    assert (final.exec_form("ENTRYPOINT"), final.exec_form("CMD")) == (["/entrypoint.sh"], ["web"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FROM debian:bookworm-slim\nADD x /x\n", "Dockerfile line 2: ADD is not something"),
        ("RUN true\n", "Dockerfile: RUN before FROM"),
        ("# nothing\n", "Dockerfile: no FROM"),
        ("FROM debian:bookworm-slim\nRUN true \\\n", "the last instruction ends with a line"),
    ],
)
def test_what_the_builder_does_not_do_is_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DockerfileError) as excinfo:
        read(tmp_path, text)
    assert str(excinfo.value).startswith(message)


def test_an_unpinned_package_and_a_shell_form_entrypoint_are_refused(tmp_path: Path) -> None:
    (final,) = read(
        tmp_path,
        "FROM debian:bookworm-slim\nRUN apt-get install -y git\nENTRYPOINT /entrypoint.sh\n",
    )
    with pytest.raises(DockerfileError, match=r"^line 2: git is not pinned to a version$"):
        final.pinned_packages()
    with pytest.raises(DockerfileError, match=r"^ENTRYPOINT must be a JSON list"):
        final.exec_form("ENTRYPOINT")


@pytest.mark.parametrize("path", ["deploy/Dockerfile", "deploy/agent/Dockerfile"])
def test_the_project_s_dockerfiles_are_read_whole(path: str) -> None:
    stages = dockerfile.read(REPO_DIR / path)
    final = stages[-1]

    assert final.base == "debian:bookworm-slim"
    assert final.pinned_packages()["python3.11"] == "3.11.2-6+deb12u9"
    assert final.last("USER") == "10001:10001"
