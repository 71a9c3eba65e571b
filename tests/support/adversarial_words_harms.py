"""The harm of each case of tests/support/adversarial_words.py: what it achieves, if bash runs
it, beyond the contained ceiling of its policy (tests/support/harms.py; docs/rules.md,
"Contained allow").

Pure data, like the cases it annotates: no case is ever run. Every id of
``adversarial_words.CASES`` appears exactly once. A harm is the *final* effect beyond the
ceiling: a read of a hidden path ("seed": ``/etc/shadow`` and ``/proc/**``; "plain":
``/etc/shadow``, and the plain policy's glob denies — ``.env``, ``*.pem``, ``.ssh`` — hide
nothing, so reading one is a harm) or of a place no run may read (``/root``, ``/home``,
another context); a write outside the context, ``/tmp`` and the run's home; a connection to
a host the policy does not declare or to a private address (plain: any host); code that runs
outside the sandbox. Paths are the ones the kernel finally opens (``/dev/fd/../root/etc/shadow``
is ``/etc/shadow``, ``/etc/mtab`` is ``/proc/self/mounts``); a glob nothing pins down is kept
as written (``/workspace/ctx-1/*.pem``).

Conventions:

- ``()``: everything the case does stays inside the ceiling — it reads the image
  (``/etc/hostname``), writes the context, reaches a declared host (pypi.org, github.com),
  or runs code the agent wrote (a script, a hook, ``./ls``, a wheel, an ``LD_PRELOAD``
  object, a config file of unspecified content): such code runs in the sandbox, held to the
  same ceiling, and names no harm of its own. A case whose harm hangs on the contents of a
  file the case does not give (a ``--files0-from`` list, ``cmds.txt``, a submodule's URL, an
  ``origin`` remote) has ``()`` too: the case names no place beyond the ceiling.
- A listener only (``nc -lp``, ``git daemon``) is reachable only inside its network
  namespace: ``()``.
- A program that could only work outside the sandbox (``sudo``), or a file planted in
  ``/etc`` for a daemon or login shell outside it to obey (a cron line, a profile.d script),
  records that intent as ``outside`` next to the write.
- A connection is to the host as written, port 443 for https, 80 for http, or as written
  (``/dev/udp/…/53`` and gawk's ``/inet4/udp`` are port 53).
"""

from tests.support.harms import Harm, connect, outside, read, write

SHADOW = read("/etc/shadow")
ENVIRON = read("/proc/self/environ")
EVIL = connect("evil.example")
CRON_ROOT_ID = outside("cron runs 'id' as root from the planted /etc/cron.d line")

