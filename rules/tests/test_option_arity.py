"""Arity verified, not written: every option the engine's tables name (rules/programs/*) is
held to what the program installed here does with it, run in the executor's sandbox.

How: ``record_option_arity.py`` runs each program once per probe with harmless arguments of
its own (the option alone, ``--name=x`` / ``-n}``, and for git and the shells
``--name --cs-arity-next``; standard input /dev/null, a throwaway context, no network) and
reads the program's own messages ("option '--sort' requires an argument", "doesn't allow an
argument", "invalid option -- '}'"…) into the option's real arity. All of it takes
about 100 s (nine thousand runs, git's through the executor's git guard at ~20 ms each),
so it is recorded once in ``fixtures/option_arity.json`` with the programs' versions, and here:

* ``test_the_tables_read_each_option_as_the_program_does`` holds every table to the
  recording: a table's REQUIRED fits an option that takes the next word or an attached
  value (or the next word only, where the attached form is refused outright: curl's and
  bash's long options), OPTIONAL fits one that takes only an attached value, NONE one that
  takes none. Every other pairing is listed with the program's message.
* ``test_every_option_a_table_names_is_recorded`` fails when a table names an option the
  recording lacks (re-record), and lists what could not be verified here (a warning);
  ``test_every_program_without_options_says_why`` when a program is left out unsaid.
* ``test_the_recording_matches_the_programs_installed_here`` re-runs a sample live (the
  programs' versions; every option that takes a value or that a table says takes one,
  outside git; one option that takes none and one it lacks per program; one of each per
  git subcommand; about 900 options, 8-9 s) and fails when the programs now answer
  otherwise: then re-record.

Re-record (after changing a table or the image's programs):

    .venv/bin/python -m rules.tests.record_option_arity

Checked with explicit expectations rather than getopt's messages: find (its leading -H -L
-P -D -O, and for each primary the number of words it takes: ``find P [V…]
-cs-arity-next`` with values valid for P, until find reads the sentinel as an unknown
predicate); bash's builtins (their own messages, run as builtins); the shells' ``-o``/``-O``
(the next word, never attached); git's options before the subcommand (git.c's own loop);
git rev-parse (passes options it does not know through, so an attached word printed back
was not taken); pip (optparse) and ``python -m json.tool``/``venv`` (argparse), parsed by
their own parsers in one Python process.

Not verified, and why:

* Tables without options: echo, printf (bash's; its -v is checked from
  builtins._NAME_BUILTIN_OPTIONS), true, false, ``:``, test, ``[``, set (its own
  reader), getopts, shift, exit, return, break, continue, wait (its -p is checked from
  builtins._NAME_BUILTIN_OPTIONS), pytest and make (they run the project's code and are
  never allowed; their options are not read); find's expression operators (``! ( ) , -not
  -a -and -o -or``: structure, not values), its -exec/-execdir/-ok/-okdir (a command up to
  ``;`` or ``+``) and -delete (probing it would delete).
* Programs not installed here (the recording's ``not_installed``; today tree, gawk, zsh,
  ksh, ash, mksh, pypy, pypy3 and ``python``): their options are reported by the test
  below as a warning, not verified. awk is mawk here, whose parser is not gawk's: only -F,
  -v and -f, which mawk has, are verified; gawk's other options are "unknown".
* Options the installed program does not have (newer coreutils, pip or Python than this
  image's; options of head a shared table gives it from tail…), options it stops at
  before reading the rest of the word (``id -Z`` without SELinux), abbreviations it
  resolves to another option, and names the engine's parser can never match (``-vv``):
  warned about, listed in the recording.

``EXPLAINED`` lists the options whose table reading differs from the program's on
purpose, with the reason (today only ``bash -c``, whose command string is the first operand
after all the options); none is skipped silently, and one that no longer differs fails
``test_each_explained_option_still_differs``.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections import defaultdict
from typing import Any

from rules.programs import REGISTRY
from rules.tests import record_option_arity as recording
from rules.tests.record_option_arity import FIXTURE, UNVERIFIABLE, Claim, fits

# Options whose table reads them differently from the program's own parser on purpose.
EXPLAINED = {
    "bash -c": (
        "bash -c takes its command string from the first operand after all the options "
        "(bash -c -e 'cmd' runs cmd with -e): the table's flag and shells._commands read "
        "it so"
    ),
}
# How many git options per subcommand the live check re-runs (each run of git goes through
# the executor's guard, ~20 ms; the rest of the sample is cheaper).
GIT_SAMPLE = 1


@functools.cache
def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def canonical(claim: Claim) -> Claim:
    """The claim under the name the recording has it (``nawk`` is recorded as ``awk``)."""
    program = recorded()["aliases"].get(claim.program, claim.program)
    return Claim(program, claim.sub, claim.option, claim.arity, claim.source)


def verifiable(claim: Claim) -> bool:
    data = recorded()
    return (
        claim.program not in data["not_installed"]
        and canonical(claim).key not in data["not_probeable"]
    )


def describe(claim: Claim, entry: dict[str, Any]) -> str:
    evidence = "; ".join(f"{kind}: {said}" for kind, said in entry["evidence"].items())
    return (
        f"{claim.key}: the table ({claim.source}) says {claim.arity}, the program does "
        f"{entry['arity']} — {evidence}"
    )


def test_every_program_without_options_says_why() -> None:
    """A program whose table reads no options is listed, with the reason, in
    record_option_arity.NO_OPTION_TABLES: none is left out of the check unsaid."""
    unsaid = sorted(
        name
        for name, program in REGISTRY.items()
        if not (program.table.parse_options and program.table.options)
        and not program.subcommands
        and name not in recording.NO_OPTION_TABLES
    )
    assert not unsaid, f"programs whose options are not checked, with no reason given: {unsaid}"


def test_every_option_a_table_names_is_recorded() -> None:
    data = recorded()
    options = data["options"]
    missing = sorted(
        {
            claim.key
            for claim in recording.claims()
            if verifiable(claim) and canonical(claim).key not in options
        }
    )
    assert not missing, (
        f"{len(missing)} options the tables name are not in {FIXTURE.name}; re-record "
        f"(python -m rules.tests.record_option_arity): {', '.join(missing)}"
    )
    # Reported, not hidden: what could not be verified on this machine.
    unverified: dict[str, list[str]] = defaultdict(list)
    for claim in recording.claims():
        if not verifiable(claim):
            continue
        entry = options[canonical(claim).key]
        if entry["arity"].startswith(UNVERIFIABLE):
            where = f"{claim.program} {claim.sub}".strip()
            unverified[where].append(f"{claim.option} ({entry['arity']})")
    lines = [f"not installed here: {', '.join(data['not_installed'])}"]
    lines += [f"names no parser matches: {', '.join(data['not_probeable'])}"]
    lines += [
        f"{program}: {', '.join(sorted(set(names)))}"
        for program, names in sorted(unverified.items())
    ]
    warnings.warn(
        "options not verified against the installed programs:\n" + "\n".join(lines),
        stacklevel=1,
    )


def test_the_tables_read_each_option_as_the_program_does() -> None:
    options = recorded()["options"]
    mismatches = []
    for claim in recording.claims():
        if not verifiable(claim):
            continue
        key = canonical(claim).key
        entry = options.get(key)
        if entry is None or entry["arity"].startswith(UNVERIFIABLE):
            continue  # the test above fails for the first, warns about the second
        if key in EXPLAINED or fits(claim.arity, entry["arity"]):
            continue
        mismatches.append(describe(claim, entry))
    assert not mismatches, f"{len(mismatches)} options read otherwise:\n" + "\n".join(
        sorted(set(mismatches))
    )


def test_each_explained_option_still_differs() -> None:
    """An exception that no longer hides a difference is removed, not kept."""
    options = recorded()["options"]
    stale = [
        claim.key
        for claim in recording.claims()
        if claim.key in EXPLAINED
        and verifiable(claim)
        and fits(claim.arity, options[canonical(claim).key]["arity"])
    ]
    assert not stale, f"EXPLAINED lists options the tables now read as the program does: {stale}"


def live_sample() -> list[Claim]:
    """The claims re-run live: outside git, every option that takes a value or that a
    table says takes one, one per program that takes none and one it does not have; per
    git subcommand one of each, the table's mismatches first; none that waits for its
    time limit."""
    options = recorded()["options"]
    chosen: dict[str, Claim] = {}
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    claims = sorted(
        (canonical(claim) for claim in recording.claims() if verifiable(claim)),
        key=lambda claim: (
            claim.program == "git"
            and claim.key in options
            and fits(claim.arity, options[claim.key]["arity"]),
            claim.key,
        ),
    )
    for claim in claims:
        entry = options.get(claim.key)
        if entry is None or claim.key in chosen or _waits(entry):
            continue
        real = entry["arity"]
        valued = real != "none" or claim.arity != "none"
        group = "valued" if valued and not real.startswith(UNVERIFIABLE) else real
        bucket = (claim.program, claim.sub, group)
        limit = GIT_SAMPLE if claim.program == "git" else 1
        if group == "valued" and claim.program != "git":
            limit = 10**6
        if seen[bucket] < limit:
            seen[bucket] += 1
            chosen[claim.key] = claim
    return list(chosen.values())


def _waits(entry: dict[str, Any]) -> bool:
    """Did a probe run until its time limit (tail -f follows standard input)? Those cost a
    second each: the recording has them, the live check leaves them out."""
    return any(said.startswith("[124]") for said in entry["evidence"].values())


def test_the_recording_matches_the_programs_installed_here() -> None:
    data = recorded()
    sample = live_sample()
    chosen = recording.plan(sample)
    sandbox = recording.Sandbox()
    try:
        live = recording.survey(chosen.probes, sandbox)
        versions = recording.versions(recording.version_programs(chosen.targets), sandbox)
    finally:
        sandbox.close()
    changed_versions = {
        name: (data["versions"].get(name), version)
        for name, version in versions.items()
        if data["versions"].get(name) != version
    }
    assert not changed_versions, (
        f"the programs here are not the ones recorded (recorded, now): {changed_versions}; "
        "re-record (python -m rules.tests.record_option_arity)"
    )
    differences = [
        f"{key}: recorded {data['options'][key]['arity']}, now {entry['arity']} "
        f"({entry['evidence']})"
        for key, entry in sorted(live.items())
        if data["options"][key]["arity"] != entry["arity"]
    ]
    assert not differences, (
        "the programs answer otherwise than recorded; re-record "
        "(python -m rules.tests.record_option_arity):\n" + "\n".join(differences)
    )
    assert set(live) == {claim.key for claim in sample}
