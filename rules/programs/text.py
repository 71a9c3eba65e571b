"""grep, sed and awk: pattern (or program) first, then files; the scripts of sed and awk are
read so that the commands in them that run programs or write files are seen."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rules.programs import base
from rules.programs.base import (
    Arity,
    Effect,
    Option,
    Parsed,
    Program,
    Table,
    Understanding,
    flags,
    option_uses,
    valued,
)
from rules.words import Word, WordKind


def table(*groups: Iterable[Option], **settings: Any) -> Table:
    """The tables here list every option of GNU grep, sed and gawk, checked against each
    program's --help (``python -m rules.programs.check``), so abbreviations resolve."""
    return base.table(*groups, complete=True, **settings)


COMMON = flags("--help --version")

GREP = Program(
    ("grep", "egrep", "fgrep"),
    table(
        flags("--help -V,--version"),
        flags(
            "-E,--extended-regexp -F,--fixed-strings -G,--basic-regexp -P,--perl-regexp "
            "-i,--ignore-case --no-ignore-case -v,--invert-match -w,--word-regexp "
            "-x,--line-regexp -y -c,--count -L,--files-without-match -l,--files-with-matches "
            "-o,--only-matching -q,--quiet,--silent -s,--no-messages -b,--byte-offset "
            "-H,--with-filename -h,--no-filename -n,--line-number -T,--initial-tab "
            "-Z,--null -a,--text -I -r,--recursive -R,--dereference-recursive "
            "--line-buffered -U,--binary -z,--null-data --no-group-separator"
        ),
        valued(
            "-e,--regexp -m,--max-count -A,--after-context -B,--before-context -C,--context "
            "--label --include --exclude --exclude-dir --group-separator --binary-files "
            "-d,--directories -D,--devices"
        ),
        valued("--color,--colour", arity=Arity.OPTIONAL),
        valued("-f,--file --exclude-from", Effect.READ),
    ),
    None,  # set below
)


