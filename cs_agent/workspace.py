"""The agent's side of per-context workspaces (seed 001): register or touch a context id,
create its directory on the shared /workspace PVC with ``.context.json``, and report disk
usage so that Context Service can expire, measure and grow the workspace."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cs_agent.client import ServiceClient, _require_env
from cs_agent.sandbox import open_context as open_directory
from cs_agent.sandbox import refuse_importable_workspace


def directory_size(path: Path) -> int:
    """Bytes of disk used under ``path``: the blocks each file holds (a sparse file's holes
    are not used, whatever its length says), each file once however many links it has,
    without following symbolic links."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for root, _, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                found = (Path(root) / name).lstat()
            except OSError:
                continue
            if (found.st_dev, found.st_ino) not in seen:
                seen.add((found.st_dev, found.st_ino))
                total += found.st_blocks * 512
    return total


def _replace_file(directory: int, name: str, text: str) -> None:
    """Write ``name`` in ``directory`` (a descriptor) as a new regular file renamed over
    whatever is there: a link, a FIFO or a device a contained run left in its place is
    replaced, never followed or opened (opening a FIFO to write would wait for a reader
    for ever)."""
    temporary = f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    out = os.open(temporary, flags, 0o644, dir_fd=directory)
    try:
        with os.fdopen(out, "w") as file:
            file.write(text)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise


class WorkspaceClient(ServiceClient):
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        agent_type: str,
        namespace: str,
        root: str | Path = "/workspace",
        request_timeout: float = 10.0,
    ) -> None:
        super().__init__(base_url, token, request_timeout=request_timeout)
        self.agent_type = agent_type
        self.namespace = namespace
        self.root = Path(root)

    @classmethod
    def from_env(cls) -> WorkspaceClient:
        """``CS_URL``, ``CS_TOKEN``, ``CS_AGENT_TYPE``, ``CS_NAMESPACE_OF_AGENT`` and optionally
        ``CS_WORKSPACE_ROOT`` (default /workspace)."""
        _require_env("CS_URL", "CS_TOKEN", "CS_AGENT_TYPE", "CS_NAMESPACE_OF_AGENT")
        return cls(
            os.environ["CS_URL"],
            os.environ["CS_TOKEN"],
            agent_type=os.environ["CS_AGENT_TYPE"],
            namespace=os.environ["CS_NAMESPACE_OF_AGENT"],
            root=os.environ.get("CS_WORKSPACE_ROOT", "/workspace"),
        )

    @property
    def _base(self) -> str:
        return f"/v1/agent-workspaces/{quote(self.namespace)}/{quote(self.agent_type)}"

    def open_context(self, context_id: str) -> Path:
        """Register (or touch) the context and make sure its directory exists, with an
        up-to-date ``.context.json``. Returns the directory. No context id, no workspace:
        call this only when the A2A request carries one."""
        refuse_importable_workspace(self.root)
        _, answer = self._call("POST", f"{self._base}/contexts", {"contextId": context_id})
        # The service validated the id as a safe path segment; the path it returns is
        # /workspace/<id>, re-rooted here at the mount point.
        name = Path(answer["path"]).name
        # As the executor opens it: a context directory that is (or whose parents are) a
        # symbolic link is refused (SandboxError), never followed to write elsewhere.
        fd = open_directory(self.root, name)
        try:
            _replace_file(fd, ".context.json", json.dumps(answer["contextJson"], indent=2) + "\n")
        finally:
            os.close(fd)
        return self.root / name

    def report_usage(self, context_id: str | None = None) -> dict[str, Any]:
        """Send the context's disk use (when given) and the whole volume's usage."""
        refuse_importable_workspace(self.root)
        if context_id is not None:
            used = directory_size(self.root / context_id)
            self._call(
                "POST", f"{self._base}/contexts", {"contextId": context_id, "diskUsageBytes": used}
            )
        disk = shutil.disk_usage(self.root)
        _, workspace = self._call("POST", f"{self._base}/usage", {"usedBytes": disk.used})
        return dict(workspace)
