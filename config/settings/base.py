"""Settings shared by every environment, read from environment variables.

Every variable is listed with its default and meaning in the README's configuration table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from allocations import queue as allocations_queue
from approvals import queue as approvals_queue
from contextsvc.core import queue as core_queue
from contextsvc.env import (
    ConfigError,
    check_public_url,
    check_redis_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_optional,
    env_str,
    parse_database_url,
)
from usage import queue as usage_queue
from workspaces import queue as workspaces_queue

BASE_DIR = Path(__file__).resolve().parent.parent.parent
LOCAL_DIR = BASE_DIR / ".local"

DEBUG = False

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "channels",
    "contextsvc.core",
    "allocations",
    "contexts",
    "workspaces",
    "profiles",
    "approvals",
    "usage",
    "frontend",
]

MIDDLEWARE = [
    "contextsvc.infra.middleware.reject_nul_in_url",
    "contextsvc.infra.middleware.DatabaseUnavailable",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "frontend.access.role_context",
            ],
        },
    },
]

# --- Data stores -------------------------------------------------------------------------

_db = parse_database_url("DATABASE_URL", env_str("DATABASE_URL"))
DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        "ENGINE": "contextsvc.db",
        "NAME": _db.name,
        "USER": _db.user,
        "PASSWORD": _db.password,
        "HOST": _db.host,
        "PORT": _db.port,
        "CONN_MAX_AGE": env_int("CS_DB_CONN_MAX_AGE", 0, minimum=0),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"connect_timeout": env_int("CS_DB_CONNECT_TIMEOUT", 5, minimum=1)},
        "TEST": {"NAME": f"test_{_db.name}"},
    }
}
if env_bool("CS_DB_POOL", False):
    # Under ASGI every request may run on a different thread, so persistent connections
    # are not reused; a psycopg pool is what keeps connection set-up off the request path.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # Django has the pool check each connection as it leaves the pool (CONN_HEALTH_CHECKS):
    # after a PostgreSQL restart the dead ones are replaced instead of failing requests.
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": env_int("CS_DB_POOL_MAX_SIZE", 20, minimum=1),
        # How long a request waits for a connection before it is a 503 (Retry-After).
        "timeout": env_int("CS_DB_POOL_TIMEOUT", 3, minimum=1),
    }
# Watcher instances share the pools among this many shards, one active instance each
# (allocations/watcher.py); 1: one active watcher, the others standing by.
CS_WATCHER_SHARDS = env_int("CS_WATCHER_SHARDS", 1, minimum=1)
# The web process keeps API tokens it has looked up until PostgreSQL says any changed
# (contextsvc/infra/tokencache.py); other processes ask every time.
CS_TOKEN_CACHE = env_bool("CS_TOKEN_CACHE", env_bool("CS_DB_POOL", False))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = check_redis_url("REDIS_URL", env_str("REDIS_URL"))

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [REDIS_URL],
            "prefix": env_str("CS_CHANNEL_PREFIX", "cs-channels"),
            "capacity": 1000,
            "expiry": 60,
        },
    }
}

# How often beat recomputes every allocation from list calls (the watcher's safety net).
CS_RESYNC_INTERVAL_SECONDS = env_int("CS_RESYNC_INTERVAL_SECONDS", 30, minimum=1)
# Profiles' warm pools: demand is the claims asked for over the window; a pool shrinks only
# once its last change is older than the cool-down.
CS_WARM_POOL_WINDOW_SECONDS = env_int("CS_WARM_POOL_WINDOW_SECONDS", 600, minimum=1)
CS_WARM_POOL_COOLDOWN_SECONDS = env_int("CS_WARM_POOL_COOLDOWN_SECONDS", 300, minimum=0)

# Retention: released allocations (with their timelines) and finished approval requests
# (with their runs, sign-offs and deliveries) older than this many days are removed by beat,
# CS_RETENTION_BATCH rows per transaction; 0 keeps them for ever. The audit log is kept.
CS_RETENTION_RELEASED_DAYS = env_int("CS_RETENTION_RELEASED_DAYS", 30, minimum=0)
CS_RETENTION_APPROVALS_DAYS = env_int("CS_RETENTION_APPROVALS_DAYS", 90, minimum=0)
CS_RETENTION_BATCH = env_int("CS_RETENTION_BATCH", 500, minimum=1)

# How long an operation waits for a human before it expires (= denied), and the most an
# agent may ask for.
CS_APPROVAL_DEADLINE_SECONDS = env_int("CS_APPROVAL_DEADLINE_SECONDS", 300, minimum=1)
CS_APPROVAL_MAX_DEADLINE_SECONDS = env_int("CS_APPROVAL_MAX_DEADLINE_SECONDS", 3600, minimum=1)

# Approvals that reach people (approvals/notifications.py). Links in e-mails and webhook
# messages start with the dashboard's public address.
CS_PUBLIC_URL = check_public_url("CS_PUBLIC_URL", env_str("CS_PUBLIC_URL", "http://127.0.0.1:8000"))
# E-mail to approvers is on once a mail server is named (Django's SMTP backend).
CS_EMAIL_HOST = env_optional("CS_EMAIL_HOST")
EMAIL_HOST = CS_EMAIL_HOST or "localhost"
EMAIL_PORT = env_int("CS_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("CS_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = env_str("CS_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = env_bool("CS_EMAIL_STARTTLS", False)
EMAIL_USE_SSL = env_bool("CS_EMAIL_SSL", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("CS_EMAIL_FROM", "Context Service <context-service@localhost>")
# A message that fails is tried again after CS_NOTIFY_RETRY_SECONDS, then three times as
# long each time, CS_NOTIFY_MAX_ATTEMPTS times in all; each try waits at most
# CS_NOTIFY_TIMEOUT_SECONDS for the other end.
CS_NOTIFY_MAX_ATTEMPTS = env_int("CS_NOTIFY_MAX_ATTEMPTS", 6, minimum=1)
CS_NOTIFY_RETRY_SECONDS = env_float("CS_NOTIFY_RETRY_SECONDS", 10.0, minimum=0.1)
CS_NOTIFY_TIMEOUT_SECONDS = env_float("CS_NOTIFY_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# Webhooks go to public addresses only, unless the address is in one of these networks
# (approvals/egress.py): e.g. "10.20.0.0/16" for a chat bridge inside the cluster.
CS_NOTIFY_ALLOW_NETWORKS = env_networks("CS_NOTIFY_ALLOW_NETWORKS", [])

# Agent workspaces (seed 001): one RWX PVC per agent type per namespace.
CS_WORKSPACE_STORAGE_CLASS = env_optional("CS_WORKSPACE_STORAGE_CLASS")
CS_WORKSPACE_INITIAL_SIZE = env_str("CS_WORKSPACE_INITIAL_SIZE", "5Gi")
CS_WORKSPACE_MAX_SIZE = env_str("CS_WORKSPACE_MAX_SIZE", "20Gi")
CS_WORKSPACE_EXPAND_AT_PERCENT = env_int("CS_WORKSPACE_EXPAND_AT_PERCENT", 80, minimum=1)
# Provisioners whose volumes grow by themselves (EFS): never patched.
CS_ELASTIC_PROVISIONERS = env_list("CS_ELASTIC_PROVISIONERS", ["efs.csi.aws.com"])
CS_CONTEXT_TTL_SECONDS = env_int("CS_CONTEXT_TTL_SECONDS", 7 * 24 * 3600, minimum=60)
CS_CLEANUP_IMAGE = env_str("CS_CLEANUP_IMAGE", "busybox:1.36")

# --- Celery ------------------------------------------------------------------------------

CELERY_BROKER_URL = REDIS_URL
# kombu's Redis transport, with acknowledgements that outlive a Redis restart (broker.py).
CELERY_BROKER_TRANSPORT = "contextsvc.broker:Transport"
CELERY_TASK_IGNORE_RESULT = True  # task outcomes are recorded in PostgreSQL, not a backend
CELERY_TASK_ACKS_LATE = True  # a worker that dies mid-task leaves the task for another
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env_str("CS_CELERY_QUEUE", "context-service")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
# Every task by its app's constant (each app's queue.py), as services queue them.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "process-heartbeat": {"task": core_queue.RECORD_HEARTBEAT, "schedule": 30.0},
    "cluster-capabilities": {"task": core_queue.REFRESH_CAPABILITIES, "schedule": 60.0},
    "approvals-expire": {"task": approvals_queue.EXPIRE_DUE, "schedule": 5.0},
    # Undecided requests past their profile's escalateAfter: the escalation group is told.
    "approvals-escalate": {"task": approvals_queue.ESCALATE_DUE, "schedule": 5.0},
    # The safety net under each delivery's own retries (a worker lost with the task).
    "approvals-deliveries": {"task": approvals_queue.DELIVERIES_DUE, "schedule": 30.0},
    "workspaces-housekeeping": {"task": workspaces_queue.HOUSEKEEPING, "schedule": 60.0},
    "allocations-resync": {
        "task": allocations_queue.RESYNC,
        "schedule": float(CS_RESYNC_INTERVAL_SECONDS),
    },
    # Profiles' warm pools made, kept in step and sized from demand.
    "allocations-warm-pools": {"task": allocations_queue.WARM_POOLS, "schedule": 15.0},
    # An allocation is released within this many seconds of its expiry.
    "allocations-expire": {"task": allocations_queue.EXPIRE, "schedule": 5.0},
    # Old released allocations and finished approvals removed (CS_RETENTION_*).
    "allocations-retention": {"task": allocations_queue.RETENTION, "schedule": 3600.0},
    "approvals-retention": {"task": approvals_queue.RETENTION, "schedule": 3600.0},
    # Usage by team and profile: the current hour recomputed, ended hours closed.
    "usage-meter": {"task": usage_queue.METER, "schedule": 60.0},
}

# --- Kubernetes --------------------------------------------------------------------------

CS_NAMESPACE = env_str("CS_NAMESPACE", "serverless-harness")
CS_SANDBOX_IMAGE = env_optional("CS_SANDBOX_IMAGE")
CS_SANDBOX_SERVICE_ACCOUNT = env_optional("CS_SANDBOX_SERVICE_ACCOUNT")
CS_KUBE_TIMEOUT_SECONDS = env_float("CS_KUBE_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# Namespaces callers may put allocations in (the v1 ``namespace`` extension field); ``*``
# allows any. The watcher watches just these, or the whole cluster for ``*``.
CS_ALLOWED_NAMESPACES = env_list("CS_ALLOWED_NAMESPACES", [CS_NAMESPACE])
# PVCs this service manages that an allocation may still mount through workspace.claimName
# as the caller asks ("namespace/name", an admin's decision; docs/api.md, "claimName").
CS_CLAIMS_ALLOWED = env_list("CS_CLAIMS_ALLOWED", [])
# How long transient Kubernetes errors are retried before an allocation is failed.
CS_RECONCILE_DEADLINE_SECONDS = env_int("CS_RECONCILE_DEADLINE_SECONDS", 300, minimum=1)
# A PVC Pending longer than this gets what the PV controller says of it (its events) as
# its allocation's reason and message; past the reconcile deadline, the allocation fails.
CS_VOLUME_PENDING_GRACE_SECONDS = env_int("CS_VOLUME_PENDING_GRACE_SECONDS", 30, minimum=0)
# Provisioning longer than this is flagged as stuck on the dashboard.
CS_STUCK_AFTER_SECONDS = env_int("CS_STUCK_AFTER_SECONDS", 300, minimum=1)

# --- Web ---------------------------------------------------------------------------------

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
# Requests one web process handles at once (threads running Django's handler).
CS_WEB_THREADS = env_int("CS_WEB_THREADS", 16, minimum=1)
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024  # the v1 contract rejects bodies over 1 MiB

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
# Pinned front-end assets, installed from frontend/package-lock.json (scripts/bootstrap, or
# the image's assets stage): served as static files, never fetched from elsewhere.
STATICFILES_DIRS = [
    ("vendor/chart.js", BASE_DIR / "frontend" / "node_modules" / "chart.js" / "dist"),
]
STATIC_ROOT: Path | None = Path(env_str("CS_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "contextsvc.core.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["contextsvc.core.auth.ScopeRequired"],
    # A team's request rate (Team.max_requests_per_minute), counted in PostgreSQL.
    "DEFAULT_THROTTLE_CLASSES": ["contextsvc.core.ratelimit.TeamRateThrottle"],
    "EXCEPTION_HANDLER": "contextsvc.core.api.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Context Service API",
    "DESCRIPTION": (
        "Allocates agent sandboxes and workspaces on Kubernetes (the v1 contract) and holds "
        "agent operations for human approval."
    ),
    "VERSION": "1",
    # 3.1: its schemas are plain JSON Schema (null is a type), which validators, schemathesis
    # and client generators read without OpenAPI 3.0's "nullable" dialect.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "ResourceStatusEnum": ["provisioning", "ready", "failed"],
        "ApprovalStatusEnum": ["pending", "approved", "denied", "expired", "cancelled"],
        "OperationKindEnum": ["shell", "file", "network"],
        "ShellKindEnum": ["shell"],
        "FileKindEnum": ["file"],
        "NetworkKindEnum": ["network"],
        "PodIsolationEnum": ["default", "gvisor", "kata"],
        "ExecutorIsolationEnum": ["namespaces", "none"],
        # A run report's sandbox.memory and sandbox.processes: how a limit was held.
        "LimitEnforcementEnum": ["cgroup", "rlimit"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "contextsvc.infra.openapi.postprocess",
    ],
}

# --- Logging -----------------------------------------------------------------------------

LOG_LEVEL = env_str("CS_LOG_LEVEL", "INFO").upper()
LOG_FORMAT = env_str("CS_LOG_FORMAT", "text")
if LOG_FORMAT not in {"text", "json"}:
    raise ConfigError(f"CS_LOG_FORMAT must be 'text' or 'json', got {LOG_FORMAT!r}")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "contextsvc.logging.JSONFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # The Kubernetes client logs every request body at DEBUG; keep it quieter.
        "kubernetes": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
    },
}