def _grep(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    operands = list(parsed.operands)
    if not parsed.has("-e", "--regexp", "-f", "--file"):
        operands = operands[1:]  # the pattern
    recursive = parsed.has("-r", "--recursive", "-R", "--dereference-recursive")
    for value in parsed.values("-d", "--directories"):
        # grep reads ACTION with argmatch: any unique prefix ("rec") is "recurse"; one only
        # known at run time may be it.
        if value.kind is not WordKind.LITERAL or (
            value.value and "recurse".startswith(value.value)
        ):
            recursive = True
    if recursive and not operands:
        operands = [Word(".")]  # grep -r PATTERN searches the working directory
    found.read([w for w in operands if w.value != "-"], f"argument of {name}:", recursive=recursive)


GREP = Program(GREP.names, GREP.table, _grep)

# --- sed ----------------------------------------------------------------------------------------

SED_TABLE = table(
    COMMON,
    flags(
        "-n,--quiet,--silent --debug --posix -E,-r,--regexp-extended -s,--separate "
        "--sandbox -u,--unbuffered -z,--null-data --follow-symlinks"
    ),
    valued("-e,--expression -l,--line-length"),
    valued("-f,--file", Effect.UNSAFE, "reads its script from a file the engine cannot see"),
    valued("-i,--in-place", arity=Arity.OPTIONAL),
)


# Where GNU sed's read_label (":", "b", "t", "T" and "v") ends a label: at a blank, ";", "}",
# "#" or the end of the line. Nothing is checked after it, so "b x e id" is a branch and an
# "e" command (sed/compile.c).
_SED_LABEL_END = frozenset(" \t\n;}#")
_SED_LINE_ADDRESS = re.compile(r"\$|\d+(?:[ \t]*~[ \t]*\d+)?|[+~][ \t]*\d+")
_SED_SUBST_FLAGS = re.compile(r"[gpiImM0-9ew]*")
_SED_NUMBER = re.compile(r"[ \t]*\d*")


def _sed_bracket_end(script: str, index: int) -> int | None:
    """``index`` is just after the ``[`` of a bracket expression in a sed regex: where it
    ends, as GNU sed's snarf_char_class reads it (``[/]`` does not end an address at its
    "/"), or None when a newline or the end comes first (sed then fails)."""
    length = len(script)
    if index < length and script[index] == "^":
        index += 1
    if index < length and script[index] == "]":
        index += 1
    state, delimiter = 0, ""
    while index < length:
        char = script[index]
        index += 1
        if char == "\n":
            return None
        if char in ".:=":
            if state == 1:
                delimiter, state = char, 2
                continue
            if state == 2 and char == delimiter:
                state = 3
                continue
        elif char == "[":
            state = 1 if state == 0 else state
            continue
        elif char == "]":
            if state in (0, 1):
                return index
            if state == 3:
                state = 0
        state &= ~1
    return None


def sed_script_problem(script: str) -> str | None:
    """Why a sed script may run commands or touch files (``e``, ``w``, ``r``, ``s///e``,
    ``s///w``), or None when it only edits the stream. The script is read the way GNU sed
    compiles it (sed/compile.c: match_slash, snarf_char_class, read_label); anything
    unreadable, or read differently by sed versions, is a problem."""
    index, length = 0, len(script)
    if "\\c" in script:
        # Newer GNU sed reads "\c/" in a regex as one escape, older releases end the regex at
        # its "/": "s/\c//p/w f" writes f under one reading and not the other.
        return "a \\c escape in a sed script is read differently by sed versions"

    def skip_delimited(delimiter: str, regex: bool) -> bool:
        """Past the closing ``delimiter`` (match_slash): the delimiter is checked before a
        backslash, a regex's bracket expression is atomic, and an unescaped newline ends it
        unterminated."""
        nonlocal index
        while index < length:
            char = script[index]
            if char == delimiter:
                index += 1
                return True
            if char == "\n":
                return False
            if char == "\\":
                index += 2
                continue
            if char == "[" and regex:
                end = _sed_bracket_end(script, index + 1)
                if end is None:
                    return False
                index = end
                continue
            index += 1
        return False

    def skip_address() -> bool:
        nonlocal index
        if index < length and script[index] in "/\\":
            if script[index] == "\\":
                index += 1
            if index >= length:
                return False
            delimiter = script[index]
            index += 1
            if not skip_delimited(delimiter, regex=True):
                return False
            while index < length and script[index] in "IM \t":
                index += 1  # the I and M address flags
            return True
        match = _SED_LINE_ADDRESS.match(script, index)
        if match:
            index = match.end()
        return True

    def skip_label() -> None:
        nonlocal index
        while index < length and script[index] in " \t":
            index += 1
        while index < length and script[index] not in _SED_LABEL_END:
            index += 1

    while index < length:
        char = script[index]
        if char in " \t\n;}{":
            index += 1
            continue
        if char == "#":
            newline = script.find("\n", index)
            index = length if newline == -1 else newline
            continue
        if not skip_address():
            return "sed address is not terminated"
        while index < length and script[index] in " \t":
            index += 1
        if index < length and script[index] == ",":
            index += 1
            while index < length and script[index] in " \t":
                index += 1
            if not skip_address():
                return "sed address is not terminated"
        while index < length and script[index] in " \t!":
            index += 1
        if index >= length:
            return None
        command = script[index]
        index += 1
        if command in "ewWrR":
            return f"sed command '{command}' runs a command or reads/writes a file"
        if command in "aic":
            # Text to the end of the line (GNU one-liner form or after a backslash-newline).
            while index < length:
                if script[index] == "\\" and index + 1 < length:
                    index += 2
                    continue
                if script[index] == "\n":
                    break
                index += 1
            continue
        if command in "btT:v":
            skip_label()
            continue
        if command in "s":
            if index >= length:
                return "sed s command is not terminated"
            delimiter = script[index]
            index += 1
            if not (skip_delimited(delimiter, regex=True) and skip_delimited(delimiter, False)):
                return "sed s command is not terminated"
            flags = _SED_SUBST_FLAGS.match(script, index)
            assert flags is not None
            if set(flags.group()) & {"e", "w"}:
                return "sed s///e or s///w runs a command or writes a file"
            index = flags.end()
            continue
        if command == "y":
            if index >= length:
                return "sed y command is not terminated"
            delimiter = script[index]
            index += 1
            if not (skip_delimited(delimiter, False) and skip_delimited(delimiter, False)):
                return "sed y command is not terminated"
            continue
        if command in "lqQL":
            index = _SED_NUMBER.match(script, index).end()  # type: ignore[union-attr]
            continue
        if command in "=dDgGhHnNpPxzF{}":
            continue
        return f"sed command '{command}' is not understood"
    return None


# --- the walker -----------------------------------------------------------------------------------


def _sed(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    scripts = parsed.values("-e", "--expression")
    operands = list(parsed.operands)
    if not scripts and not parsed.has("-f", "--file"):
        scripts, operands = operands[:1], operands[1:]
    for script in scripts:
        if script.kind is not WordKind.LITERAL:
            found.problems.append(f"{name} script {script.display} is only known at run time")
            continue
        problem = sed_script_problem(script.value)
        if problem:
            found.problems.append(problem)
    in_place = [given for given in parsed.given if given.name in ("-i", "--in-place")]
    files = [w for w in operands if w.value != "-"]
    if in_place:
        found.write(files, f"{name} -i:")
        for given in in_place:
            suffix = given.value
            if suffix is None:
                continue
            if suffix.kind is not WordKind.LITERAL or "/" in suffix.value or "*" in suffix.value:
                found.problems.append(
                    f"{name} -i{suffix.display}: a backup suffix with / or * names other files"
                )
                continue
            found.write([Word(f.value + suffix.value, f.kind) for f in files], f"{name} backup:")
        if parsed.has("--follow-symlinks"):
            found.problems.append(f"{name} --follow-symlinks -i writes where a link points")
    else:
        found.read(files, f"argument of {name}:")


SED = Program(("sed",), SED_TABLE, _sed)

# --- awk ----------------------------------------------------------------------------------------

# What an awk program can do beyond reading its input and printing: run commands, write or
# read other files, load code, reach the environment.
# awk's language is closed: these are all the ways a program can run commands, write or
# open files, or reach other files than its operands (gawk's manual: I/O redirections,
# getline, system, close/fflush on commands, @-directives and indirect calls, /inet/
# special files, and the variables ARGV/ARGC/ENVIRON/PROCINFO/SYMTAB/FUNCTAB that change
# which files are read or expose the environment). Anything else is computation on lines.
_AWK_DANGER = re.compile(
    r"system\s*\(|\||getline|@|\bclose\s*\(|\bfflush\s*\(|"
    r"/inet|\b(?:ENVIRON|PROCINFO|ARGV|ARGC|SYMTAB|FUNCTAB)\b"
)
_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _awk_print_redirects(text: str) -> bool:
    """May a print or printf statement of this program redirect its output (``>``,
    ``>>``)? One pass over the program: a statement runs from ``print`` to a ``;``, ``}`` or
    newline outside a string, where awk's grammar does not continue it (a newline after
    ``,``, ``{``, ``&&`` or ``||`` does), so a ``;`` or ``}`` inside a string
    (``print "a;b" > f``) does not end it early. After a ``/`` (a regex constant or a
    division: awk's lexer decides by context) the rest of the line counts, since a regex
    may hold any of them."""
    index, length = 0, len(text)
    in_print = in_string = regex_line = False
    last = ""  # the last character outside a string and a comment
    while index < length:
        char = text[index]
        index += 1
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char == "#":
            newline = text.find("\n", index)
            index = length if newline == -1 else newline
            continue
        elif char == "/":
            regex_line = True
        elif char == "\n":
            in_print = in_print and last in {",", "{", "&", "|"}
            regex_line = False
        elif char in ";}" and not regex_line:
            in_print = False
        elif char == ">" and in_print:
            return True
        elif (
            char == "p"
            and text.startswith("print", index - 1)
            and (index < 2 or text[index - 2] not in _WORD_CHARACTERS)
        ):
            after = index + 4 + (text[index + 4 : index + 5] == "f")
            if text[after : after + 1] not in _WORD_CHARACTERS:
                in_print = True
                index = after
        if not char.isspace():
            last = char
    return False


_AWK_SPECIAL = re.compile(r"(?:ARGV|ARGC|ENVIRON|PROCINFO|SYMTAB|FUNCTAB)\b")
AWK_TABLE = table(
    COMMON,
    flags(
        "-b,--characters-as-bytes -c,--traditional -C,--copyright -g,--gen-pot "
        "-N,--use-lc-numeric -n,--non-decimal-data -O,--optimize -P,--posix "
        "-r,--re-interval -s,--no-optimize -t,--lint-old -S,--sandbox -V"
    ),
    valued("-F,--field-separator -v,--assign -e,--source"),
    valued("-L,--lint", arity=Arity.OPTIONAL),
    valued(
        "-f,--file -i,--include -l,--load -E,--exec",
        Effect.UNSAFE,
        "takes its program or extensions from a file the engine cannot see",
    ),
    valued(
        "-d,--dump-variables -D,--debug -o,--pretty-print -p,--profile",
        Effect.UNSAFE,
        "writes a file",
        arity=Arity.OPTIONAL,
    ),
    flags("-M,--bignum -h,--usage"),
    permute=False,  # awk stops at its program text
)


def _awk(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    programs = parsed.values("-e", "--source")
    operands = list(parsed.operands)
    if not programs and not parsed.has("-f", "--file"):
        programs, operands = operands[:1], operands[1:]
    for program in programs:
        # gawk joins a backslash-newline: "print $0 \⏎ > f" is one statement
        text = program.value.replace("\\\n", " ")
        if (
            program.kind is not WordKind.LITERAL
            or _AWK_DANGER.search(text)
            or _awk_print_redirects(text)
        ):
            found.problems.append(f"{name} program may run commands or write files")
    for assignment in parsed.values("-v", "--assign"):
        if assignment.kind is not WordKind.LITERAL:
            found.problems.append(f"{name} -v {assignment.display} is only known at run time")
        elif _AWK_SPECIAL.match(assignment.value):
            found.problems.append(f"{name} -v {assignment.display} changes what awk reads")
    files = []
    for word in operands:
        if word.kind is WordKind.LITERAL and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word.value):
            if _AWK_SPECIAL.match(word.value):
                found.problems.append(f"{name} operand {word.display} changes what awk reads")
            continue  # var=value operands assign, they are not files
        if word.kind is not WordKind.LITERAL:
            found.problems.append(f"{name} operand {word.display} may be an assignment")
            continue
        files.append(word)
    found.read([w for w in files if w.value != "-"], f"argument of {name}:")


AWK = Program(("awk", "gawk", "mawk", "nawk"), AWK_TABLE, _awk)

PROGRAMS = (GREP, SED, AWK)
