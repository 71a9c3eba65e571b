"""Production settings: no defaults for secrets, HTTPS-only cookies, JSON logs."""

from config.settings.base import *  # noqa: F403
from config.settings.base import LOGGING
from contextsvc.env import (
    ConfigError,
    check_public_url,
    env_bool,
    env_int,
    env_list,
    env_str,
)

DEBUG = False
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
    raise ConfigError("DJANGO_SECRET_KEY must be at least 50 characters of random text")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS")
CS_SANDBOX_IMAGE = env_str("CS_SANDBOX_IMAGE")
# E-mails and webhook messages link to the dashboard: its address must be known.
CS_PUBLIC_URL = check_public_url("CS_PUBLIC_URL", env_str("CS_PUBLIC_URL"))

# TLS ends at the ingress; it tells us the original scheme in X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("CS_SECURE_SSL_REDIRECT", True)
# Kubelet probes and Prometheus scrape the pod over plain HTTP; a redirect would fail them.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("CS_HSTS_SECONDS", 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CS_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("CS_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

LOGGING["handlers"]["console"]["formatter"] = env_str("CS_LOG_FORMAT", "json")  # type: ignore[index]
