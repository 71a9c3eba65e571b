"""git: its global options, then one subcommand with its own table. Subcommands parse with
git's parse-options, which takes any unique prefix of a long option (``--ext-d`` is
``--ext-diff``); the global options before the subcommand need their full names."""

from __future__ import annotations

import re

from rules.programs.base import (
    Abbreviations,
    Arity,
    Effect,
    Option,
    Parsed,
    Program,
    Reader,
    Understanding,
    flags,
    option_uses,
    paired,
    table,
    valued,
)
from rules.programs.configuration import configuring_directory
from rules.words import Word, WordKind

EXEC, CONFIG, UNSAFE = Effect.EXEC, Effect.CONFIG, Effect.UNSAFE
OPTIONAL = Arity.OPTIONAL

# Configuration keys that only change presentation or identity (never run or contact
# anything): the rest may name programs (core.fsmonitor, core.sshCommand, diff drivers…).
HARMLESS_CONFIG = (
    "user.",
    "color.",
    "advice.",
    "init.defaultbranch",
    "core.quotepath",
    "core.autocrlf",
    "pull.rebase",
    "pull.ff",
    "merge.ff",
    "log.",
    "commit.gpgsign",
    "tag.gpgsign",
)
# These run the signing program named in git config when true (like -S and
# --show-signature): harmless only switched off.
SIGNING_CONFIG = frozenset({"commit.gpgsign", "tag.gpgsign", "log.showsignature", "push.gpgsign"})
_OFF = frozenset({"false", "no", "off", "0"})

GLOBAL = table(
    flags(
        "-v,--version -h,--help -P,--no-pager --bare --no-replace-objects --literal-pathspecs "
        "--glob-pathspecs --noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice "
        "--html-path --man-path --info-path"
    ),
    valued("-C", Effect.CHDIR),
    valued("--namespace"),
    valued("--list-cmds", arity=OPTIONAL),  # git.c: only --list-cmds=GROUP
    valued("-c"),  # each setting is checked against HARMLESS_CONFIG
    valued("--config-env", CONFIG, "reads configuration from the environment"),
    valued("--exec-path", EXEC, "runs git programs from another directory", arity=OPTIONAL),
    valued(
        "--git-dir --work-tree --attr-source", UNSAFE, "points git at files the engine cannot see"
    ),
    flags("-p,--paginate", UNSAFE, "runs the pager named in git config"),
    abbreviations=Abbreviations.NONE,
    permute=False,
)

# --- what the history and diff commands share -----------------------------------------------------

