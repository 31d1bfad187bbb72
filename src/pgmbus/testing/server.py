"""A PostgreSQL server for a test session: the embedded manager, or ``PGMBUS_TEST_DSN``.

``TestServer`` hands out databases: a template with the mbus schema installed once, then a fresh
copy per test (``CREATE DATABASE ... TEMPLATE``), which takes a few tens of milliseconds.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmbus import schema
from pgmbus.devdb import DevCluster


class TestServer:
    """One server for the whole test session."""

    __test__ = False  # not a pytest test class

    def __init__(self, admin_dsn: str, cluster: DevCluster | None = None) -> None:
        self.admin_dsn = admin_dsn
        self.cluster = cluster
        self.template = f"pgmbus_tpl_{uuid.uuid4().hex[:8]}"
        self._template_ready = False

    @classmethod
    def start(cls) -> TestServer:
        """Use ``PGMBUS_TEST_DSN`` when set, else start an ephemeral embedded cluster."""
        env = os.environ.get("PGMBUS_TEST_DSN")
        if env:
            return cls(env)
        home = Path(tempfile.mkdtemp(prefix="pgmbus-test-"))
        home.chmod(0o755)  # the server user must enter it when we are root
        cluster = DevCluster(home, ephemeral=True)
        cluster.start()
        return cls(cluster.dsn("postgres"), cluster)

    def stop(self) -> None:
        self.drop_database(self.template)
        if self.cluster is not None:
            home = self.cluster.home
            self.cluster.destroy()
            shutil.rmtree(home, ignore_errors=True)

    def dsn(self, dbname: str) -> str:
        """The DSN of a database on this server."""
        return make_conninfo(self.admin_dsn, dbname=dbname)

    @property
    def superuser(self) -> str:
        return str(conninfo_to_dict(self.admin_dsn).get("user") or "postgres")

    def _admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.admin_dsn, autocommit=True)

    def _ensure_template(self) -> None:
        if self._template_ready:
            return
        with self._admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.template)))
        with psycopg.connect(self.dsn(self.template)) as conn:
            schema.install(conn)
        self._template_ready = True

    def create_database(self, *, installed: bool = True) -> str:
        """Create a fresh database (with the schema unless ``installed=False``); return its name."""
        name = f"pgmbus_t_{uuid.uuid4().hex[:12]}"
        query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if installed:
            self._ensure_template()
            query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)
            )
        with self._admin() as conn:
            conn.execute(query)
        return name

    def drop_database(self, name: str) -> None:
        with self._admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
