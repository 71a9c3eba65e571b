"""python and pip. Python's own option parser: short options only (clustered), no
abbreviations, ``-c``/``-m``/the script end it and everything after goes to the program.
pip parses with optparse, which takes any unique prefix of a long option."""

from __future__ import annotations

import re

from rules.invocations import Contained
from rules.patterns import SENTINEL
from rules.programs.base import (
    Abbreviations,
    Effect,
    Parsed,
    Program,
    Understanding,
    flags,
    option_uses,
    parse,
    table,
    valued,
)
from rules.words import Word, WordKind

PYTHON_TABLE = table(
    flags(
        "-b -B -d -E -h,-?,--help --help-env --help-xoptions --help-all -I -O -P -q -R -s -S "
        "-u -v -V,--version -x"
    ),
    valued("-W -X --check-hash-based-pycs"),
    flags("-i", Effect.UNSAFE, "reads more code from standard input"),
    abbreviations=Abbreviations.NONE,
    permute=False,
)


def _json_tool(name: str, parsed: Parsed, found: Understanding) -> None:
    """``python -m json.tool [INFILE [OUTFILE]]``: reads one file and writes the other."""
    infile, outfile = parsed.operands[:1], parsed.operands[1:2]
    found.read([word for word in infile if word.value != "-"], f"input of {name}:")
    found.write([word for word in outfile if word.value != "-"], f"output of {name}:")
    if len(parsed.operands) > 2:
        found.problems.append(f"{name} takes at most two files")


def _venv(name: str, parsed: Parsed, found: Understanding) -> None:
    """``python -m venv DIR…`` creates (writes) each DIR; --clear first deletes what is in
    it."""
    if not parsed.operands:
        found.problems.append(f"{name} needs a directory")
    found.write(parsed.operands, f"{name}:")
    if not parsed.has("--without-pip"):
        # venv's _setup_pip runs DIR/bin/python -Im ensurepip (Lib/venv/__init__.py): that
        # Python processes DIR's site-packages, so a .pth file already there runs.
        found.problems.append(
            Contained(f"{name} runs the new environment's Python (ensurepip) in DIR")
        )
    if parsed.has("--upgrade-deps"):
        # … then DIR/bin/python -m pip install --upgrade pip setuptools, which reads
        # DIR/pip.conf (pip's site configuration) for its index.
        found.problems.append(Contained(f"{name} --upgrade-deps runs pip from the index"))
    if parsed.has("--clear"):
        found.delete(
            [Word(word.value.rstrip("/") + "/" + SENTINEL, word.kind) for word in parsed.operands],
            f"{name} --clear",
            recursive=True,
        )


# Modules run with -m whose command lines the engine reads (argparse: options anywhere,
# unique prefixes of long ones; the tables are partial, so an abbreviation is asked about);
# pip is judged as pip (the walker unwraps it). Any other module is not modelled.
MODULES = {
    "json.tool": Program(
        ("json.tool",),
        table(
            flags("-h,--help --sort-keys --no-ensure-ascii --json-lines --tab --no-indent"),
            flags("--compact"),
            valued("--indent"),
        ),
        _json_tool,
    ),
    "venv": Program(
        ("venv",),
        table(
            flags(
                "-h,--help --system-site-packages --symlinks --copies --clear --upgrade "
                "--without-pip --upgrade-deps --without-scm-ignore-files"
            ),
            valued("--prompt"),
        ),
        _venv,
    ),
}
KNOWN_MODULES = {*MODULES, "pip"}
# Modules that listen for connections (the standard library's, and the common servers'
# packages, by their top-level name): asked about, not contained.
SERVING_MODULES = frozenset(
    {
        "http.server", "CGIHTTPServer", "SimpleHTTPServer", "smtpd", "xmlrpc.server",
        "pydoc", "wsgiref.simple_server", "socketserver", "asyncio", "idlelib",
    }
)  # fmt: skip
SERVING_PACKAGES = frozenset(
    {
        "aiosmtpd", "uvicorn", "gunicorn", "hypercorn", "flask", "django", "jupyterlab",
        "jupyter_server", "notebook", "streamlit", "gradio", "tornado", "twisted", "aiohttp",
        "sanic", "waitress", "bottle", "dash", "panel", "voila", "mkdocs", "tensorboard",
        "uploadserver", "kernel_gateway",
    }
)  # fmt: skip