DIFF_OPTIONS = [
    *flags(
        "-p,-u,--patch -s,--no-patch --raw --patch-with-raw -t --indent-heuristic "
        "--no-indent-heuristic --minimal --patience --histogram --compact-summary --numstat "
        "--shortstat --summary --patch-with-stat -z --name-only --name-status "
        "--no-color --no-renames --rename-empty --no-rename-empty --check "
        "--full-index --binary --find-copies-harder -D,--irreversible-delete -R --text,-a "
        "--ignore-cr-at-eol --ignore-space-at-eol -b,--ignore-space-change -w,--ignore-all-space "
        "--ignore-blank-lines --exit-code --quiet --no-ext-diff --no-textconv --no-prefix "
        "--default-prefix --function-context,-W --ita-invisible-in-index --ita-visible-in-index "
        "--no-relative --pickaxe-all --pickaxe-regex --merge-base "
        "--cached --staged --no-index --ours --theirs --base -0 -1 -2 -3 --combined-all-paths"
    ),
    *valued(
        "--output-indicator-new --output-indicator-old --output-indicator-context "
        "--diff-algorithm --anchored --stat-width --stat-name-width --stat-count "
        "--stat-graph-width -l --diff-filter -S -G --find-object --src-prefix --dst-prefix "
        "--line-prefix --inter-hunk-context --ignore-matching-lines,-I --skip-to --rotate-to "
        "--ws-error-highlight --color-moved-ws --word-diff-regex"
    ),
    *valued(
        # diff.c: PARSE_OPT_OPTARG, a value only attached (-U5, --unified=5, --abbrev=8).
        "-U,--unified --abbrev "
        "--word-diff --color --color-moved --dirstat -X --stat --submodule --color-words "
        "--relative -M,--find-renames -C,--find-copies -B,--break-rewrites --ignore-submodules",
        arity=OPTIONAL,
    ),
    *valued("--output", Effect.WRITE),
    *valued("-O", Effect.READ),  # the order file
    *flags("--cumulative"),
    *flags("--ext-diff", EXEC, "runs the diff program named in git config"),
    *flags("--textconv", EXEC, "runs text conversion programs named in git config"),
]
REVISION_OPTIONS = [
    *flags(
        "--all --reflog --merges --no-merges --first-parent "
        "--not --boundary --left-right --left-only --right-only --cherry-pick --cherry-mark "
        "--cherry --reverse --topo-order --date-order --author-date-order "
        "--oneline --graph --no-graph --abbrev-commit --no-abbrev-commit --relative-date "
        "--no-decorate --source --use-mailmap --mailmap --no-mailmap --full-diff --follow "
        "--walk-reflogs,-g --simplify-merges --simplify-by-decoration --dense --sparse "
        "--full-history --show-pulls --no-walk --do-walk --log-size --no-notes -i "
        "--regexp-ignore-case --invert-grep --all-match -E,--extended-regexp "
        "-F,--fixed-strings -P,--perl-regexp --basic-regexp -m -c --cc --remerge-diff "
        "--no-expand-tabs --children --parents "
        "--bisect --count --stdin --standard-notes --no-standard-notes"
    ),
    # revision.c: a pattern or a ref only attached (--branches=feat*, --show-notes=REF,
    # --max-parents=1); the next word is not theirs.
    *valued(
        "--branches --tags --remotes --ancestry-path --show-notes --min-parents --max-parents",
        arity=OPTIONAL,
    ),
    *valued(
        "-n,--max-count --skip --since,--after --until,--before --author --committer --grep "
        "--grep-reflog --exclude --glob --date --encoding "
        "--since-as-filter --diff-merges --decorate-refs --decorate-refs-exclude -L"
    ),
    *valued(
        "--pretty --format --decorate --notes --show-linear-break --expand-tabs",
        arity=OPTIONAL,
    ),
    *flags("--show-signature", UNSAFE, "runs the signature program named in git config"),
    *flags("--no-signature"),
]


def _pathspecs(name: str, parsed: Parsed, found: Understanding, *, writes: bool) -> None:
    """The operands are revisions and paths in the repository; git reads the paths or,
    for checkout/restore, writes them. (A revision judged as a path is only ever a
    stricter judgement.)"""
    option_uses(name, parsed, found)
    if writes:
        found.write(parsed.operands, name)
        for operand in parsed.operands:
            _restored(name, operand, found)
    else:
        found.read(parsed.operands, name)


def _restored(name: str, pathspec: Word, found: Understanding) -> None:
    """What a checkout or restore of ``pathspec`` writes: a pattern (``*`` crosses ``/`` in
    git's pathspecs, and ``:(glob)``, ``:(icase)``, ``:(top)`` change what it names) or a
    directory inside one whose files configure programs may restore any of them."""
    value = pathspec.value
    if (
        value.startswith(":")
        or pathspec.kind is not WordKind.LITERAL
        or re.search(r"[*?\[]", value)
    ):
        found.problems.append(
            f"git {name} restores the files the pathspec {pathspec.display} names, which may "
            "configure programs (git's patterns cross directories)"
        )
        return
    directory = configuring_directory(value)
    if directory is not None:
        found.problems.append(
            f"git {name} restores {pathspec.display}, inside {directory}, whose files "
            "configure or extend programs"
        )


def _plain(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)


def _commit(name: str, parsed: Parsed, found: Understanding) -> None:
    _pathspecs(name, parsed, found, writes=False)
    if not parsed.has(
        "-m", "--message", "-F", "--file", "-C", "--reuse-message", "--no-edit", "--dry-run"
    ):
        found.problems.append("git commit without -m opens the editor named in git config")


