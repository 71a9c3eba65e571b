"""The policies the engine's tests judge against (fixtures/: the seed's settings.json and
sources.json verbatim, and a plain policy with no sources.json), and commands the seed's
policy must allow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
CTX = "ctx-1"


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def seed_settings() -> dict[str, Any]:
    return _load("settings.json")


def seed_sources() -> dict[str, Any]:
    return _load("sources.json")


def plain_settings() -> dict[str, Any]:
    return _load("plain_settings.json")


# What agents need every day, which the seed's policy allows.
ALLOWED = [
    "grep -r error logs/",
    "ls -la",
    "ls",
    "git status",
    "git log --oneline | head -5",
    "pip install pandas",
    "pip install 'pandas[excel]>=2' numpy==1.26",
    "pip install --index-url https://pypi.org/simple/ requests",
    "cat ${WORKSPACE}/x",
    'cat "$WORKSPACE/data.csv"',
    "cat /etc/os-release",
    "git clone https://github.com/pandas-dev/pandas repos/pandas",
    "find . -name '*.py' -exec grep -l TODO {} \\;",
    "mkdir -p out && cp data/a.csv out/",
    "sort data.txt | uniq -c | sort -rn > out/counts.txt",
    "echo done > output/status.txt 2>/dev/null",
    "cd data && ls",
    "time ls",
    "awk -F, '{print $1}' data.csv",
    "sed 's/a/b/g' data.txt > out.txt",
    "sed -n '1,5p;$p' data.txt",
    "bash -c 'ls -la && pwd'",
    "bash <<'EOF'\nls\nEOF",
    "cat > scripts/run.py <<'EOF'\nprint('hi')\nEOF",
    'echo "rows: $(wc -l < data.csv)"',
    'for f in data/*.csv; do echo "$f"; done > out/files.txt',
    "diff <(sort a.txt) <(sort b.txt)",
    "grep -c x data.txt || true",
    "python3 -I -m pip install numpy",
    "timeout 30 python3 -I -m json.tool data.json",
]
