"""Machine description, percentiles, and docs/performance.md section writing."""

from __future__ import annotations

import os
import platform
import statistics
from datetime import UTC, datetime
from pathlib import Path

PERFORMANCE_MD = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
HEADER = """# Performance

Numbers from `make bench` (or `python -m bench <name>`), measured on the machine named in
each section. These machines are noisy: compare ratios measured in the same run rather than
absolute numbers across runs. Each section is rewritten by its benchmark.
"""


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kib / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{memory}, Linux {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary_ms(samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return (
        f"n={len(ms)}, p50 {percentile(ms, 50):.2f} ms, p99 {percentile(ms, 99):.2f} ms, "
        f"max {max(ms):.2f} ms, mean {statistics.fmean(ms):.2f} ms"
    )


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section between this benchmark's markers."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    text = PERFORMANCE_MD.read_text() if PERFORMANCE_MD.exists() else HEADER
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    PERFORMANCE_MD.write_text(text)
