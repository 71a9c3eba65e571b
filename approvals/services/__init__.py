"""Writes for approval requests and grants, one module per concern (Zulip's ``actions/``):

- ``policy``: what applies to an agent type's operations (its rules, sources, grants);
- ``check``: an agent's check of an operation (a rule's decision, or a request queued
  for a human);
- ``lifecycle``: how a pending request ends, exactly once, and the agent's cancellation;
- ``decisions``: a human's approval, denial or edit (and "approve and allow similar");
- ``expiry``: requests past their deadline expire (beat's task, and the decision path);
- ``escalation``: requests undecided past their profile's ``escalateAfter``;
- ``grants``: the rules "allow similar" adds, and their revocation;
- ``runs``: what the agent's executor reports it ran.

Every change is written with its audit entry in one transaction and announced after
commit (to the dashboard and to the agent waiting on the request); the notifications it
causes are written in the same transaction and sent after it (approvals/notifications.py).
Import from the defining module: this package holds nothing itself.
"""
