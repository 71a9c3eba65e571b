"""Project-local services for development and tests: PostgreSQL, Redis, the dev stack.

Nothing here is used in production. It exists so that ``make run`` and ``make test`` work
on a fresh Linux machine with nothing installed by hand and no Docker.
"""