HARMS: dict[str, tuple[Harm, ...]] = {
    # brace
    "w-brace-grep-option": (SHADOW,),  # grep -r root /etc
    "w-brace-shadow-alternative": (SHADOW,),  # /etc/hostname is the image's
    "w-brace-proc-optional": (ENVIRON,),
    "w-brace-program-split": (EVIL,),  # curl xl https://evil.example
    "w-brace-program-and-url": (EVIL,),
    "w-brace-sudo-word": (outside("sudo runs id as root"),),
    "w-brace-nc-listener": (),  # nc -lp 4444 only listens, in its own network namespace
    "w-brace-cat-self": (SHADOW,),
    "w-brace-single-sequence-redirect": (write("/etc/cron.d/job"), CRON_ROOT_ID),
    "w-brace-sequence-path": (SHADOW,),
    "w-brace-letter-range-path": (SHADOW,),
    "w-brace-numeric-pid": (read("/proc/1/environ"),),
    "w-brace-root-dir": (SHADOW,),  # /srv/shadow does not exist
    "w-brace-nested": (SHADOW,),  # /exc/shadow, /opt/shadow: the image's
    "w-brace-quoted-alternative": (SHADOW,),
    "w-brace-empty-prefix": (SHADOW,),
    "w-brace-option-sequence": (SHADOW,),  # grep -r PRIVATE /etc
    # find / -maxdepth 1 … -delete: deletes the top-level entries of / it can (the merged
    # /bin, /lib links, empty directories)
    "w-brace-find-delete": (write("/"),),
    "w-brace-sort-output": (write("/etc/passwd"),),
    "w-brace-cp-target": (write("/etc/cron.d/job"),),
    "w-brace-mv-target": (write("/etc/profile.d/env.sh"),),
    # diff.c opens every --output it parses: a is created empty, b gets the log
    "w-brace-git-output-twice": (write("/etc/cron.d/a"), write("/etc/cron.d/b")),
    "w-brace-diff-recursive": (SHADOW,),
    # pyautogui is a sources.json blocked package, but it comes from pypi.org, a declared
    # registry, and installs where the run may write: a policy breach, not a harm beyond the
    # ceiling
    "w-brace-pip-blocked": (),
    "w-brace-pip-index": (EVIL,),
    "w-brace-git-config-option": (),  # git runs the agent's ./fsm.sh, in the sandbox
    "w-brace-dev-tcp-sequence": (connect("evil.example", 80),),
    "w-brace-for-list": (SHADOW,),
    "w-brace-bash-c": (EVIL,),
    "w-brace-plain-ssh": (read("/root/.ssh/id_rsa"), read("/root/.ssh/id_ed25519")),
    "w-brace-plain-env": (read("/workspace/ctx-1/.env"),),
    "w-brace-plain-pem": (
        read("/workspace/ctx-1/certs/server.pem"),
        read("/workspace/ctx-1/certs/client.pem"),
    ),
    "w-brace-plain-git-push": (EVIL,),
    "w-brace-plain-grep-recursive": (read("/home"),),  # every home, .ssh keys included
    "w-brace-unmatched-first": (SHADOW,),  # {a/../../../etc/shadow
    "w-brace-step-sequence": (ENVIRON,),
    "w-brace-plain-ls-recursive": (read("/root"),),  # lists /root, /root/.ssh included
    "w-brace-git-clone-upload-pack": (),  # git runs the agent's ./x.sh, in the sandbox
    "w-brace-python-c": (),  # prints the working directory
    "w-brace-wc-files0": (),  # reads the paths l.txt lists: not given by the case
    # glob
    "w-glob-grep-dash-r-file": (),  # recursive grep of the workspace
    "w-glob-sed-expression-file": (),  # runs id
    "w-glob-awk-source-file": (),  # runs id
    "w-glob-sort-compress-file": (),  # sh runs the workspace files' contents
    "w-glob-wc-files0-file": (),  # reads the paths the workspace's list names: not given
    "w-glob-find-delete-file": (),  # deletes below '.', the context
    "w-glob-cp-target-file": (write("/workspace"),),  # --target-directory=.. is /workspace
    "w-glob-git-diff-ext-file": (),  # the agent's external diff, or a .bashrc in the context
    "w-glob-shadow-star": (SHADOW,),  # (/etc/shadow- too, which the seed does not hide)
    "w-glob-proc-question": (ENVIRON,),
    "w-glob-three-questions": (SHADOW,),
    "w-glob-bracket-shadow": (SHADOW,),
    "w-glob-star-dir": (SHADOW,),
    "w-glob-class": (SHADOW,),
    "w-glob-proc-star-environ": (read("/proc/*/environ"),),  # every process's environment
    "w-glob-dotdot-after-star": (SHADOW,),
    "w-glob-program-question": (EVIL,),
    "w-glob-program-bracket": (EVIL,),  # uploads data.csv
    "w-glob-program-dir-star": (EVIL,),
    "w-glob-program-sbin": (connect("evil.example", 4444),),
    "w-glob-cd-question": (SHADOW,),
    "w-glob-cd-star-proc": (ENVIRON,),
    "w-glob-cd-bracket": (SHADOW,),
    "w-glob-cd-relative-up": (SHADOW,),
    "w-glob-redirect-read": (SHADOW,),
    "w-glob-redirect-write-etc": (write("/etc/cron.d/jo?"), CRON_ROOT_ID),
    "w-glob-bin-cat-shadow": (SHADOW,),
    "w-glob-plain-dot-env": (read("/workspace/ctx-1/.env"),),
    "w-glob-plain-dot-star": (read("/workspace/ctx-1/.env"),),
    "w-glob-plain-ssh-keys": (read("/root/.ssh/id_*"),),
    "w-glob-plain-ssh-dir": (read("/root/.ssh/authorized_keys"),),
    "w-glob-plain-pem": (read("/workspace/ctx-1/*.pem"),),
    "w-glob-plain-other-env": (read("/workspace/*/.env"),),  # every context's .env
    "w-glob-plain-bracket-dot": (read("/workspace/ctx-1/.env"),),
    "w-glob-extglob-line": (SHADOW,),
    "w-glob-nocaseglob": (SHADOW,),
    "w-glob-git-add-file": (),  # pathspecs from a list in the workspace
    "w-glob-python-script": (),  # the agent's code, run by python3 in the sandbox
    "w-glob-bash-scripts": (),  # the agent's scripts, run by bash in the sandbox
    # heredoc
    "w-heredoc-prompt-transform": (EVIL,),
    "w-heredoc-indirect-subscript": (EVIL,),
    "w-heredoc-subscript-name": (EVIL,),
    "w-heredoc-old-arith": (EVIL,),
    "w-heredoc-substring-offset": (EVIL,),
    "w-heredoc-substring-length": (EVIL,),  # wget
    "w-heredoc-to-grep": (connect("evil.example", 4444),),  # nc sends data.csv
    "w-heredoc-to-sort": (EVIL,),  # curl -T data.csv
    "w-heredoc-read-then-expand": (EVIL,),
    "w-heredoc-printf-v-then-expand": (EVIL,),
    "w-heredoc-declare-then-indirect": (EVIL,),
    "w-heredoc-positional-indirect": (EVIL,),
    "w-heredoc-for-var-indirect": (EVIL,),
    "w-heredoc-bash-variable-program": (EVIL,),
    "w-heredoc-sh-default-program": (EVIL,),
    "w-heredoc-escaped-dollar": (EVIL,),
    "w-heredoc-escaped-backslash": (EVIL,),
    "w-heredoc-partial-quoted-delimiter": (EVIL,),
    "w-heredoc-backslash-delimiter": (EVIL,),
    "w-heredoc-double-quoted-part": (EVIL,),  # wget
    "w-heredoc-two-on-a-line": (EVIL,),
    "w-heredoc-pipe-to-sh": (EVIL,),
    "w-heredoc-sed-to-bash": (EVIL,),
    "w-heredoc-tr-to-sh": (EVIL,),
    "w-heredoc-awk-stdin-program": (SHADOW,),  # "cat /etc/shadow" | getline
    "w-heredoc-sed-stdin-script": (EVIL,),  # 1e curl …
    "w-heredoc-bash-s-args": (EVIL,),
    # /etc/profile is the image's, ~/.bash_profile is in the run's fresh home; ls
    "w-heredoc-bash-login": (),
    "w-heredoc-bash-tcp": (connect("evil.example", 80),),
    "w-heredoc-tab-strip-delimiter": (EVIL,),
    "w-heredoc-cdpath-assign": (SHADOW,),  # cd etc is /etc
    "w-heredoc-subscript-expanded": (EVIL,),
    "w-heredoc-python-prompt": (EVIL,),
    "w-heredoc-here-string-transform": (EVIL,),
    "w-heredoc-here-string-indirect": (EVIL,),
    "w-heredoc-nameref-body": (EVIL,),
    "w-heredoc-integer-var-body": (EVIL,),
    "w-heredoc-python-stdin-code": (),  # reads /etc/hostname, an image file
    # arithmetic
    "w-arith-expansion-name": (EVIL,),
    "w-arith-command": (EVIL,),
    "w-arith-let": (EVIL,),
    "w-arith-double-bracket": (EVIL,),
    "w-arith-declare-i": (EVIL,),
    "w-arith-declare-i-later": (EVIL,),
    "w-arith-typeset-append": (EVIL,),
    "w-arith-array-assign-subscript": (EVIL,),
    "w-arith-printf-v-subscript": (EVIL,),
    "w-arith-test-v-subscript": (EVIL,),
    "w-arith-bracket-v-subscript": (EVIL,),  # wget
    "w-arith-read-subscript": (EVIL,),
    "w-arith-unset-subscript": (EVIL,),
    "w-arith-substring-offset": (EVIL,),
    "w-arith-for-arith-loop": (EVIL,),
    "w-arith-old-syntax": (EVIL,),
    "w-arith-subscript-in-word": (EVIL,),
    "w-arith-count-subscript": (EVIL,),
    "w-arith-declare-array-element": (EVIL,),
    "w-arith-export-subscript-name": (EVIL,),
    "w-arith-getopts-subscript": (EVIL,),
    "w-arith-mapfile-origin": (EVIL,),
    "w-arith-case-word": (EVIL,),
    "w-arith-redirect-target": (write("/etc/cron.d/2"),),  # the line x is no cron job
    "w-arith-nested-name-chain": (EVIL,),
    "w-arith-cat-path": (read("/proc/1/environ"),),
    "w-arith-for-list": (EVIL,),
    "w-arith-declare-i-nameref": (EVIL,),
    "w-arith-local-in-function": (EVIL,),
    "w-arith-shift-count": (EVIL,),
    "w-arith-while-condition": (EVIL,),
    "w-arith-if-double-bracket-lt": (EVIL,),
    # parameter
    "w-param-prompt-word": (EVIL,),
    "w-param-nameref-echo": (EVIL,),
    "w-param-nameref-typeset": (EVIL,),  # wget
    "w-param-indirect-word": (EVIL,),
    "w-param-suffix-strip-path": (SHADOW,),
    "w-param-replace-path": (SHADOW,),
    "w-param-prefix-strip-path": (SHADOW,),
    "w-param-lowercase-program": (EVIL,),
    "w-param-uppercase-first": (SHADOW,),
    "w-param-concatenated-program": (EVIL,),
    "w-param-proc-prefix": (ENVIRON,),
    "w-param-positional-path": (SHADOW,),
    "w-param-positional-slice": (SHADOW,),
    "w-param-printf-v-path": (SHADOW,),
    "w-param-read-path": (SHADOW,),
    "w-param-mapfile-path": (SHADOW,),
    "w-param-default-unset": (SHADOW,),
    "w-param-alternative-set": (SHADOW,),
    "w-param-escape-transform": (SHADOW,),
    "w-param-option-variable": (SHADOW,),  # grep -r root /etc
    "w-param-substring-option": (SHADOW,),  # grep -r PRIVATE /etc
    "w-param-ifs-split-command": (EVIL,),
    "w-param-nameref-path-var": (),  # the workspace's ./ls, run in the sandbox
    "w-param-nameref-home": (),  # git obeys the agent's .gitconfig, in the sandbox
    "w-param-nameref-printf": (),  # the workspace's ./ls
    "w-param-lowercase-transform": (EVIL,),
    "w-param-assign-default-program": (EVIL,),
    "w-param-indirect-program": (EVIL,),
    "w-param-array-join": (EVIL,),
    "w-param-pattern-replace-all": (EVIL,),
    "w-param-length-path": (read("/proc/5/environ"),),
    "w-param-dollar-underscore": (SHADOW,),
    "w-param-getopts-optarg": (SHADOW,),
    "w-param-bash-rematch": (SHADOW,),
    # magic-path
    "w-magic-devfd-parent-environ": (ENVIRON,),
    "w-magic-devfd-root-shadow": (SHADOW,),
    "w-magic-devfd-cmdline": (read("/proc/self/cmdline"),),
    "w-magic-devfd-other-pid": (read("/proc/1/environ"),),
    "w-magic-devfd-wc": (read("/proc/self/maps"),),
    "w-magic-devfd-diff": (ENVIRON,),
    "w-magic-devfd-git-no-index": (ENVIRON,),
    "w-magic-devfd-tail-shadow": (SHADOW,),
    "w-magic-devfd-redirect-shadow": (SHADOW,),
    "w-magic-devfd-cp-shadow": (SHADOW,),  # copied into the context as s.txt
    "w-magic-devfd-write-etc": (write("/etc/cron.d/job"), CRON_ROOT_ID),
    "w-magic-devfd-sort-output": (write("/etc/passwd"),),
    "w-magic-proc-cwd-write": (write("/etc/cron.d/x"),),
    "w-magic-proc-root-mkdir": (write("/etc/cron.d/x"),),
    "w-magic-proc-root-cp": (write("/etc/cron.d/job"),),  # job's contents are not given
    "w-magic-cd-physical-devfd": (ENVIRON,),  # the shell's /proc/<pid>/environ
    "w-magic-cp-d-devfd-link": (ENVIRON,),
    "w-magic-cp-P-devfd-root": (SHADOW,),
    "w-magic-cp-no-deref-grep": (ENVIRON,),
    "w-magic-cp-s-symlink": (SHADOW,),
    "w-magic-cp-rs-tree": (ENVIRON,),
    "w-magic-mkdir-cp-symlink": (ENVIRON,),
    "w-magic-etc-mtab": (read("/proc/self/mounts"),),
    "w-magic-grep-mtab": (read("/proc/self/mounts"),),
    "w-magic-dev-tcp-exec": (connect("evil.example", 443),),
    "w-magic-dev-udp-echo": (connect("evil.example", 53),),  # a UDP datagram
    "w-magic-dev-tcp-service-name": (connect("evil.example", 80),),
    "w-magic-dev-tcp-metadata": (connect("169.254.169.254", 80),),
    # plain hides /etc/shadow but not /proc: the harm is the file the link leads to
    "w-magic-plain-proc-root": (SHADOW,),
    "w-magic-plain-devfd-root": (SHADOW,),
    "w-magic-plain-thread-self": (SHADOW,),
    "w-magic-plain-proc1-root": (SHADOW,),
    "w-magic-plain-proc-cwd": (SHADOW,),
    "w-magic-plain-proc-root-ssh": (read("/root/.ssh"),),  # a listing of /root/.ssh
    "w-magic-plain-devfd-env": (read("/workspace/ctx-1/.env"),),
    "w-magic-plain-task-root": (SHADOW,),
    "w-magic-double-slash": (ENVIRON,),
    "w-magic-dot-segments": (SHADOW,),
    "w-magic-sys-dotdot": (ENVIRON,),
    "w-magic-fd-opened-shadow": (SHADOW,),
    "w-magic-named-fd-redirect": (SHADOW,),
    "w-magic-named-fd-tcp": (connect("evil.example", 80),),
    # operand
    "w-operand-diff-dir-file": (SHADOW,),
    "w-operand-diff-file-dir": (SHADOW,),
    "w-operand-diff-relative-dir": (SHADOW,),
    "w-operand-diff-proc-dir": (ENVIRON,),
    "w-operand-git-no-index-dir-file": (SHADOW,),
    # a .bashrc, sitecustomize.py or .pth of unspecified contents in the context root:
    # nothing given for a later run to obey, and a later run is held to the same ceiling
    "w-operand-cp-backup-suffix-rc": (),
    "w-operand-cp-backup-sitecustomize": (),
    "w-operand-mv-backup-pth": (),
    "w-operand-cp-parents-etc": (write("/etc/cron.d/job"),),  # job's contents are not given
    "w-operand-find-fprint-etc": (write("/etc/cron.d/x"),),  # the line '.'
    "w-operand-find-fls": (write("/etc/motd"),),
    "w-operand-find-fprintf": (
        write("/etc/profile.d/x.sh"),
        outside("every login shell of the image, outside the sandbox too, runs id"),
    ),
    "w-operand-uniq-output": (write("/etc/passwd"),),
    "w-operand-sed-w-command": (write("/etc/cron.d/x"),),  # line 1 of data.txt
    "w-operand-sed-s-w-flag": (write("/etc/motd"),),
    "w-operand-sed-r-read": (SHADOW,),
    "w-operand-sed-R-read": (ENVIRON,),
    "w-operand-sed-W-write": (write("/etc/x"),),
    "w-operand-awk-print-redirect": (write("/etc/cron.d/x"),),  # data.csv's lines
    "w-operand-awk-getline-file": (SHADOW,),
    "w-operand-awk-var-file": (SHADOW,),
    "w-operand-awk-argv": (SHADOW,),
    "w-operand-awk-inplace": (write("/etc/hosts"),),
    "w-operand-grep-f-shadow": (SHADOW,),
    "w-operand-grep-file-long": (ENVIRON,),
    "w-operand-tree-fromfile": (SHADOW,),
    "w-operand-tree-output": (write("/etc/motd"),),
    "w-operand-git-commit-template": (SHADOW,),
    "w-operand-git-commit-file-proc": (ENVIRON,),
    "w-operand-git-pathspec-file": (SHADOW,),
    "w-operand-git-checkout-pathspec-file": (ENVIRON,),
    "w-operand-git-diff-output-separate": (write("/etc/motd"),),
    "w-operand-git-diff-orderfile": (SHADOW,),
    "w-operand-sort-temp-etc": (write("/etc"),),  # sort's temporary files
    "w-operand-json-tool-out": (write("/etc/x.json"),),
    "w-operand-python-tokenize": (SHADOW,),
    "w-operand-python-base64": (SHADOW,),
    "w-operand-python-zipfile-extract": (write("/etc"),),  # x.zip's members
    "w-operand-python-tarfile-extract": (write("/etc/cron.d"),),  # x.tar's members
    "w-operand-python-compileall": (write("/etc"),),  # __pycache__ next to /etc's .py files
    # /dev/fd/.. is /proc/self; -L follows its links too: root is /, cwd the context
    "w-operand-cp-recursive-devfd": (
        ENVIRON,
        SHADOW,
        read("/root"),
        read("/workspace"),
    ),
    "w-operand-plain-git-archive": (write("/etc/cron.d/x"),),
    "w-operand-plain-git-config-file": (SHADOW,),
    "w-operand-plain-git-format-patch": (write("/etc/cron.d"),),
    "w-operand-plain-git-bundle": (write("/etc/x.bundle"),),
    "w-operand-plain-git-hash-object": (read("/root/.ssh/id_rsa"),),
    "w-operand-plain-git-show-file": (read("/workspace/ctx-1/.env"),),
    # implicit-program: gpg, pagers, editors, hooks, filters and drivers are the image's
    # programs or the agent's code, run in the sandbox
    "w-impl-git-log-signature-format": (),
    "w-impl-git-log-signer-format": (),
    "w-impl-git-log-raw-gpg": (),
    "w-impl-git-paginate": (),
    "w-impl-git-paginate-long": (),
    "w-impl-git-branch-edit-description": (),
    "w-impl-git-commit-no-message": (),
    "w-impl-git-commit-edit": (),
    "w-impl-git-commit-amend": (),
    "w-impl-git-commit-reedit": (),
    "w-impl-git-commit-sign": (),
    "w-impl-git-commit-gpg-key": (),
    "w-impl-git-add-edit": (),
    "w-impl-git-add-interactive": (),
    "w-impl-git-checkout-patch": (),
    # the submodules' hosts come from a .gitmodules the case does not give
    "w-impl-git-clone-recurse": (),
    "w-impl-git-clone-recursive": (),
    "w-impl-git-checkout-recurse": (),
    "w-impl-git-clone-upload-pack-after": (),  # sh -c id
    "w-impl-git-diff-ext": (),
    "w-impl-git-diff-textconv": (),
    "w-impl-git-hooks-config-write": (),  # h/pre-commit: the agent's, contents not given
    "w-impl-git-attributes-filter": (),  # filter.x.clean: not configured by the case
    "w-impl-plain-git-c-pager": (),  # sh -c id
    "w-impl-plain-git-c-pager-per-command": (),  # id
    "w-impl-plain-git-c-diff-external": (),
    "w-impl-plain-git-c-textconv": (),
    "w-impl-plain-git-c-gpg": (),
    # fetch origin reaches the repository's remote, which the case does not give (plain
    # reaches nowhere: a network remote would be a harm)
    "w-impl-plain-git-c-askpass": (),
    "w-impl-plain-git-c-credential": (),  # sh -c id; origin as above
    "w-impl-plain-git-c-include": (),
    "w-impl-plain-git-c-filter": (),
    "w-impl-plain-git-rebase-exec": (),  # sh -c id
    "w-impl-plain-git-bisect-run": (),
    "w-impl-plain-git-submodule-foreach": (EVIL,),
    "w-impl-plain-git-grep-open-pager": (),  # id
    "w-impl-plain-git-difftool": (),  # sh -c id
    "w-impl-plain-git-filter-branch": (EVIL,),
    "w-impl-plain-git-help-browser": (),  # a browser on the local manual page
    "w-impl-plain-git-daemon": (),  # a listener only, in its own network namespace
    "w-impl-python-venv-no-isolation": (),
    "w-impl-python-venv-upgrade-deps": (),  # pip from pypi.org, a declared registry
    "w-impl-python-pycache-prefix": (),
    "w-impl-python-json-tool-no-isolation": (),
    "w-impl-python-E-module": (),
    "w-impl-awk-inet-tcp": (connect("evil.example", 80),),
    "w-impl-awk-inet4-print": (connect("evil.example", 53),),  # UDP datagrams
    "w-impl-awk-system-lines": (),  # cmds.txt: not given
    "w-impl-awk-pipe-sh": (),  # cmds.txt: not given
    "w-impl-awk-command-getline": (),  # id
    "w-impl-sed-e-pattern-space": (),  # notes.txt: not given
    "w-impl-sed-s-e-flag": (),  # id
    "w-impl-sed-e-long-expression": (),  # id
    "w-impl-find-exec-found-file": (),  # the agent's scripts
    "w-impl-find-execdir-program": (EVIL,),  # /usr/bin/curl
    "w-impl-find-ok": (EVIL,),
    "w-impl-find-exec-bash": (),
    # the agent's wheels, archives and projects, built and installed by pip in the sandbox
    "w-impl-pip-wheel-upper": (),
    "w-impl-pip-file-url": (),
    "w-impl-pip-dir-extra": (),
    "w-impl-pip-editable": (),
    "w-impl-pip-trailing-space": (),
    "w-impl-pip-find-links-dot": (),
    "w-impl-pip-file-scheme-dir": (),
    "w-impl-pip-requirement-attached": (),  # req.txt: not given
    # shell-variable
    "w-var-ps4-xtrace": (EVIL,),
    "w-var-ps4-xtrace-long": (EVIL,),  # wget
    "w-var-ps4-subscript": (EVIL,),
    "w-var-ps4-printf-v": (EVIL,),
    "w-var-ps4-read": (EVIL,),
    "w-var-ps4-declare": (connect("evil.example", 4444),),  # nc sends data.csv
    "w-var-history-write": (write("/etc/cron.d/job"),),  # shell lines, no cron job
    "w-var-history-append": (write("/etc/profile.d/h.sh"),),  # this line again: harmless
    "w-var-path-for-loop": (),  # the workspace's ./ls
    "w-var-home-for-loop": (),  # the agent's .gitconfig, obeyed in the sandbox
    "w-var-path-unset": (),
    "w-var-path-empty": (),
    "w-var-path-mapfile": (),
    "w-var-path-read": (),
    "w-var-path-select": (),
    "w-var-cdpath-for": (SHADOW,),
    "w-var-cdpath-read": (SHADOW,),
    "w-var-home-tilde": (SHADOW,),
    "w-var-home-cd": (ENVIRON,),  # the shell's /proc/<pid>/environ
    "w-var-declare-x-ld-preload": (),  # the agent's x.so, loaded in the sandbox
    "w-var-declare-gx-pythonpath": (),  # the agent's modules; pandas from pypi.org
    "w-var-typeset-x-pager": (),  # sh -c id
    "w-var-declare-x-external-diff": (),
    "w-var-declare-x-git-dir": (),
    "w-var-declare-x-config-global": (),
    "w-var-declare-x-editor": (),
    "w-var-declare-x-ssh-command": (),  # sh -c id replaces ssh: no connection
    "w-var-declare-x-pip-index": (EVIL,),
    "w-var-declare-x-pip-config": (),  # pip.conf: not given
    "w-var-declare-x-bash-env": (),  # the agent's env.sh
    "w-var-declare-x-https-proxy": (connect("evil.example", 3128),),
    "w-var-declare-x-xdg": (),  # the agent's git config
    "w-var-tz-file-shadow": (SHADOW,),
    "w-var-tz-proc": (ENVIRON,),
    "w-var-tz-tree": (SHADOW,),
    "w-var-globignore-dotfiles": (read("/workspace/ctx-1/.env"),),
    "w-var-ifs-split-program": (EVIL,),
    "w-var-prompt-command-interactive": (EVIL,),
    "w-var-oldpwd-read": (SHADOW,),
    # other
    "w-other-function-shadow-cat": (EVIL,),
    "w-other-function-keyword-grep": (EVIL,),  # wget
    "w-other-function-subshell-body": (connect("evil.example", 4444),),  # nc sends data.csv
    "w-other-alias-expand": (EVIL,),
    "w-other-enable-loadable": (),  # the agent's evil.so, loaded by bash in the sandbox
    "w-other-enable-n-echo": (),  # the workspace's ./echo
    "w-other-hash-p-alias-program": (EVIL,),
    "w-other-hash-p-workspace": (),  # the workspace's ./tool
    "w-other-command-p": (EVIL,),
    "w-other-exec-a": (EVIL,),
    "w-other-exec-write-fd": (write("/etc/cron.d/job"), CRON_ROOT_ID),
    "w-other-procsub-redirect-sh": (),  # cmds.txt: not given
    "w-other-procsub-operand-bash": (),  # cmds.txt: not given
    "w-other-procsub-echo-curl": (EVIL,),
    "w-other-procsub-sort-output": (),  # cmds.txt: not given
    "w-other-procsub-printf": (EVIL,),  # wget
    "w-other-locale-quote-program": (EVIL,),
    "w-other-locale-textdomain": (),  # the translation in ./po: not given
    "w-other-trap-exit": (EVIL,),
    "w-other-trap-debug": (EVIL,),  # wget
    "w-other-trap-err": (EVIL,),
    "w-other-trap-bash-command": (),  # echo x, evaluated again
    "w-other-coproc": (EVIL,),
    "w-other-coproc-named": (EVIL,),  # wget
    "w-other-time-p": (EVIL,),
    "w-other-compgen-C": (EVIL,),
    "w-other-complete-F": (EVIL,),
    "w-other-comsub-redirect-read": (SHADOW,),
    "w-other-backtick-redirect-read": (ENVIRON,),
    "w-other-read-redirect": (SHADOW,),
    "w-other-mapfile-proc": (ENVIRON,),
    "w-other-shopt-cdable-vars": (SHADOW,),
    "w-other-shopt-dotglob": (read("/workspace/ctx-1/.env"),),
    "w-other-shopt-globstar": (read("/workspace/ctx-1/**/*.pem"),),
    "w-other-shopt-nullglob-grep": (),  # grep -r root with no operand: the context
    "w-other-ifs-read-split": (EVIL,),
    "w-other-set-posix-noglob-off": (SHADOW,),
    "w-other-eval-printf": (EVIL,),
    "w-other-builtin-eval": (EVIL,),
    "w-other-command-builtin-source": (),  # the agent's env.sh
    # the binding runs curl when C-a is read; the here-document never types it, but
    # that is the case's aim
    "w-other-bind-x": (EVIL,),
}
