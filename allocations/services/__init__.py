"""Writes for allocations, one module per concern (as Zulip's ``actions/``): ``create``,
``lifecycle`` (update, suspend, resume, expiry), ``release`` (and rollback), ``reconcile``
(and failure), ``observed`` (what the watcher and the resync see) and ``timeline`` (what
they all share). Every state change that matters records its timeline event and audit
entry in the same transaction, and queues work after commit (allocations/queue.py); the
tasks only hand ids to these functions. Import each name from the module that defines it:
this package exports nothing."""
