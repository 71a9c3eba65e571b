"""What a command's environment may be given, and which shell assignments change what later
commands run."""

from __future__ import annotations

import re

from rules.words import (
    Word,
    WordKind,
)

ASSIGNMENT_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")  # use with .match


# The two variables the engine knows the values of (docs/rules.md, "Variables").
KNOWN_VARIABLES = ("WORKSPACE", "CONTEXT_ID")
KNOWN_REFERENCE = re.compile(
    r"\$\{(WORKSPACE|CONTEXT_ID)\}|\$(WORKSPACE|CONTEXT_ID)(?![A-Za-z0-9_])"
)


# Assigning these changes which program runs or what it loads/contacts.
_DANGEROUS_VARIABLES = frozenset(
    {
        "PATH", "HOME", "IFS", "ENV", "BASH_ENV", "PROMPT_COMMAND", "PS4", "SHELLOPTS",
        "BASHOPTS", "CDPATH", "GLOBIGNORE", "BASH_LOADABLES_PATH", "PYTHONPATH",
        "PYTHONSTARTUP", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
        "NODE_OPTIONS", "NODE_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_DIR",
        "GIT_PROXY_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "EDITOR", "VISUAL", "PAGER",
        "GIT_PAGER", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
        "PIP_TRUSTED_HOST", "PIP_CONFIG_FILE", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_INDEX",
        "UV_DEFAULT_INDEX", "NPM_CONFIG_REGISTRY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
        "WORKSPACE", "CONTEXT_ID", "CURL_HOME", "WGETRC", "NETRC", "GOPROXY", "GOFLAGS",
        "CARGO_HOME",
        # What the executor sets for every command (cs_agent/environment.py; a test keeps the
        # two in step): changing one takes a protection away or points a program elsewhere.
        "VIRTUAL_ENV", "TMPDIR", "PWD", "NO_PROXY",
        # What the modelled programs and their libraries obey: temporary directories sort and
        # Python write to, option parsing (POSIXLY_CORRECT), TLS trust, modules glibc and
        # OpenSSL load, less's input filters (a pager git starts), a shell's history file.
        "TMP", "TEMP", "POSIXLY_CORRECT", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GCONV_PATH", "LOCPATH", "NLSPATH",
        "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "OPENSSL_CONF", "OPENSSL_ENGINES",
        "LESSOPEN", "LESSCLOSE", "LESSKEY", "LESS", "MANPAGER", "BROWSER", "HISTFILE",
        "INPUTRC", "GNUPGHOME", "GREP_OPTIONS", "TAR_OPTIONS", "MAKEFLAGS", "SHELL", "OLDPWD",
        "FCEDIT", "KUBECONFIG",
    }
)  # fmt: skip


# Whole families: git reads config, hooks, diff and editor programs from GIT_* and
# $XDG_CONFIG_HOME/git/config (a file the agent may have written in its workspace); pip
# and uv take every option from PIP_* / UV_*; Python imports what PYTHONSTARTUP,
# PYTHONWARNINGS and PYTHONBREAKPOINT name; HTTP(S)_PROXY route every fetch.
_DANGEROUS_PREFIXES = (
    "LD_", "DYLD_", "BASH_FUNC_", "GIT_", "NPM_CONFIG_", "PIP_", "UV_", "XDG_", "PYTHON",
    "CONDA_", "HTTP", "FTP_", "AWS_", "GOOGLE_", "AZURE_",
)  # fmt: skip


# What the environment of a command may be given (``NAME=value cmd``, ``env NAME=value``,
# ``export NAME=value``): a list of bad variables can never be complete (glibc, Python, TLS
# libraries and every tool read their own), so only these, with plain values, are allowed.
# A value with "/" would make a locale or terminal name a path.
_PLAIN_VALUE = r"[A-Za-z0-9_.,:@+=-]*"


HARMLESS_ENVIRONMENT = dict.fromkeys(
    (
        "LANG", "LANGUAGE", "LC_ALL", "LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "LC_NUMERIC",
        "LC_TIME", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CI",
        "DEBIAN_FRONTEND", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
        "PYTHONIOENCODING", "PYTHONUTF8", "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_NO_INPUT",
        "PIP_NO_CACHE_DIR", "PIP_PROGRESS_BAR", "GIT_TERMINAL_PROMPT",
    ),
    re.compile(_PLAIN_VALUE),
)  # fmt: skip


def dangerous_variable(name: str) -> bool:
    """Does assigning ``name`` change what later commands run, load or contact? (Of the
    PYTHON family, the harmless ones do not: PYTHONUNBUFFERED, PYTHONHASHSEED…)"""
    upper = name.upper()
    if upper.startswith("PYTHON") and name in HARMLESS_ENVIRONMENT:
        return False
    return upper in _DANGEROUS_VARIABLES or upper.startswith(_DANGEROUS_PREFIXES)


def environment_problem(name: str, value: Word) -> str | None:
    """Why giving a command's environment ``name=value`` cannot be allowed (None: it can)."""
    pattern = HARMLESS_ENVIRONMENT.get(name)
    if pattern is None:
        return f"{name} is not an environment variable the engine knows to be harmless"
    if value.kind is WordKind.UNKNOWN or not pattern.fullmatch(value.value.strip("\"'")):
        return f"the value of {name} is not a plain word ({value.display})"
    return None
