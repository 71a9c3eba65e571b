"""The rule engine against an earlier version of itself, in the same run.

Both engines — this checkout's and one exported from git at ``BASELINE_COMMIT`` (before the
positive-knowledge redesign) — evaluate the same lines in fresh processes started the same
way, so their latencies and their decisions compare on equal terms:

* latency over the benchmark's realistic mix (rules/bench.py);
* the share of each program family's commands the seed's settings allow (usability);
* the slowest evaluation of any input up to the length limit: the adversarial corpus, the
  bypass corpus and lines built at the engine's bounds (this checkout only).

Every command is data handed to ``evaluate()`` as a string; nothing here runs one.
"""

from __future__ import annotations

import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rules.bench import MAX_LENGTH, _templates, commands

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "rules" / "tests" / "fixtures"
BASELINE_COMMIT = os.environ.get("BENCH_RULES_BASELINE", "cc1985d")
# Where the engine lived at that commit (it moved out of approvals later).
BASELINE_PACKAGE = "approvals.rules"
PER_FAMILY = int(os.environ.get("BENCH_RULES_PER_FAMILY", "300"))
EVALUATIONS = int(os.environ.get("BENCH_RULES_EVALUATIONS", "10000"))
WARMUP = 1000

# Runs in a fresh interpreter with the engine's root first on sys.path: evaluates the lines
# (JSON on stdin: [[policy, line], …]) and prints [[decision, milliseconds], …].
_RUNNER = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
import importlib
engine = importlib.import_module(sys.argv[5])
ShellOperation, evaluate = engine.ShellOperation, engine.evaluate
parse_settings, parse_sources = engine.parse_settings, engine.parse_sources
fixtures = sys.argv[2]
def load(name):
    with open(f"{fixtures}/{name}") as f:
        return json.load(f)
policies = {
    "seed": (parse_settings(load("settings.json")), parse_sources(load("sources.json"))),
    "plain": (parse_settings(load("plain_settings.json")), None),
}
work = json.load(sys.stdin)
warmup, repeat = int(sys.argv[3]), int(sys.argv[4])
for policy, line in work[:warmup]:
    rules, sources = policies[policy]
    evaluate(ShellOperation(line), rules=rules, sources=sources, context_id="ctx-bench")
