"""Django's PostgreSQL backend, with a pool that replaces every dead connection as soon as
it meets one.

After PostgreSQL restarts, every idle connection in a web process's pool is dead.
psycopg_pool checks a connection as it leaves the pool (CONN_HEALTH_CHECKS), but when the
check fails it backs off 1 s, then 2 s, before it checks the next one, so with three or
more dead connections a request waits out ``CS_DB_POOL_TIMEOUT`` and is a 503, and so does
the next one, until the dead connections are used up. Here the first failed check sends
the whole pool through ``ConnectionPool.check()`` (dead connections are discarded and
replaced in the background), so the request's next attempt gets a fresh connection.

Django builds its pool inline with its own ``check`` argument, so this backend builds the
pool itself, exactly as Django does but for that argument.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg import Connection
from psycopg_pool import ConnectionPool


class DatabaseWrapper(base.DatabaseWrapper):
    def _pools(self) -> dict[str, ConnectionPool]:
        # Django's own registry (a class attribute), which close_pool() also uses.
        pools: dict[str, ConnectionPool] = self._connection_pools  # type: ignore[attr-defined]
        return pools

    @property
    def pool(self) -> ConnectionPool | None:
        pool_options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not pool_options:
            return None
        pools = self._pools()
        if self.alias not in pools:
            if self.settings_dict["CONN_MAX_AGE"] != 0:
                # Django refuses this combination; keep its error message.
                return super().pool
            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True
            options = {} if pool_options is True else pool_options
            pool = ConnectionPool(
                kwargs=connect_kwargs,
                open=False,
                configure=self._configure_connection,  # type: ignore[attr-defined]
                check=self._check_or_heal if self.settings_dict["CONN_HEALTH_CHECKS"] else None,
                **options,
            )
            pools.setdefault(self.alias, pool)
        return pools[self.alias]

    def _check_or_heal(self, conn: Connection[Any]) -> None:
        try:
            ConnectionPool.check_connection(conn)
        except Exception:
            pool = self._pools().get(self.alias)
            if pool is not None:
                pool.check()
            raise
