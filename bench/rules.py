"""``python -m bench rules``: the rule engine against an earlier version of itself, in the
same run, and with the contained allow on.

Both engines — this checkout's and one exported from git at ``BASELINE_COMMIT`` (before the
positive-knowledge redesign) — evaluate the same lines in fresh processes started the same
way, so their latencies and their decisions compare on equal terms:

* latency over the benchmark's realistic mix (rules/bench.py);
* the share of each program family's commands the seed's settings allow (usability);
* the slowest evaluation of any input up to the length limit: both adversarial sets, the
  everyday commands and lines built at the engine's bounds, with the contained allow off
  and on (this checkout only);
* the same mix with the contained allow on (``evaluate(contained=True)``), and the share
  of each family allowed then.

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

from bench.report import machine, now, percentile, write_section
from rules.bench import MAX_LENGTH, _templates, commands
from tests.support.adversarial_cases import CASES
from tests.support.adversarial_programs import CASES as PROGRAM_CASES
from tests.support.adversarial_programs import EXPENSIVE
from tests.support.adversarial_words import CASES as WORD_CASES
from tests.support.costly_lines import generated
from tests.support.everyday_commands import COMMANDS as EVERYDAY

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "rules" / "tests" / "fixtures"
BASELINE_COMMIT = os.environ.get("BENCH_RULES_BASELINE", "cc1985d")
# Where the engine lived at that commit (it moved out of approvals later).
BASELINE_PACKAGE = "approvals.rules"
PER_FAMILY = int(os.environ.get("BENCH_RULES_PER_FAMILY", "300"))
# Lines generated toward the most work the engine can be made to do (tests/support/
# costly_lines.py): every one must be judged within the time bound too.
COSTLY = int(os.environ.get("BENCH_RULES_COSTLY", "10000"))
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
# The engine before the contained allow has no such argument: only passed when asked for.
options = {"contained": True} if sys.argv[6] == "contained" else {}
for policy, line in work[:warmup]:
    rules, sources = policies[policy]
    evaluate(ShellOperation(line), rules=rules, sources=sources, context_id="ctx-bench", **options)
gc.collect()
out = []
for policy, line in work[warmup:]:
    rules, sources = policies[policy]
    times = []
    for attempt in range(repeat):
        started = time.perf_counter()
        evaluation = evaluate(
            ShellOperation(line + " " * attempt), rules=rules, sources=sources,
            context_id="ctx-bench", **options,
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


def evaluate_in(
    engine_root: Path,
    work: list[tuple[str, str]],
    *,
    warmup: int = 0,
    repeat: int = 1,
    package: str = "rules",
    contained: bool = False,
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
            "contained" if contained else "plain",
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
    inputs = [(case.id, case.policy, case.command) for case in CASES]
    inputs += [(case.id, case.policy, case.command) for case in WORD_CASES]
    inputs += [(case.id, case.policy, case.command) for case in PROGRAM_CASES]
    inputs += [
        (f"expensive {index}: {line[:40]}", policy, line)
        for index, line in enumerate(EXPENSIVE)
        for policy in ("seed", "plain")
    ]
    inputs += [(f"everyday: {case.command[:40]}", "seed", case.command) for case in EVERYDAY]
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
    inputs += [
        (f"generated {index}: {line[:40]}", "seed", line)
        for index, line in enumerate(generated(COSTLY))
    ]
    return inputs


@dataclass(frozen=True)
class Comparison:
    baseline: str
    mix_after: list[tuple[str, float]]
    mix_before: list[tuple[str, float]]
    mix_contained: list[tuple[str, float]]
    families_after: dict[str, list[str]]  # family → decisions
    families_before: dict[str, list[str]]
    families_contained: dict[str, list[str]]
    # (median ms, what, decision, contained), slowest first, each input both ways
    worst: list[tuple[float, str, str, bool]]
    inputs: int


def compare() -> Comparison:
    mix = [("seed", line) for line in commands(WARMUP + EVALUATIONS, seed=1)]
    grouped = families(PER_FAMILY)
    flat = [("seed", line) for lines in grouped.values() for line in lines]
    baseline = export(BASELINE_COMMIT)
    results = {}
    for name, root, package, contained in (
        ("after", ROOT, "rules", False),
        ("before", baseline, BASELINE_PACKAGE, False),
        ("contained", ROOT, "rules", True),
    ):
        results[name] = (
            evaluate_in(root, mix, warmup=WARMUP, package=package, contained=contained),
            evaluate_in(
                root,
                [("seed", "ls")] * 50 + flat,
                warmup=50,
                package=package,
                contained=contained,
            ),
        )
    worst_work = worst_inputs()
    worst: list[tuple[float, str, str, bool]] = []
    for contained in (False, True):
        timed = evaluate_in(
            ROOT,
            [("seed", "ls")] * 50 + [(p, line) for _, p, line in worst_work],
            warmup=50,
            repeat=3,
            contained=contained,
        )
        worst += [
            (ms, what, decision, contained)
            for (what, _, _), (decision, ms) in zip(worst_work, timed, strict=True)
        ]

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
        mix_contained=results["contained"][0],
        families_after=by_family(results["after"][1]),
        families_before=by_family(results["before"][1]),
        families_contained=by_family(results["contained"][1]),
        worst=sorted(worst, reverse=True),
        inputs=len(worst_work),
    )


def share(decisions: list[str], decision: str = "allow") -> float:
    return 100 * decisions.count(decision) / len(decisions) if decisions else 0.0


def mean_ms(results: list[tuple[str, float]]) -> float:
    return statistics.fmean(ms for _, ms in results)


# Why a family's allowed share fell with the positive-knowledge engine (docs/rules.md).
DROP_REASONS = {
    "python script": "runs a workspace file the agent wrote: agent-written code is never "
    "allowed by a rule (asked about)",
    "python script (venv PATH)": "the same, and VIRTUAL_ENV is not a harmless environment "
    "variable and the workspace's .venv/bin is not a trusted directory",
    "python -c": "inline code cannot be judged (asked about, as before)",
    "git status/log": "",
    "here-document": "",
}


def _timing(results: list[tuple[str, float]]) -> str:
    ms = [value for _, value in results]
    return f"p50 {percentile(ms, 50):.3f} ms, p99 {percentile(ms, 99):.3f} ms, max {max(ms):.3f} ms"


def run() -> None:
    engine = compare()
    after = [decision for decision, _ in engine.mix_after]
    before = [decision for decision, _ in engine.mix_before]
    held = [decision for decision, _ in engine.mix_contained]
    family_rows = []
    for family, decided in engine.families_after.items():
        was, now_ = share(engine.families_before[family]), share(decided)
        contained = share(engine.families_contained[family])
        reason = DROP_REASONS.get(family, "") if now_ < was - 0.5 else ""
        if now_ < was - 0.5 and not reason:
            reason = "(no reason recorded: a regression to look at)"
        family_rows.append(
            f"| {family} | {len(decided)} | {was:.1f} % | {now_:.1f} % | {contained:.1f} % "
            f"| {reason} |"
        )
    worst_rows = "\n".join(
        f"| {what} | {'on' if contained else 'off'} | {decision} | {ms:.2f} ms |"
        for ms, what, decision, contained in engine.worst[:10]
    )
    over = sum(1 for ms, *_ in engine.worst if ms > 5)
    body = f"""
