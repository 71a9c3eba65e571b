"""The tenancy app's own periodic tasks (contextsvc/core/tasks.py), by name: beat's
schedule (config/settings/base.py) names every task from its app's constant, as each app's
queue.py does for its own."""

RECORD_HEARTBEAT = "contextsvc.core.tasks.record_heartbeat"
REFRESH_CAPABILITIES = "contextsvc.core.tasks.refresh_capabilities"
