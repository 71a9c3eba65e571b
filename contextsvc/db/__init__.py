"""Django's PostgreSQL backend with a connection pool that heals at once after a restart
(``ENGINE: contextsvc.db``)."""