# The standard library's modules that run another module or code they are given
# (python -m cProfile -m http.server, runpy.run_module("http.server")).
RUNNER_MODULES = frozenset({"cProfile", "profile", "trace", "pdb", "runpy", "timeit"})
_SERVING_NAME = re.compile(
    r"(?<![\w.])(?:"
    + "|".join(re.escape(name) for name in sorted(SERVING_MODULES | SERVING_PACKAGES))
    + r")(?![\w])"
)
_SERVING_SCRIPT = re.compile(
    r"/(?:http/server|smtpd|xmlrpc/server|pydoc|wsgiref/simple_server|socketserver)\.py$"
)


def _serves(module: str, arguments: list[Word]) -> bool:
    """Does ``python -m module arguments…`` start a server? (``jupyter`` does for its
    notebook, lab, server, kernel and kernelgateway commands, not for nbconvert; a runner
    module does when what it runs is one.)"""
    if module in SERVING_MODULES or module.split(".", 1)[0] in SERVING_PACKAGES:
        return True
    if module in RUNNER_MODULES:
        return any(_SERVING_NAME.search(word.value) for word in arguments)
    first = arguments[0].value if arguments else ""
    return module == "jupyter" and first in {"notebook", "lab", "server", "kernel", "kernelgateway"}


def python_parts(words: list[Word]) -> tuple[Parsed, str, Word | None, list[Word]]:
    """(python's own options, mode, target, the program's arguments): mode is ``-c``,
    ``-m``, ``script`` or ``stdin``."""
    options: list[Word] = []
    index = 0
    while index < len(words):
        word = words[index]
        value = word.value
        if word.kind is not WordKind.LITERAL or not value.startswith("-") or value == "-":
            break
        index += 1
        if value == "--":
            break
        letters = value[1:] if not value.startswith("--") else ""
        cut = next((i for i, letter in enumerate(letters) if letter in "cm"), None)
        if cut is not None:
            mode = "-" + letters[cut]
            if letters[:cut]:
                options.append(Word("-" + letters[:cut]))
            attached = letters[cut + 1 :]
            if attached:
                target: Word | None = Word(attached, word.kind)
            else:
                target = words[index] if index < len(words) else None
                index += 1
            return parse(options, PYTHON_TABLE, "python"), mode, target, words[index:]
        options.append(word)
        if value in {"-W", "-X", "--check-hash-based-pycs"} and index < len(words):
            options.append(words[index])
            index += 1
    parsed = parse(options, PYTHON_TABLE, "python")
    if index >= len(words) or words[index].value == "-":
        return parsed, "stdin", None, words[index + 1 :]
    return parsed, "script", words[index], words[index + 1 :]


def _python(name: str, parsed: Parsed, found: Understanding) -> None:
    own, mode, target, arguments = python_parts(parsed.operands)
    found.problems.extend(own.problems)
    for option in own.values("-X"):
        if option.value.startswith("pycache_prefix="):
            # Compiled modules are written below that directory, whatever the mode.
            prefix = option.value.split("=", 1)[1] or "."
            found.write(
                [Word(prefix.rstrip("/") + "/" + SENTINEL, WordKind.GLOB)],
                f"{name} -X pycache_prefix",
            )
        elif option.kind is not WordKind.LITERAL:
            found.problems.append(f"{name} -X {option.display} is only known at run time")
    isolated = own.has("-I", "-P")
    if mode == "-c":
        found.problems.append(Contained("inline Python code (-c) cannot be judged"))
    elif mode == "stdin":
        found.problems.append(Contained(f"{name} reads its program from standard input"))
    elif mode == "-m":
        module = target.value if target is not None else ""
        if target is None or target.kind is not WordKind.LITERAL:
            found.problems.append(Contained(f"{name} -m runs a module only known at run time"))
        elif _serves(module, arguments):
            # A server waits for connections until the time limit, and some run what they
            # are asked to (http.server --cgi): a person should know one is started (the
            # first reason given, before the one about the working directory below).
            found.problems.append(f"{name} -m {module} starts a server")
            return
        elif module not in KNOWN_MODULES:
            found.problems.append(
                Contained(f"{name} -m {module}: what the module does is not modelled")
            )
        elif module in MODULES:
            program = MODULES[module]
            what = f"{name} -m {module}"
            module_parsed = parse(arguments, program.table, what)
            found.problems.extend(module_parsed.problems)
            assert program.operands is not None
            program.operands(what, module_parsed, found)
        if not isolated:
            # sys.path[0] is the working directory: a module file there wins.
            found.code.append(Word("."))
    elif target is not None and _SERVING_SCRIPT.search(target.value):
        found.problems.append(f"{name} {target.display} starts a server")
    elif target is not None:
        found.code.append(target)  # the script (its path is read, its code is run)
        found.read([target], f"script of {name}:")
        # Even a script the agent cannot write does what its code says with its arguments
        # (the standard library's timeit.py runs them, pip/__main__.py installs them): not
        # modelled, like an unknown -m module.
        found.problems.append(
            Contained(f"{name} runs the script {target.display}: what it does is not modelled")
        )


