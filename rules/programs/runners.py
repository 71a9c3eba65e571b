"""Programs that only run another command (sudo, doas) or run one repeatedly (watch): their
options, and which of their words are the command, which the walker judges as a command of
its own."""

from __future__ import annotations

from dataclasses import replace

from rules.environment import ASSIGNMENT_WORD
from rules.programs.walking import Command, Hook, Outcome, Walk
from rules.words import WordKind, literal, options, scan_options

_SUDO = options(
    "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir "
    "-R --chroot -T --command-timeout -r --role -t --type -U --other-user",
    "-A --askpass -b --background -E --preserve-env -e --edit -H --set-home -i "
    "--login -K --remove-timestamp -k --reset-timestamp -l --list -n "
    "--non-interactive -P --preserve-groups -S --stdin -s --shell -V --version -v "
    "--validate -B --bell -N --no-update",
)
_DOAS = options("-u -C", "-n -s -L")
_WATCH = options(
    "-n --interval -d --differences -q --equexit",
    "-t --no-title -b --beep -e --errexit -g --chgexit -c --color -x --exec -p --precise -w "
    "--no-wrap",
)


def _runner(command: Command, walk: Walk) -> Outcome:
    words, name, problems = command.words, command.name, command.problems
    scan = scan_options(words, 1, _SUDO if name == "sudo" else _DOAS, name)
    problems.extend(scan.problems)
    index = scan.end
    while index < len(words) and ASSIGNMENT_WORD.match(words[index].value):
        variable = ASSIGNMENT_WORD.match(words[index].value)
        assert variable is not None
        value = replace(words[index], value=words[index].value[variable.end() :])
        problems.extend(walk.assignment_problems(variable.group(1), value, exported=True))
        index += 1
    if index < len(words):
        command.inner.append((words[index:], name, walk.cwd))
    elif scan.has("-i", "--login", "-s", "--shell"):
        problems.append(f"{name} opens an interactive shell")
    return Outcome.RUNNER


def _watch(command: Command, walk: Walk) -> Outcome:
    words, problems = command.words, command.problems
    scan = scan_options(words, 1, _WATCH, "watch")
    problems.extend(scan.problems)
    if scan.end < len(words):
        joined = " ".join(word.value for word in words[scan.end :])
        arguments = words[scan.end :]
        if any(word.kind is WordKind.UNKNOWN for word in arguments):
            problems.append("watch runs a command only known at run time")
        elif scan.has("-x", "--exec"):
            command.inner.append((list(arguments), "watch", walk.cwd))
        else:
            walk.command_string(literal(joined), "watch", command.depth, problems)  # sh -c
    return Outcome.READ


HOOKS: dict[str, Hook] = {"sudo": _runner, "doas": _runner, "watch": _watch}
