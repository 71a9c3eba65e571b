"""Private PostgreSQL and Redis instances on loopback, with data under ``.local/``.

Used only when ``DATABASE_URL`` / ``REDIS_URL`` are not set. ``up()`` starts what is not
running and reports what it started, so that a caller stops only those again.
"""

from __future__ import annotations

import glob
import hashlib
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from contextsvc.env import env_int
from devenv.system import (
    LOCAL_DIR,
    DevEnvError,
    apt_install,
    is_root,
    pid_alive,
    pid_cmdline,
    port_open,
    say,
    terminate_pid,
    wait_for_port,
    which_or_install,
)

DB_NAME = "contextsvc"
DB_USER = "contextsvc"
SERVICES_ENV = LOCAL_DIR / "services.env"
SECRETS_FILE = LOCAL_DIR / "secrets.env"


def _read_env_file(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    values = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def _write_env_file(path: Path, values: dict[str, str], header: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{key}={value}\n" for key, value in sorted(values.items()))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"# {header}\n{body}")
    tmp.chmod(0o600)
    tmp.replace(path)


def _secret(name: str) -> str:
    """A password generated once per checkout and kept in ``.local/secrets.env``."""
    stored = _read_env_file(SECRETS_FILE)
    if name not in stored:
        stored[name] = secrets.token_urlsafe(24)
        _write_env_file(SECRETS_FILE, stored, "generated passwords for the local services")
    return stored[name]


# --- PostgreSQL ----------------------------------------------------------------------------


def _pg_bindir() -> Path:
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4])
    )
    if not candidates:
        apt_install("postgresql")
        candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not candidates:
        raise DevEnvError("PostgreSQL binaries not found under /usr/lib/postgresql after install")
    return Path(candidates[-1]).parent


def _pg_home() -> Path:
    """Where the cluster's files live.

    PostgreSQL refuses to run as root, so as root it runs as the ``postgres`` user, which
    must be able to reach its data directory. When the checkout sits somewhere that user
    cannot traverse (e.g. under /root), the data goes to /var/lib/context-service and
    ``.local/postgres`` is a symlink to it.
    """
    home = LOCAL_DIR / "postgres"
    if not is_root() or home.exists():
        return home.resolve()
    LOCAL_DIR.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run(
        ["runuser", "-u", "postgres", "--", "test", "-x", str(LOCAL_DIR)], check=False
    )
    if probe.returncode == 0:
        return home
    digest = hashlib.sha256(str(LOCAL_DIR).encode()).hexdigest()[:12]
    outside = Path("/var/lib/context-service") / digest / "postgres"
    outside.mkdir(parents=True, exist_ok=True)
    home.symlink_to(outside)
    say(f"postgres cannot reach {LOCAL_DIR}; its data lives in {outside}")
    return outside


