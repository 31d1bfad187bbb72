"""What the Spark scenarios share: one local session with the JDBC driver, JDBC URLs."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict

JDBC_JAR = Path("/usr/share/java/postgresql.jar")


def ensure_jdbc_jar() -> Path:
    """The PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java), installed if missing."""
    if not JDBC_JAR.exists() and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "libpostgresql-jdbc-java"],
            check=True,
            capture_output=True,
            env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    if not JDBC_JAR.exists():
        raise SystemExit(f"the JDBC baseline needs {JDBC_JAR}: apt-get install "
                         "libpostgresql-jdbc-java")
    return JDBC_JAR


@cache
def session() -> Any:
    """One local[2] session for every round (JIT warm, as a long-running job would be)."""
    from pgmbus.spark.session import local_session

    spark = local_session(
        "pgmbus-bench", conf={"spark.jars": str(ensure_jdbc_jar())}
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jdbc(dsn: str) -> tuple[str, dict[str, str]]:
    """The JDBC URL and connection properties of a libpq DSN."""
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "127.0.0.1")
    if host.startswith("/"):
        host = "127.0.0.1"
    url = f"jdbc:postgresql://{host}:{params.get('port') or 5432}/{params.get('dbname')}"
    props = {"driver": "org.postgresql.Driver", "user": str(params.get("user") or "postgres")}
    if params.get("password"):
        props["password"] = str(params["password"])
    return url, props
