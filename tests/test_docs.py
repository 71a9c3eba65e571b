"""The README's configuration table lists every variable the code reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READS = re.compile(
    r"(?:env_(?:str|optional|bool|int|float|list)\(\s*|environ(?:\.get)?\(\s*|environ\[\s*|"
    r'environ\.setdefault\(\s*)"([A-Z][A-Z0-9_]+)"'
)
OURS = ("CS_", "DJANGO_", "DATABASE_URL", "REDIS_URL", "KUBECONFIG")
# Set by the platform, not by whoever configures the service.
NOT_SETTINGS = {"KUBERNETES_SERVICE_HOST"}


def variables_read_by_the_code(package: str | None = None) -> set[str]:
    """Variables read by the service (``package=None``) or by one separate package."""
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT).parts
        if relative[0] in {".venv", ".local", "tests"} or "tests" in relative:
            continue
        if (relative[0] == "cs_agent") != (package == "cs_agent"):
            continue
        found |= {name for name in READS.findall(path.read_text()) if name.startswith(OURS)}
    return found - NOT_SETTINGS


def test_readme_documents_every_variable() -> None:
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", readme, flags=re.MULTILINE))
    read = variables_read_by_the_code()

    assert "DATABASE_URL" in read  # the scan itself works
    assert sorted(read - documented) == []


def test_agent_client_docs_list_its_variables() -> None:
    documented = (ROOT / "docs" / "agent-client.md").read_text()
    read = variables_read_by_the_code("cs_agent")

    assert "CS_URL" in read
    assert (
        sorted(name for name in read if f"`{name}`" not in documented and name not in documented)
        == []
    )
