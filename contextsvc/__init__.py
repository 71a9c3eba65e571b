"""Context Service's kernel: what every app stands on (HTTP errors and auth in ``core``,
the Kubernetes gateway in ``kube``, configuration from the environment, logging, the
database backend). The wiring that assembles the apps (settings, URLs, ASGI, Celery,
metrics) is ``config/`` at the top; see docs/architecture.md."""