gc.collect()
out = []
for policy, line in work[warmup:]:
    rules, sources = policies[policy]
    times = []
    for attempt in range(repeat):
        started = time.perf_counter()
        evaluation = evaluate(
            ShellOperation(line + " " * attempt), rules=rules, sources=sources,
            context_id="ctx-bench",
        )
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    out.append([evaluation.decision.value, times[len(times) // 2]])
json.dump(out, sys.stdout)
"""


def export(commit: str) -> Path:
    """The engine as it was at ``commit`` (approvals/rules and its package), in a temporary
    directory."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "approvals/__init__.py", "approvals/rules"],
        capture_output=True,
        check=True,
    ).stdout
    target = Path(tempfile.mkdtemp(prefix="rules-baseline-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def run(
    engine_root: Path,
    work: list[tuple[str, str]],
    *,
    warmup: int = 0,
    repeat: int = 1,
    package: str = "rules",
) -> list[tuple[str, float]]:
    """[(decision, median ms)] for each line after the warm-up, in a fresh process."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUNNER,
            str(engine_root),
            str(FIXTURES),
            str(warmup),
            str(repeat),
            package,
        ],
        input=json.dumps(work),
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),  # so the engine is only found where sys.argv[1] says
    )
    return [(decision, ms) for decision, ms in json.loads(result.stdout)]


def families(per_family: int, seed: int = 11) -> dict[str, list[str]]:
    """Single commands of each template family (not chained), at most MAX_LENGTH long."""
    rng = random.Random(seed)
    found: dict[str, list[str]] = {}
    for _, family, make in _templates():
        lines = [make(rng) for _ in range(per_family)]
        found[family] = [line for line in lines if len(line) <= MAX_LENGTH]
    return found


def worst_inputs() -> list[tuple[str, str, str]]:
    """(what, policy, line): every input the engine must judge within its time bound."""
    from rules.tests.adversarial_cases import CASES

    inputs = [(case.id, case.policy, case.command) for case in CASES]
    at_bounds = {
        "16 commands": " && ".join(["grep -rn error logs/ | sort"] * 8),
        "64 words": "ls " + " ".join(f"data/f{i}.txt" for i in range(63)),
        "40 paths, recursive": "grep -rn x " + " ".join(f"d{i}/" for i in range(40)),
        "cp 40 files": "cp " + " ".join(f"data/f{i}.txt" for i in range(39)) + " out/",
        "15 substitutions": "echo " + " ".join(["$(ls d)"] * 15),
        "git at the bound": " && ".join(["git -C repos/app log --oneline -n 5"] * 6),
        "pip 40 packages": "pip install " + " ".join(f"pkg{i}==1.0" for i in range(40)),
        "sed -i 40 files": "sed -i 's/a/b/g' " + " ".join(f"f{i}.txt" for i in range(40)),
        "bash -c inside": "bash -c 'ls data; wc -l data/a.csv; sort data/b.csv | uniq -c'",
        "a 4000-character word": "echo " + "x" * 4000,
        "a 200-line here-document": "cat > f.py <<'EOF'\n"
        + "\n".join(f"print({i})  # $(x) ; | &" for i in range(200))
        + "\nEOF",
        "8 wrappers": "timeout 5 nice -n 1 nohup stdbuf -oL env timeout 5 nice -n 1 ls -la",
        "depth 6": "echo " + "$(" * 5 + "ls" + ")" * 5,
        "4096 characters of cat": "cat " + "a" * 4090,
    }
    inputs += [(what, "seed", line) for what, line in at_bounds.items()]
    return inputs


@dataclass(frozen=True)
class Comparison:
    baseline: str
    mix_after: list[tuple[str, float]]
    mix_before: list[tuple[str, float]]
    families_after: dict[str, list[str]]  # family → decisions
    families_before: dict[str, list[str]]
    worst: list[tuple[float, str, str]]  # (median ms, what, decision), slowest first
    inputs: int


def compare() -> Comparison:
    mix = [("seed", line) for line in commands(WARMUP + EVALUATIONS, seed=1)]
    grouped = families(PER_FAMILY)
    flat = [("seed", line) for lines in grouped.values() for line in lines]
    baseline = export(BASELINE_COMMIT)
    results = {}
    for name, root, package in (
        ("after", ROOT, "rules"),
        ("before", baseline, BASELINE_PACKAGE),
    ):
        results[name] = (
            run(root, mix, warmup=WARMUP, package=package),
            run(root, [("seed", "ls")] * 50 + flat, warmup=50, package=package),
        )
    worst_work = worst_inputs()
    worst = run(ROOT, [("seed", "ls")] * 50 + [(p, line) for _, p, line in worst_work], warmup=50,
                repeat=3)  # fmt: skip

    def by_family(decided: list[tuple[str, float]]) -> dict[str, list[str]]:
        out, index = {}, 0
        for family, lines in grouped.items():
            out[family] = [decision for decision, _ in decided[index : index + len(lines)]]
            index += len(lines)
        return out

    return Comparison(
        baseline=BASELINE_COMMIT,
        mix_after=results["after"][0],
        mix_before=results["before"][0],
        families_after=by_family(results["after"][1]),
        families_before=by_family(results["before"][1]),
        worst=sorted(
            (
                (ms, what, decision)
                for (what, _, _), (decision, ms) in zip(worst_work, worst, strict=True)
            ),
            reverse=True,
        ),
        inputs=len(worst_work),
    )


def share(decisions: list[str], decision: str = "allow") -> float:
    return 100 * decisions.count(decision) / len(decisions) if decisions else 0.0


def mean_ms(results: list[tuple[str, float]]) -> float:
    return statistics.fmean(ms for _, ms in results)
