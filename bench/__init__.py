"""Benchmarks: ``python -m bench <name>`` (``make bench`` runs them all).

Each benchmark measures on this machine, in one run, and rewrites its own section of
docs/performance.md with the machine, the date and the numbers. Nothing here is a test:
the suite never asserts on time.
"""