PYTHON = Program(
    ("python", "python3", "pypy", "pypy3"), table(permute=False, parse_options=False), _python
)

# --- pip ------------------------------------------------------------------------------------------

PIP_GENERAL = [
    *flags(
        "-h,--help --debug --isolated --require-virtualenv -v,--verbose -V,--version -q,--quiet "
        "--no-input --no-cache-dir --disable-pip-version-check --no-color "
        "--no-python-version-warning"
    ),
    *valued("--retries --timeout --exists-action --use-feature --use-deprecated --resume-retries"),
    *valued("--keyring-provider", Effect.UNSAFE, "runs a keyring program"),
    *valued("--python", Effect.EXEC, "runs pip under another interpreter"),
    *valued("--log,--log-file,--local-log", Effect.WRITE),
    # pip installs a wheel it finds in its cache rather than the index's (cache.py).
    *valued("--cache-dir", Effect.UNSAFE, "installs wheels from a cache the agent may fill"),
    *valued("--proxy", Effect.UNSAFE, "sends its traffic through a proxy"),
    *valued("--trusted-host", Effect.UNSAFE, "trusts a host without TLS verification"),
    *valued("--cert --client-cert", Effect.CONFIG, "replaces the TLS trust or identity"),
]
PIP_INDEX = [
    *valued("-i,--index-url --extra-index-url -f,--find-links", Effect.NETWORK),
    *flags("--no-index"),
]
# What pip installs from a file rather than the index: a path, or a name ending in one of
# its archive extensions, in any case (pip/_internal/utils/filetypes.py: is_archive_file
# lower-cases the extension; "payload.tar" and "x.ZIP" are local archives).
ARCHIVE = re.compile(
    r"\.(?:whl|zip|tar|tar\.gz|tgz|tar\.bz2|tbz|tar\.xz|txz|tlz|tar\.lz|tar\.lzma)$", re.I
)
_LOCAL_SOURCE = re.compile(r"^(?:\.|/|~|file:)", re.I)


def _requirement_target(text: str) -> str:
    """What pip installs a requirement from, as its own parser reads the text
    (pip/_internal/req/constructors.py, parse_req_from_line): surrounding whitespace
    stripped, environment markers after ";" and extras in "[…]" left off, and a direct
    reference "name @ target" taken as its target — "x.whl[extra]", " x.tar.gz ",
    "X.WHL; python_version>'3'" and "pkg @ ./dist/pkg.whl" are all local archives."""
    target = text.split(";", 1)[0].strip()
    if "@" in target:
        target = target.split("@", 1)[1].strip()
    return re.sub(r"\s*\[[^\]]*\]$", "", target).strip()


def _pip_operands(name: str, parsed: Parsed, found: Understanding) -> None:
    """Requirement names are judged by sources.json (narrowing); a local project or archive
    is code: building it runs its setup, installing it can add .pth files."""
    option_uses(name, parsed, found)
    for links in parsed.values("-f", "--find-links"):
        if links.kind is not WordKind.LITERAL or "://" not in links.value:
            # A directory of archives the agent may have put there (pip install -f ./wheels
            # pandas installs ./wheels/pandas-*.whl, whatever is in it).
            found.problems.append(
                f"{name} --find-links {links.display}: packages from a local directory the "
                "agent may have written"
            )
    if not name.endswith(("install", "download", "wheel")):
        return
    for word in parsed.operands:
        if word.kind is not WordKind.LITERAL:
            continue  # narrowing asks about packages only known at run time
        if "://" in word.value:
            # "pkg @ https://…", "git+https://…": fetched from there, not from the index
            found.destinations.append(
                Word(word.value.split("@", 1)[-1].strip().removeprefix("git+"))
            )
            continue
        value = _requirement_target(word.value)
        if _LOCAL_SOURCE.search(value) or ARCHIVE.search(value) or "/" in value:
            found.problems.append(
                f"{name} {word.display}: a local project or archive runs its own build code "
                "(and .pth files) the agent may have written"
            )


