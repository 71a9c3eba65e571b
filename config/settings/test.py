"""Test settings: the same real PostgreSQL, Redis and Kubernetes as local, nothing faked.

There is deliberately no in-memory channel layer, no SQLite and no eager Celery here.
"""

from config.settings._localenv import load_local_defaults

load_local_defaults()

import os  # noqa: E402
import uuid  # noqa: E402
from urllib.parse import urlsplit, urlunsplit  # noqa: E402

# The suite's parallel processes (pytest-xdist's gw0, gw1, …) share the local Redis: each
# takes a database of its own (1, 2, …), so that one's live events, queue and cache never
# reach the other's processes. Their children inherit the URL, and with it the database.
if (_worker := os.environ.get("PYTEST_XDIST_WORKER")) and os.environ.get("REDIS_URL"):
    _db = 1 + int(_worker.removeprefix("gw") or 0)
    os.environ["REDIS_URL"] = urlunsplit(urlsplit(os.environ["REDIS_URL"])._replace(path=f"/{_db}"))

from config.settings.base import *  # noqa: E402, F403
from contextsvc.env import env_float, env_list, env_networks, env_str  # noqa: E402

DEBUG = False
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "django-insecure-test-only-key")
CS_SANDBOX_IMAGE = env_str("CS_SANDBOX_IMAGE", "busybox:1.36")
# Hashing cost is irrelevant to what the tests check and dominates user creation time.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Each test run gets its own queue, so a worker left over from `make run` on the same Redis
# can never take a test's task; the worker fixture passes this name to its worker.
CELERY_TASK_DEFAULT_QUEUE = env_str("CS_CELERY_QUEUE", f"cs-test-{uuid.uuid4().hex[:12]}")
# Static files are served from the apps' folders (WhiteNoise finders); collectstatic is for
# production images only.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
# Every test works in a namespace of its own, so the service may manage any namespace here.
CS_ALLOWED_NAMESPACES = env_list("CS_ALLOWED_NAMESPACES", ["*"])
# A failed notification is tried again within a second here, not ten (the retry tests wait
# for the real worker to try three times).
CS_NOTIFY_RETRY_SECONDS = env_float("CS_NOTIFY_RETRY_SECONDS", 0.5, minimum=0.1)
# The tests' webhook receivers listen on loopback (production allows no private network).
CS_NOTIFY_ALLOW_NETWORKS = env_networks("CS_NOTIFY_ALLOW_NETWORKS", ["127.0.0.0/8", "::1"])
# The test-only flush that pytest-django runs after each committing test (its docstring says
# why it takes every table's lock at once).
INSTALLED_APPS = [*INSTALLED_APPS, "tests.teardown"]  # noqa: F405