## Rule engine

Measured {now()} on {machine()}. Command: `python -m bench rules` (also in `make bench`).

`evaluate()` on {len(after)} distinct shell commands (after {WARMUP} warm-up), one to
three chained, at most 200 characters, the seed's settings.json and sources.json; this
checkout with the contained allow off and on, against the engine at `{engine.baseline}`
(before the positive-knowledge redesign, issue 15), each in a fresh process on the same
lines in the same run. Targets: p99 ≤ 2 ms; any input up to the length limit ≤ 5 ms.

| engine | decisions | per evaluation |
|---|---|---|
| this checkout | allow {share(after):.1f} %, ask {share(after, "ask"):.1f} %, deny {share(after, "deny"):.1f} % | {_timing(engine.mix_after)} |
| this checkout, contained | allow {share(held):.1f} %, ask {share(held, "ask"):.1f} %, deny {share(held, "deny"):.1f} % | {_timing(engine.mix_contained)} |
| `{engine.baseline}` | allow {share(before):.1f} %, ask {share(before, "ask"):.1f} %, deny {share(before, "deny"):.1f} % | {_timing(engine.mix_before)} |

Mean per evaluation: {mean_ms(engine.mix_after):.3f} ms now ({mean_ms(engine.mix_contained):.3f} ms
contained), {mean_ms(engine.mix_before):.3f} ms before (ratio
{mean_ms(engine.mix_after) / mean_ms(engine.mix_before):.2f}).

**Usability**: the share of each family's single commands ({PER_FAMILY} generated each)
that the seed's settings allow, before, now, and now with the contained allow on (the
everyday commands of the three agent types are in docs/rules.md, "Everyday commands").

| family | n | allowed before | allowed now | contained | why it fell |
|---|---|---|---|---|---|
{chr(10).join(family_rows)}

**Worst case**: every one of {engine.inputs} inputs — the adversarial sets (all classes,
up to 4096 characters and past it), the everyday commands, lines built at the engine's
bounds (16 commands, 64 words, 40 paths, depth 6), and {COSTLY} lines generated by
hypothesis toward the most work (brace lists times `cd` steps times recursive paths,
tests/support/costly_lines.py; past the work budget the answer is ask, "too complex to
judge") — with the contained allow off and on, median of three evaluations each: {over}
of {len(engine.worst)} over 5 ms. The slowest:

| input | contained | decision | median |
|---|---|---|---|
{worst_rows}
"""
    write_section("rules", body)
    print(body)