def _clone(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses("git clone", parsed, found)
    operands = parsed.operands
    if not operands:
        found.problems.append("git clone needs a repository")
        return
    url = operands[0]
    found.destinations.append(url)
    if url.kind is WordKind.LITERAL and not ("://" in url.value or "@" in url.value):
        # A local "repository" is a directory the agent may have laid out itself (its
        # config can name programs); a clone of it also reads files outside the workspace.
        found.problems.append(f"git clone of the local path {url.display}")
    if len(operands) >= 2:
        found.write(operands[1:2], "git clone")
    elif url.kind is WordKind.LITERAL:
        name = url.value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        found.write([Word(name.removesuffix(".git") or "repository")], "git clone")
    else:
        found.problems.append("git clone: the destination depends on a URL known at run time")
    for setting in parsed.values("-c", "--config"):
        check_config(setting, found)


def check_config(setting: Word, found: Understanding) -> None:
    key, _, value = setting.value.partition("=")
    key = key.lower()
    if (
        setting.kind is not WordKind.LITERAL
        or not key.startswith(HARMLESS_CONFIG)
        or (key in SIGNING_CONFIG and value.lower() not in _OFF)
    ):
        found.problems.append(f"git -c {setting.display} can make git run other programs")


def _config_read(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses("git config", parsed, found)
    listing = parsed.has("-l", "--list", "--get", "--get-all", "--get-regexp", "--show-origin")
    if len(parsed.operands) >= 2 or (parsed.operands and not listing and len(parsed.operands) > 1):
        check_config(parsed.operands[0], found)
    if parsed.has(
        "--edit",
        "-e",
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
    ):
        found.problems.append("git config changes configuration")


def program(
    names: str, *groups: list[Option], operands: Reader = _plain, numeric: bool = False
) -> Program:
    return Program(
        tuple(names.split()), table(flags("-h,--help"), *groups, numeric=numeric), operands
    )


def _reads(name: str, parsed: Parsed, found: Understanding) -> None:
    _pathspecs(name, parsed, found, writes=False)


def _writes(name: str, parsed: Parsed, found: Understanding) -> None:
    _pathspecs(name, parsed, found, writes=True)


STATUS = program(
    "status",
    flags(
        "-s,--short -b,--branch --show-stash --long -v,--verbose -z --no-column --ahead-behind "
        "--no-ahead-behind --renames --no-renames"
    ),
    valued(
        "--porcelain -u,--untracked-files --ignore-submodules --ignored --column --find-renames",
        arity=OPTIONAL,
    ),
    operands=_reads,
)
# git-log(1), PRETTY FORMATS: the built-in formats; any other name is a "pretty.<name>"
# alias from git config (which the agent's repository may set) unless it holds a "%".
_BUILTIN_FORMATS = frozenset(
    {"oneline", "short", "medium", "full", "fuller", "reference", "email", "mboxrd", "raw"}
)


def _log(name: str, parsed: Parsed, found: Understanding) -> None:
    """git log/show: revisions and paths are read; a format that shows a signature runs
    the signing program (git-log(1): "%G?", "%GS", "%GK" … "check the signature",
    gpg.program / gpg.ssh.program), as does a format alias only git config defines."""
    for value in parsed.values("--pretty", "--format"):
        text = value.value
        spec = text.split(":", 1)[1] if text.startswith(("format:", "tformat:")) else text
        if value.kind is not WordKind.LITERAL:
            found.problems.append(f"{name}: its format is only known at run time")
        elif "%G" in spec:
            found.problems.append(
                f"{name}: the format shows a signature (%G), which runs the signing program"
            )
        elif "%" not in spec and ":" not in text and text and text not in _BUILTIN_FORMATS:
            found.problems.append(f"{name}: format {text} is an alias git config defines")
    _reads(name, parsed, found)


# -<n> limits the commits shown (git-log(1), "Commit Limiting": -<number>, -n <number>).
LOG = program("log whatchanged", DIFF_OPTIONS, REVISION_OPTIONS, operands=_log, numeric=True)
SHOW = program("show", DIFF_OPTIONS, REVISION_OPTIONS, operands=_log, numeric=True)


def _diff(name: str, parsed: Parsed, found: Understanding) -> None:
    _reads(name, parsed, found)
    if parsed.has("--no-index") and len(parsed.operands) == 2:
        first, second = parsed.operands
        found.read(paired(first, second), f"git {name} --no-index (a directory's file):")


DIFF = program("diff", DIFF_OPTIONS, operands=_diff)
ADD = program(
    "add",
    flags(
        "-n,--dry-run -v,--verbose -f,--force -u,--update -A,--all --no-all --ignore-removal "
        "--no-ignore-removal -N,--intent-to-add --refresh --ignore-errors --ignore-missing "
        "--renormalize --sparse --pathspec-file-nul --no-warn-embedded-repo"
    ),
    valued("--chmod"),
    valued("--pathspec-from-file", Effect.READ),
    flags("-i,--interactive -p,--patch", UNSAFE, "runs the interactive filters named in config"),
    flags("-e,--edit", EXEC, "opens the editor named in git config"),
    operands=_reads,
)
COMMIT = program(
    "commit",
    flags(
        "-a,--all --reset-author --short --branch --porcelain --long -z -s,--signoff "
        "--no-signoff -n,--no-verify --verify --allow-empty --allow-empty-message --no-edit "
        "--amend --no-post-rewrite -i,--include -o,--only -v,--verbose -q,--quiet --dry-run "
        "--status --no-status --no-gpg-sign --pathspec-file-nul"
    ),
    valued("-m,--message -C,--reuse-message --fixup --squash --author --date --cleanup --trailer"),
    valued("-u,--untracked-files", arity=OPTIONAL),
    valued("-F,--file -t,--template --pathspec-from-file", Effect.READ),
    flags("-e,--edit", EXEC, "opens the editor named in git config"),
    valued("-c,--reedit-message", EXEC, "opens the editor named in git config"),
    flags("-p,--patch", UNSAFE, "runs the interactive filters named in config"),
    valued("-S,--gpg-sign", UNSAFE, "runs the signing program named in git config", arity=OPTIONAL),
    operands=_commit,
)
CHECKOUT = program(
    "checkout switch restore",
    flags(
        "-q,--quiet --progress --no-progress -f,--force --ours --theirs --no-track --guess "
        "--no-guess -l -d,--detach --ignore-skip-worktree-bits -m,--merge "
        "--ignore-other-worktrees --overwrite-ignore "
        "--no-recurse-submodules --overlay --no-overlay --pathspec-file-nul -W,--worktree "
        "-S,--staged --discard-changes --no-overwrite-ignore"
    ),
    # git-checkout(1): "--recurse-submodules … updates the content of all active
    # submodules": git runs in each, with the submodule's own configuration.
    valued(
        "--recurse-submodules",
        UNSAFE,
        "runs git in the submodules, with their configuration",
        arity=OPTIONAL,
    ),
    valued("-b -B --orphan --conflict -s,--source -c,--create -C,--force-create"),
    valued("-t,--track", arity=OPTIONAL),
    valued("--pathspec-from-file", Effect.READ),
    flags("-p,--patch", UNSAFE, "runs the interactive filters named in config"),
    operands=_writes,
)
BRANCH = program(
    "branch",
    flags(
        "-d,--delete -D -f,--force -m,--move -M -c,--copy -C -l,--list --show-current "
        "-a,--all -r,--remotes -v,-vv,--verbose -q,--quiet --no-abbrev --no-color --no-column "
        "--unset-upstream --no-track --create-reflog -i,--ignore-case --omit-empty"
    ),
    valued(
        "--sort --merged --no-merged --contains --no-contains --points-at --format "
        "-u,--set-upstream-to"
    ),
    valued("--abbrev --color --column -t,--track", arity=OPTIONAL),
    flags("--edit-description", EXEC, "opens the editor named in git config"),
)
CLONE = program(
    "clone",
    flags(
        "--no-hardlinks -q,--quiet -v,--verbose --progress -n,--no-checkout --bare --mirror "
        "--single-branch --no-single-branch --no-tags --shallow-submodules "
        "--no-shallow-submodules --remote-submodules --no-remote-submodules --sparse "
        "--also-filter-submodules --reject-shallow --no-reject-shallow --dissociate"
    ),
    valued(
        "-o,--origin -b,--branch --revision --depth --shallow-since --shallow-exclude "
        "-j,--jobs --filter --ref-format --server-option"
    ),
    valued("-c,--config"),  # each setting checked against HARMLESS_CONFIG
    valued("--reference --reference-if-able", Effect.READ),
    flags("-l,--local -s,--shared", UNSAFE, "clones from a local path"),
    valued("-u,--upload-pack", EXEC, "runs another program as the remote git"),
    valued("--template", UNSAFE, "copies hooks from a template directory"),
    valued("--separate-git-dir", UNSAFE, "puts the repository outside the work tree"),
    valued(
        "--recurse-submodules,--recursive",
        UNSAFE,
        "fetches submodules from URLs the repository names",
        arity=OPTIONAL,
    ),
    valued("--bundle-uri", UNSAFE, "downloads a bundle from a URI"),
    operands=_clone,
)
INIT = program(
    "init",
    flags("-q,--quiet --bare"),
    valued("-b,--initial-branch --object-format --ref-format"),
    valued("--shared", arity=OPTIONAL),
    valued("--template", UNSAFE, "copies hooks from a template directory"),
    valued("--separate-git-dir", UNSAFE, "puts the repository outside the work tree"),
    operands=_writes,
)
REV_PARSE = program(
    "rev-parse",
    flags(
        "--verify -q,--quiet --sq --not --all --symbolic "
        "--symbolic-full-name --show-toplevel --show-prefix --show-cdup --git-dir "
        "--git-common-dir --absolute-git-dir --is-inside-git-dir --is-inside-work-tree "
        "--is-bare-repository --is-shallow-repository --show-superproject-working-tree "
        "--shared-index-path --local-env-vars"
    ),
    valued("--default"),
    valued("--short --abbrev-ref --show-object-format --branches --tags --remotes", arity=OPTIONAL),
)
LS_FILES = program(
    "ls-files",
    flags(
        "-c,--cached -d,--deleted -m,--modified -o,--others -i,--ignored -s,--stage "
        "-u,--unmerged -k,--killed --directory --no-empty-directory --eol -z -t -v -f "
        "--full-name --recurse-submodules --error-unmatch --exclude-standard --sparse "
        "--deduplicate --debug"
    ),
    valued("-x,--exclude --exclude-per-directory --with-tree --format"),
    valued("--abbrev", arity=OPTIONAL),
    valued("-X,--exclude-from", Effect.READ),
    operands=_reads,
)


def _remote_listing(name: str, parsed: Parsed, found: Understanding) -> None:
    """Listing remotes is read-only; adding one or changing its URL (add, set-url, rename,
    remove …) changes where later fetches and pushes go."""
    verb = parsed.operands[0] if parsed.operands else None
    if verb is not None and (
        verb.kind is not WordKind.LITERAL or verb.value not in {"show", "get-url"}
    ):
        found.problems.append(f"{name} {verb.display} changes where git fetches and pushes")


REMOTE = program("remote", flags("-v,--verbose"), operands=_remote_listing)


def _remote(name: str, parsed: Parsed, found: Understanding) -> None:
    """The first operand is the repository (a configured remote's name or a URL, which
    sources.json judges); a local path is a directory the agent may have laid out."""
    option_uses(name, parsed, found)
    if name.endswith("pull"):
        found.write([Word(".")], "git pull (merges into the work tree)")
        for rebase in parsed.values("-r", "--rebase"):
            if rebase.kind is not WordKind.LITERAL or rebase.value in {"i", "interactive"}:
                found.problems.append(
                    f"{name} --rebase={rebase.display} opens the editor named in git config"
                )
    repository = parsed.operands[:1]
    for word in repository:
        if word.kind is WordKind.LITERAL and word.value.startswith(("/", "./", "../", "file:")):
            found.problems.append(f"{name} from the local path {word.display}")
        elif word.kind is not WordKind.LITERAL or "://" in word.value or "@" in word.value:
            found.destinations.append(word)  # a URL
        else:
            # A configured remote: its URL is in the repository's configuration, so its
            # host is only known at run time (the executor's proxy holds it to the ceiling).
            found.destinations.append(Word(word.value, WordKind.UNKNOWN))
    if not repository and not parsed.values("--repo"):
        found.destinations.append(Word("(its default remote)", WordKind.UNKNOWN))


_TRANSPORT = [
    *flags("-q,--quiet -v,--verbose --progress --no-progress -4,--ipv4 -6,--ipv6"),
    *valued("-o,--server-option"),
    *flags("--no-recurse-submodules"),
]
_SUBMODULES = "also contacts the remotes the submodules name"
_FETCHING = [
    *_TRANSPORT,
    # fetch and pull: --recurse-submodules[=yes|on-demand|no]; push's takes a value.
    *valued("--recurse-submodules", UNSAFE, _SUBMODULES, arity=OPTIONAL),
    *flags(
        "--all -a,--append --atomic --dry-run -f,--force -k,--keep -p,--prune -P,--prune-tags "
        "--no-tags -t,--tags --unshallow --update-shallow --write-fetch-head "
        "--no-write-fetch-head --set-upstream --show-forced-updates --no-show-forced-updates "
        "--auto-maintenance --no-auto-maintenance --auto-gc --no-auto-gc"
    ),
    *valued(
        "--depth --deepen --shallow-since --shallow-exclude --refmap --negotiation-tip --filter"
    ),
    *valued("--upload-pack", EXEC, "runs another program as the remote git"),
]
FETCH = program(
    "fetch", _FETCHING, flags("--multiple -n"), valued("-j,--jobs"), operands=_remote
)  # -n: --no-tags
PULL = program(
    "pull",
    _FETCHING,
    flags(
        "--ff --no-ff --ff-only --commit --no-commit --squash --no-squash --stat -n,--no-stat "
        "--no-log --no-signoff --verify --no-verify --no-rebase --autostash "
        "--no-autostash --allow-unrelated-histories --no-edit --no-gpg-sign"
    ),
    valued("-X,--strategy-option --cleanup"),
    valued("--log -r,--rebase --signoff -j,--jobs", arity=OPTIONAL),
    flags("-e,--edit", EXEC, "opens the editor named in git config"),
    valued("-s,--strategy", EXEC, "runs the merge strategy program git-merge-NAME"),
    valued("-S,--gpg-sign", EXEC, "runs the signing program named in git config", arity=OPTIONAL),
    operands=_remote,
)
PUSH = program(
    "push",
    _TRANSPORT,
    valued("--recurse-submodules", UNSAFE, _SUBMODULES),
    flags(
        "--all --branches --mirror --tags --follow-tags --no-follow-tags --atomic --no-atomic "
        "-n,--dry-run --porcelain -d,--delete -f,--force --force-if-includes "
        "--no-force-if-includes -u,--set-upstream --thin --no-thin --prune --no-verify --verify "
        "--no-signed"
    ),
    valued("--force-with-lease --signed", arity=OPTIONAL),
    valued("--push-option"),
    valued("--repo", Effect.NETWORK),
    valued("--receive-pack,--exec", EXEC, "runs another program as the remote git"),
    operands=_remote,
)
LS_REMOTE = Program(  # its -h is --heads
    ("ls-remote",),
    table(
        flags("--help -h,--heads -b,--branches -t,--tags --refs -q,--quiet --exit-code --get-url"),
        flags("--symref"),
        valued("--sort -o,--server-option"),
        valued("--upload-pack", EXEC, "runs another program as the remote git"),
    ),
    _remote,
)
BLAME = program(
    "blame",
    flags(
        "-b -l -t -s -e -p,--porcelain --line-porcelain --incremental --root --show-stats "
        "--progress -f,--show-name -n,--show-number -w --minimal -c --score-debug"
    ),
    valued("-L --date --since --ignore-rev"),
    # --contents annotates a file's text as found on disk; -S reads revisions from a file.
    valued("--contents -S --ignore-revs-file", Effect.READ),
    valued("-M -C --abbrev", arity=OPTIONAL),
    flags("--color-lines --color-by-age"),
    operands=_reads,
)
CONFIG_READ = program(
    "config",
    flags(
        "-l,--list --get --get-all --get-regexp --show-origin --show-scope --name-only "
        "--global --system --local --worktree -z,--null --includes --no-includes --bool "
        "--int --path"
    ),
    valued("--blob --type --default"),
    valued("-f,--file", Effect.READ),  # prints what it finds in any file
    flags("--add --unset --unset-all --replace-all -e,--edit", CONFIG, "changes configuration"),
    flags("--rename-section --remove-section", CONFIG, "changes configuration"),
    operands=_config_read,
)

SUBCOMMANDS = {
    name: sub
    for sub in (
        STATUS, LOG, SHOW, DIFF, ADD, COMMIT, CHECKOUT, BRANCH, CLONE, INIT, REV_PARSE,
        LS_FILES, REMOTE, BLAME, CONFIG_READ, FETCH, PULL, PUSH, LS_REMOTE,
    )
    for name in sub.names
}  # fmt: skip


def _global(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses("git", parsed, found)
    for setting in parsed.values("-c"):
        check_config(setting, found)


GIT = Program(("git",), GLOBAL, _global, SUBCOMMANDS)

PROGRAMS = (GIT,)
