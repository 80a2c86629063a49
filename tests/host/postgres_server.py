"""A throwaway PostgreSQL server from the Debian binaries, for the tests and ``benchmarks/postgres.py``.

``initdb`` and ``pg_ctl`` come from ``/usr/lib/postgresql/*/bin`` (the ``postgresql``
package; ``.ci/run`` installs it when they are missing). The server lives in a temporary
folder, listens on a Unix socket in that folder only (no TCP port), and, when this process
is root, runs as the unprivileged user ``nobody`` (PostgreSQL refuses to run as root).
`PostgresServer.database()` makes a fresh database and returns its DSN.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PostgresServer", "find_binaries", "MISSING"]

MISSING = (
    "the PostgreSQL server binaries are not installed (no /usr/lib/postgresql/*/bin/initdb); "
    "install them with 'apt-get install -y postgresql' (.ci/run does)"
)
NOBODY = 65534


def find_binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/VERSION/bin`` holding ``initdb`` and ``pg_ctl``, or ``None``."""
    found = sorted(
        (Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    found = [p for p in found if (p / "pg_ctl").exists()]
    return found[-1] if found else None


class PostgresServer:
    """A running server in its own folder; `stop` ends it and removes the folder.

    ``durable=False`` (the tests) turns fsync off: the tests kill hosts, never the server.
    ``survives_crash=True`` keeps ``synchronous_commit`` on, so that a server crash
    (``restart("immediate")``) loses no acknowledged commit (an OS crash still would).
    A benchmark keeps the defaults (``durable=True``), so a commit waits for the disk.
    """

    def __init__(self, binaries: Path, *, durable: bool = False, survives_crash: bool = False) -> None:
        self.binaries = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="host-sim-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self._as_nobody = os.geteuid() == 0
        self.user = "nobody" if self._as_nobody else _current_user()
        self._names = itertools.count()
        if self._as_nobody:
            os.chown(self.folder, NOBODY, NOBODY)
        self.folder.chmod(0o755)
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8", "--no-locale")
        settings = [
            f"-c unix_socket_directories='{self.folder}'",
            "-c listen_addresses=''",
            "-c max_connections=300",
            "-c shared_buffers=128MB",
        ]
        if survives_crash and not durable:  # a commit is in the WAL (the OS's cache) when acknowledged
            settings += ["-c fsync=off"]
        elif not durable:
            settings += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._settings = " ".join(settings)
        self.start()

    # -- faults (the tests of API.md section 23: hosts outlive their database) -------------

    def start(self) -> None:
        """Start the server (again, after `halt`), waiting until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", self._settings, "-w", "-t", "60", "start")

    def halt(self, mode: str = "fast") -> None:
        """Stop the server, keeping its data (``mode``: ``fast`` or ``immediate``, a crash)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart -m MODE``: every connection is ended; back once it accepts them."""
        self.halt(mode)
        self.start()

    def terminate_backends(self, dbname: str) -> int:
        """``pg_terminate_backend`` every connection to ``dbname`` (a killed connection, the
        server up); how many."""
        return int(
            self.psql(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{dbname}' AND pid <> pg_backend_pid()) t"
            )
        )

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq key/value DSN for ``dbname`` over this server's Unix socket."""
        return f"host={self.folder} port=5432 user={self.user} dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        """The same as a ``postgresql://`` URL (what ``host-sim fsck --store`` takes)."""
        return f"postgresql://{self.user}@/{dbname}?host={self.folder}&port=5432"

    def database(self, prefix: str = "t") -> str:
        """A new empty database; returns its DSN."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run ``sql`` with psql (as the server's superuser); returns its unaligned output."""
        result = subprocess.run(
            [str(self.binaries / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.dsn(dbname), "-c", sql],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql failed on {sql!r}: {result.stderr.strip()}")
        return result.stdout.strip()

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder (the end of its life)."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        kwargs: dict[str, object] = {}
        if self._as_nobody:
            kwargs = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        result = subprocess.run(
            [str(self.binaries / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.folder,
            **kwargs,  # type: ignore[call-overload]
        )
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stderr.strip()}\n{log}")


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