INSTALL = Program(
    ("install",),
    table(
        PIP_GENERAL,
        PIP_INDEX,
        flags(
            "--no-deps --pre --dry-run --user -U,--upgrade --force-reinstall -I,--ignore-installed "
            "--ignore-requires-python --no-build-isolation --use-pep517 --no-use-pep517 "
            "--check-build-dependencies --break-system-packages --compile --no-compile "
            "--no-warn-script-location --no-warn-conflicts --prefer-binary --require-hashes "
            "--no-clean"
        ),
        valued(
            "--platform --python-version --implementation --abi --upgrade-strategy "
            "--no-binary --only-binary --progress-bar --root-user-action"
        ),
        # [dependency-groups] of a pyproject.toml the agent may have written (pip 25.1)
        valued("--group", Effect.UNSAFE, "installs what a file lists"),
        valued("-t,--target --root --prefix --src", Effect.WRITE),
        valued("--report", Effect.WRITE),
        # A requirements file is the agent's and not readable here; an enforcing executor
        # holds what it installs to the context's virtualenv and sources.json's registries.
        valued("-r,--requirement", Effect.LISTED, "installs what a file lists"),
        valued("-c,--constraint", Effect.LISTED, "constrains the install by what a file lists"),
        valued(
            "-e,--editable", Effect.EXEC, "builds and installs a project the agent may have written"
        ),
        valued(
            "-C,--config-settings --global-option --build-option",
            Effect.CONFIG,
            "passes options to build backends",
        ),
    ),
    _pip_operands,
)
LIST = Program(
    ("list",),
    table(
        PIP_GENERAL,
        PIP_INDEX,
        flags(
            "-o,--outdated -u,--uptodate -e,--editable -l,--local --user --pre --not-required "
            "--exclude-editable --include-editable"
        ),
        valued("--format --exclude"),
        valued("--path", Effect.READ),
    ),
    _pip_operands,
)
SHOW = Program(("show",), table(PIP_GENERAL, flags("-f,--files")))
FREEZE = Program(
    ("freeze",),
    table(
        PIP_GENERAL,
        flags("-l,--local --user --all --exclude-editable"),
        valued("--exclude"),
        valued("-r,--requirement --path", Effect.READ),
    ),
    _pip_operands,
)
CHECK = Program(("check",), table(PIP_GENERAL))
UNINSTALL = Program(
    ("uninstall",),
    table(
        PIP_GENERAL,
        flags("-y,--yes --break-system-packages"),
        valued("-r,--requirement", Effect.UNSAFE, "uninstalls what a file lists"),
    ),
    _pip_operands,
)
_FETCHING = [
    *PIP_GENERAL,
    *PIP_INDEX,
    *flags(
        "--no-deps --pre --require-hashes --prefer-binary --no-build-isolation --use-pep517 "
        "--no-use-pep517 --check-build-dependencies --ignore-requires-python --no-clean"
    ),
    *valued("--no-binary --only-binary --progress-bar"),
    *valued("-r,--requirement -c,--constraint", Effect.UNSAFE, "fetches what a file lists"),
    *valued("--src", Effect.WRITE),
    *valued(
        "-C,--config-settings --global-option --build-option",
        Effect.CONFIG,
        "passes options to build backends",
    ),
]
DOWNLOAD = Program(
    ("download",),
    table(
        _FETCHING,
        valued("--platform --python-version --implementation --abi"),
        valued("-d,--dest", Effect.WRITE),
    ),
    _pip_operands,
)
WHEEL = Program(("wheel",), table(_FETCHING, valued("-w,--wheel-dir", Effect.WRITE)), _pip_operands)
SUBCOMMANDS = {
    program.names[0]: program
    for program in (INSTALL, LIST, SHOW, FREEZE, CHECK, UNINSTALL, DOWNLOAD, WHEEL)
}
PIP = Program(("pip", "pip3"), table(PIP_GENERAL, permute=False), None, SUBCOMMANDS)

PROGRAMS = (PYTHON, PIP)
