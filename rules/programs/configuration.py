"""Files that configure or extend the programs the rules allow. An allowed program reads
them and may run what they name (git's hooks and config, Python's .pth files and
sitecustomize, pip's and curl's config files, shell start-up files, a directory of
executables that may be on PATH), so a command that writes one is at most asked about —
even where a file rule allows writing: the workspace is never a source of trusted code."""

from __future__ import annotations

import re

from rules.patterns import SENTINEL, compile_path, could_match, glob_tokens

_CONFIGURING = (
    ("**/.git", "is git's own directory: its hooks and config run programs"),
    ("**/.git/**", "is inside git's own directory: its hooks and config run programs"),
    ("**/.gitconfig", "is git configuration, which can name programs git runs"),
    ("**/.config/git/**", "is git configuration, which can name programs git runs"),
    ("**/.gitmodules", "names the submodules git fetches"),
    ("**/.gitattributes", "assigns git filters and diff drivers, which run programs"),
    # A directory with HEAD and config is a git directory git finds on its own (a "bare"
    # repository): git status there runs its core.fsmonitor.
    ("**/HEAD", "makes its directory a git repository, whose config git then reads"),
    ("**/config", "is what git reads as the configuration of a repository directory"),
    ("**/site-packages/**", "extends Python: installed modules and .pth files run on import"),
    ("**/dist-packages/**", "extends Python: installed modules and .pth files run on import"),
    ("**/*.pth", "is a Python path file: its import lines run at every start"),
    ("**/sitecustomize.py", "runs at every Python start"),
    ("**/usercustomize.py", "runs at every Python start"),
    ("**/pip.conf", "configures pip (indexes, build options)"),
    ("**/pip.ini", "configures pip (indexes, build options)"),
    ("**/pyvenv.cfg", "configures a Python virtual environment"),
    # pip's wheel cache (~/.cache/pip, and HOME is the context): pip installs a cached
    # wheel of the requirement instead of fetching it (pip/_internal/cache.py).
    ("**/.cache/pip/**", "is pip's cache: pip installs a wheel found there, not the index's"),
    ("**/.curlrc", "configures curl"),
    ("**/.wgetrc", "configures wget"),
    ("**/.netrc", "holds credentials fetchers send"),
    ("**/.npmrc", "configures npm"),
    ("**/.ssh/**", "configures ssh, which git runs (ProxyCommand)"),
    ("**/.bashrc", "runs in every interactive bash"),
    ("**/.bash_profile", "runs in every login bash"),
    ("**/.bash_login", "runs in every login bash"),
    ("**/.profile", "runs in every login shell"),
    ("**/.bash_logout", "runs when a login bash exits"),
    ("**/.inputrc", "configures readline, which can bind commands"),
    ("**/bin/**", "is in a directory of executables that may be on PATH"),
    # Last, so that a file named above keeps its own reason: the directories programs search
    # for their configuration (XDG's .config: git, pip, uv…; pip's legacy .pip; .local's
    # user site-packages and bin), the directory itself too, so that a clone, cp -r or mv
    # into it is a configuration write.
    ("**/.config", "is where programs look for their configuration (git, pip, uv…)"),
    ("**/.config/**", "is where programs look for their configuration (git, pip, uv…)"),
    ("**/.pip", "is where pip looks for its configuration"),
    ("**/.pip/**", "is where pip looks for its configuration"),
    ("**/.local", "holds Python's user site-packages and user programs"),
    ("**/.local/**", "holds Python's user site-packages and user programs"),
    ("**/.cache", "holds programs' caches, which pip and uv install from"),
    ("**/.cache/uv/**", "is uv's cache: uv installs what it finds there"),
    ("**/uv.toml", "configures uv (indexes, build options)"),
    ("**/.pypirc", "holds the credentials and indexes of package uploads"),
    ("**/.pydistutils.cfg", "configures Python package builds"),
    ("**/.condarc", "configures conda"),
)
_COMPILED = tuple((compile_path(glob, "/", "-"), reason) for glob, reason in _CONFIGURING)
# One pass over a path for all of them: the group that matched says which.
_ANY = re.compile(
    "|".join(f"(?P<g{i}>{c.regex.pattern})" for i, (c, _) in enumerate(_COMPILED)), re.DOTALL
)


def configures(path: str, *, pattern: bool = False) -> str | None:
    """Why writing ``path`` (absolute, normalised) configures or extends a program.
    ``pattern``: the path is a glob or stands for everything below a directory (it
    contains the sentinel) — then any file it may cover counts."""
    match = _ANY.fullmatch(path)
    if match is not None and match.lastgroup is not None:
        return _COMPILED[int(match.lastgroup[1:])][1]
    if pattern or SENTINEL in path:
        for compiled, reason in _COMPILED:
            if could_match(compiled.tokens, glob_tokens(path)):
                return reason
    return None


# Directories whose files, whatever their names, configure or extend a program: a whole
# tree copied, moved or restored into one (cp -rT overlay .venv, mv overlay .venv, git
# checkout REV -- .venv/lib) may bring any of the files above, whose names the line does
# not show.
CONFIGURING_DIRECTORIES = frozenset(
    {
        ".venv", "venv", ".git", ".config", ".local", ".pip", ".cache", ".ssh", "site-packages",
        "dist-packages", "bin", ".github", "hooks",
    }
)  # fmt: skip


def configuring_directory(path: str) -> str | None:
    """The configuring directory ``path`` (a path as written, relative or not) is, or lies
    in; None when it is in none."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return next((part for part in parts if part in CONFIGURING_DIRECTORIES), None)
