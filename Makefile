# The two commands a new machine needs: `make run` and `make test`.
PY := .venv/bin/python
DEVENV := $(PY) -m devenv

.PHONY: install run agent test test-compat check static-checks controlplane lint layers format typecheck \
        migrations-check pytest \
        services services-down cluster cluster-down bench lock clean image image-smoke

install:
	@scripts/bootstrap

## The service in the foreground: PostgreSQL, Redis, the local cluster, web, worker, beat, watcher.
run: install
	@$(DEVENV) stack

## make run, and seed 001's reference agent (python-data-agent, A2A) beside it on :8100.
agent: install
	@$(DEVENV) stack --agent

## Everything CI runs: lint, types, migrations in step, and the whole test suite. The
## control plane is built (the first time) while the rest is installed and checked.
test:
	@$(MAKE) --no-print-directory -j2 controlplane static-checks
	@$(DEVENV) run -- $(MAKE) --no-print-directory pytest

check: lint layers typecheck migrations-check pytest

static-checks: install
	+@$(DEVENV) run -- $(MAKE) --no-print-directory lint layers typecheck migrations-check

# The pinned control-plane binaries (testenv/build.py: the standard library and
# Go only, so it needs no virtualenv).
controlplane:
	@python3 testenv/build.py

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

## The import contracts of docs/architecture.md (.importlinter).
layers:
	.venv/bin/lint-imports --no-cache

format:
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

typecheck:
	$(PY) -m mypy .

migrations-check:
	$(PY) manage.py makemigrations --check --dry-run

# Builds the control-plane binaries first if `make test` has not (once per version; the
# first build takes about 6 minutes on 2 cores with Go's module cache filled, 15 without),
# so that no test's timeout includes the build. --ds wins over a
# DJANGO_SETTINGS_MODULE left exported in the caller's shell (pytest-django prefers the
# environment to pyproject.toml), which would otherwise run the suite on local settings.
#
# Two test processes (pytest-xdist, a file at a time), each with a control plane, a test
# database and a Redis database of its own. The browser tests run after the rest, in a
# run of their own (Playwright's event loop stays in a process's test thread, where the
# rest need none); last, by themselves, the few tests that restart the PostgreSQL both
# processes share (marked serial). A run that selects none of a part is not a failure.
TEST_PROCESSES ?= 2
PYTEST := $(PY) -m pytest --ds=config.settings.test
PARALLEL := -n $(TEST_PROCESSES) --dist loadfile
pytest:
	$(PY) -m testenv build
	$(PYTEST) $(PARALLEL) -m "not serial and not browser" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PYTEST) $(PARALLEL) -m "browser and not serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PYTEST) -m serial $(PYTEST_ARGS) || [ $$? -eq 5 ]

## The cluster and controller tests against another agent-sandbox release than the one
## `make test` runs (docs/testing.md, "agent-sandbox releases"), e.g.
## AGENT_SANDBOX_VERSION=v0.5.6 make test-compat
COMPAT_TESTS := allocations contexts workspaces profiles contextsvc/kube \
	contextsvc/core/tests/test_capabilities.py tests/cluster
test-compat: install
	@test -n "$(AGENT_SANDBOX_VERSION)" || { echo "name the release: AGENT_SANDBOX_VERSION=v0.5.6 make test-compat" >&2; exit 2; }
	@python3 testenv/build.py
	@$(DEVENV) run -- $(PYTEST) $(PARALLEL) -m "cluster and not browser and not serial" $(COMPAT_TESTS) $(PYTEST_ARGS)

services: install
	@$(DEVENV) up

services-down:
	@$(DEVENV) down

cluster: install
	@$(PY) -m testenv up

cluster-down:
	@$(PY) -m testenv down

## The service's and the agent's images as OCI archives under .local/images/, built
## without Docker from their Dockerfiles (devenv/image.py; docs/operations.md, "Images").
image: install
	@$(PY) -m devenv.image build

## Both images built, then started as their Pods run them against the local PostgreSQL,
## Redis and control plane (tests/deploy/test_images_built.py; make test runs it too).
image-smoke: install
	@python3 testenv/build.py
	@$(DEVENV) run -- $(PYTEST) tests/deploy/test_images_built.py $(PYTEST_ARGS)

## Benchmarks: rewrite their sections of docs/performance.md (not part of the test suite).
bench: install
	@$(DEVENV) run -- $(PY) -m bench $(BENCH)

## Re-resolve requirements.lock (dev) and requirements.runtime.lock (the container image,
## pinned to the same versions) from pyproject.toml. Needs network to PyPI.
lock: install
	$(PY) -m piptools compile --quiet --extra dev --extra agent --generate-hashes --strip-extras \
	  --allow-unsafe --no-emit-find-links -o requirements.lock pyproject.toml
	$(PY) -m piptools compile --quiet --generate-hashes --strip-extras \
	  --allow-unsafe --no-emit-find-links -c requirements.lock \
	  -o requirements.runtime.lock pyproject.toml

clean:
	@$(DEVENV) down
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache staticfiles