def _as_postgres(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    command = ["runuser", "-u", "postgres", "--", *args] if is_root() else args
    return subprocess.run(command, check=True, text=True, **kwargs)  # type: ignore[call-overload]


@dataclass
class Postgres:
    port: int = field(default_factory=lambda: env_int("CS_LOCAL_PG_PORT", 15432, minimum=1))
    home: Path = field(default_factory=_pg_home)

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    def pid(self) -> int | None:
        pidfile = self.data / "postmaster.pid"
        if not pidfile.exists():
            return None
        try:
            pid = int(pidfile.read_text().split()[0])
        except (ValueError, IndexError, PermissionError):
            return None
        return pid if pid_alive(pid) else None

    def running(self) -> bool:
        return self.pid() is not None and port_open(self.port)

    def url(self) -> str:
        password = _secret("POSTGRES_PASSWORD")
        return f"postgres://{DB_USER}:{password}@127.0.0.1:{self.port}/{DB_NAME}"

    def _initdb(self, bindir: Path) -> None:
        say(f"initialising PostgreSQL in {self.data}")
        self.home.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if is_root():
            shutil.chown(self.home, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        _as_postgres(
            [
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth-local=peer",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            ],
            stdout=subprocess.DEVNULL,
        )

    def start(self) -> bool:
        """Start if needed; True when this call started it."""
        if self.running():
            return False
        if port_open(self.port):
            raise DevEnvError(
                f"127.0.0.1:{self.port} is taken by another program; set DATABASE_URL to use "
                "an existing PostgreSQL, or CS_LOCAL_PG_PORT to move ours"
            )
        bindir = _pg_bindir()
        if not (self.data / "PG_VERSION").exists():
            self._initdb(bindir)
        options = " ".join(
            [
                f"-c port={self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.socket_dir}",
                "-c max_connections=300",
                # Losing the last few commits of a development database on a crash is an
                # acceptable price for tests that commit thousands of small transactions.
                "-c synchronous_commit=off",
                "-c shared_buffers=256MB",
            ]
        )
        say(f"starting PostgreSQL on 127.0.0.1:{self.port}")
        _as_postgres(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.home / "postgres.log"),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port, timeout=30, what="PostgreSQL")
        self._ensure_database()
        return True

    def _psql(self, sql: str) -> str:
        bindir = _pg_bindir()
        result = _as_postgres(
            [
                str(bindir / "psql"),
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-tAc",
                sql,
            ],
            capture_output=True,
        )
        return result.stdout.strip()

    def _ensure_database(self) -> None:
        # Names are module constants and the password is generated by us and quoted, so
        # building these statements as strings is safe.
        password = _secret("POSTGRES_PASSWORD").replace("'", "''")
        if self._psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{DB_USER}'") != "1":  # noqa: S608
            self._psql(f"CREATE ROLE {DB_USER} LOGIN CREATEDB PASSWORD '{password}'")
        else:
            self._psql(f"ALTER ROLE {DB_USER} LOGIN CREATEDB PASSWORD '{password}'")
        if self._psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'") != "1":  # noqa: S608
            self._psql(f"CREATE DATABASE {DB_NAME} OWNER {DB_USER}")

    def restart(self) -> None:
        """A fast restart (every session is ended), as after a crash or a failover."""
        _as_postgres(
            [str(_pg_bindir() / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "restart"],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port, timeout=30, what="PostgreSQL")

    def stop(self) -> None:
        if self.pid() is None:
            return
        say("stopping PostgreSQL")
        _as_postgres(
            [str(_pg_bindir() / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"],
            stdout=subprocess.DEVNULL,
        )


# --- Redis ---------------------------------------------------------------------------------


@dataclass
class Redis:
    port: int = field(default_factory=lambda: env_int("CS_LOCAL_REDIS_PORT", 16379, minimum=1))
    home: Path = LOCAL_DIR / "redis"

    @property
    def pidfile(self) -> Path:
        return self.home / "redis.pid"

    def pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        # Guard against a recycled PID: only a redis-server on our port is ours.
        if pid_alive(pid) and "redis-server" in pid_cmdline(pid):
            return pid
        return None

    def running(self) -> bool:
        return self.pid() is not None and port_open(self.port)

    def url(self) -> str:
        return f"redis://:{_secret('REDIS_PASSWORD')}@127.0.0.1:{self.port}/0"

    def start(self) -> bool:
        if self.running():
            return False
        if port_open(self.port):
            raise DevEnvError(
                f"127.0.0.1:{self.port} is taken by another program; set REDIS_URL to use an "
                "existing Redis, or CS_LOCAL_REDIS_PORT to move ours"
            )
        binary = which_or_install("redis-server", "redis-server")
        self.home.mkdir(parents=True, exist_ok=True)
        config = self.home / "redis.conf"
        config.write_text(
            "\n".join(
                [
                    "bind 127.0.0.1",
                    f"port {self.port}",
                    f"requirepass {_secret('REDIS_PASSWORD')}",
                    "protected-mode yes",
                    f"dir {self.home}",
                    'save ""',
                    "appendonly no",
                    "daemonize yes",
                    f"pidfile {self.pidfile}",
                    f"logfile {self.home / 'redis.log'}",
                    "",
                ]
            )
        )
        config.chmod(0o600)
        say(f"starting Redis on 127.0.0.1:{self.port}")
        subprocess.run([binary, str(config)], check=True)
        wait_for_port(self.port, timeout=15, what="Redis")
        return True

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        say("stopping Redis")
        terminate_pid(pid)


# --- Both ----------------------------------------------------------------------------------


@dataclass
class Started:
    postgres: bool = False
    redis: bool = False


def up() -> Started:
    """Start the private instances that the environment does not replace."""
    started = Started()
    env: dict[str, str] = {}
    if not os.environ.get("DATABASE_URL"):
        pg = Postgres()
        started.postgres = pg.start()
        env["DATABASE_URL"] = pg.url()
    if not os.environ.get("REDIS_URL"):
        redis = Redis()
        started.redis = redis.start()
        env["REDIS_URL"] = redis.url()
    previous = _read_env_file(SERVICES_ENV)
    merged = {
        **{k: v for k, v in previous.items() if k not in {"DATABASE_URL", "REDIS_URL"}},
        **env,
    }
    _write_env_file(SERVICES_ENV, merged, "written by python -m devenv; do not edit")
    return started


def down(started: Started | None = None) -> None:
    """Stop our instances: all of them, or only those a given ``up()`` started."""
    if started is None or started.redis:
        Redis().stop()
    if started is None or started.postgres:
        Postgres().stop()


def set_env_value(key: str, value: str | None) -> None:
    """Record (or forget) one more variable, such as the local cluster's KUBECONFIG."""
    values = _read_env_file(SERVICES_ENV)
    if value is None:
        values.pop(key, None)
    else:
        values[key] = value
    _write_env_file(SERVICES_ENV, values, "written by python -m devenv; do not edit")


def local_env() -> dict[str, str]:
    return _read_env_file(SERVICES_ENV)
