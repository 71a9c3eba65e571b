#!/bin/sh
# The image's processes, selected by the first argument.
set -eu
command="${1:-web}"
[ "$#" -gt 0 ] && shift
case "$command" in
  web)
    exec python manage.py serve --bind "0.0.0.0:${PORT:-8000}" --workers "${CS_WEB_WORKERS:-2}" "$@" ;;
  worker)
    exec celery -A config worker --loglevel "${CS_LOG_LEVEL:-INFO}" \
      --concurrency "${CS_WORKER_CONCURRENCY:-4}" --without-gossip "$@" ;;
  beat)
    exec celery -A config beat --loglevel "${CS_LOG_LEVEL:-INFO}" \
      --schedule /tmp/celerybeat-schedule "$@" ;;
  watcher)
    exec python manage.py watch "$@" ;;
  migrate)
    exec python manage.py migrate --no-input "$@" ;;
  manage)
    exec python manage.py "$@" ;;
  *)
    echo "unknown command '$command': use web, worker, beat, watcher, migrate or manage" >&2
    exit 2 ;;
esac
