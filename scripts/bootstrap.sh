#!/usr/bin/env bash
# Prepare this machine for pgmbus: PostgreSQL server binaries (Debian's packages when none are
# present) and a virtualenv in .venv with pgmbus installed in editable mode with its extras, at
# the exact versions of constraints.txt (pyproject.toml holds the ranges).
# Idempotent: a second run only checks. Usage: scripts/bootstrap.sh [extras, default "test"]
# "bench" also installs the Debian packages the benchmarks measure against (PgQ, Redis, RabbitMQ).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-test}"
# shellcheck source=scripts/progress.sh
. scripts/progress.sh

have_server() {
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        return 0
    fi
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

if ! have_server; then
    step 1 "no PostgreSQL server binaries found; installing Debian's postgresql (minutes)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql postgresql-contrib >/dev/null
    step_done
fi

# `pgmbus install --schedule` runs the storage upkeep from pg_cron; the embedded clusters preload
# it when Debian's postgresql-<major>-cron is installed (the tests schedule jobs with it).
# `pgmbus dev start --ha` and the failover tests run pg_auto_failover (postgresql-<major>-auto-
# failover, which brings pg_autoctl): both server add-ons come in this one step.
major="$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)"
if [ -n "$major" ] && command -v apt-get >/dev/null 2>&1 &&
    { [ ! -f "/usr/lib/postgresql/$major/lib/pg_cron.so" ] ||
        [ ! -f "/usr/lib/postgresql/$major/lib/pgautofailover.so" ]; }; then
    step 2 "installing Debian's postgresql-$major-cron and -auto-failover (upkeep, HA)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    addons="postgresql-$major-cron postgresql-$major-auto-failover"
    # shellcheck disable=SC2086 # two package names, split on purpose
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $addons \
        >/dev/null 2>&1 || {
        $sudo apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $addons \
            >/dev/null 2>&1 || echo "bootstrap: could not install pg_cron/pg_auto_failover" >&2
    }
    step_done
fi

# `make lint` and the tests run plpgsql_check (tools/plpgsql_check.py) over every PL/pgSQL
# function; Debian packages it per server major. Installed with the test extras, when missing.
if [[ "$extras" == *test* ]] && [ -n "$major" ] &&
    [ ! -f "/usr/share/postgresql/$major/extension/plpgsql_check.control" ] &&
    command -v apt-get >/dev/null 2>&1; then
    step 3 "installing Debian's postgresql-$major-plpgsql-check (PL/pgSQL lint)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        "postgresql-$major-plpgsql-check" >/dev/null 2>&1 || {
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            "postgresql-$major-plpgsql-check" >/dev/null 2>&1 ||
            echo "bootstrap: could not install plpgsql_check; its test will skip" >&2
    }
    step_done
fi

# The Spark benchmarks compare with Spark's JDBC source; Debian packages its driver.
if [ ! -f /usr/share/java/postgresql.jar ] && command -v apt-get >/dev/null 2>&1; then
    step 4 "installing Debian's libpostgresql-jdbc-java (Spark JDBC baseline)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libpostgresql-jdbc-java \
        >/dev/null 2>&1 || echo "bootstrap: could not install it; the Spark JDBC baseline is off" >&2
    step_done
fi

# The dashboard tests drive Debian's chromium with Playwright (Playwright's own browser download
# cannot reach its servers here); installed with the test extras, only when missing.
if [[ "$extras" == *test* ]] && ! command -v chromium >/dev/null 2>&1 &&
    command -v apt-get >/dev/null 2>&1; then
    step 5 "installing Debian's chromium (dashboard browser tests; minutes)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null 2>&1 ||
        echo "bootstrap: could not install chromium; the dashboard browser tests will skip" >&2
    step_done
fi

# The metrics tests lint /metrics with promtool, and the chart tests start their own prometheus
# server (127.0.0.1, a temporary tsdb), both from Debian's prometheus; installed with the test
# extras, only when missing. The package's own service is not wanted: it is left stopped and,
# where policy-rc.d allows starting it, stopped again.
if [[ "$extras" == *test* ]] &&
    { ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; } &&
    command -v apt-get >/dev/null 2>&1; then
    step 6 "installing Debian's prometheus (promtool and the server, for the metrics tests)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    if DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        prometheus >/dev/null 2>&1; then
        if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
            $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
        fi
    else
        echo "bootstrap: could not install prometheus; the promtool and chart tests will skip" >&2
    fi
    step_done
fi

# The pgbench scenarios (python -m bench sql_streams) compare with PgQ; only in bench mode.
if [ "$extras" = "bench" ] && [ ! -f /usr/share/postgresql/15/extension/pgq.control ] &&
    command -v apt-get >/dev/null 2>&1; then
    step 7 "installing Debian's postgresql-15-pgq3 (PgQ, a sql_streams peer)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15-pgq3 \
        >/dev/null 2>&1 || echo "bootstrap: could not install it; PgQ rows will be skipped" >&2
    step_done
fi

# `python -m bench jobs` runs Celery on Redis and on RabbitMQ; it starts Debian's servers itself
# (private ports and data folders), so only the packages are needed; only in bench mode.
if [ "$extras" = "bench" ] && command -v apt-get >/dev/null 2>&1 &&
    { ! command -v redis-server >/dev/null 2>&1 || [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; }; then
    step 8 "installing Debian's redis-server and rabbitmq-server (bench jobs peers)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server rabbitmq-server \
        >/dev/null 2>&1 || echo "bootstrap: could not install them; skip the Celery sides" >&2
    step_done
fi

python=""
for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
        "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    echo "bootstrap: Python >= 3.11 is required" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    step 9 "creating the virtualenv .venv with $python"
    "$python" -m venv .venv
    step_done
fi
stamp=".venv/.pgmbus-installed"
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log="$(mktemp)"
    step 10 "installing pgmbus[$extras] and its dependencies into .venv (minutes on a fresh machine)"
    if ! .venv/bin/python -m pip install --progress-bar off -c constraints.txt -e ".[$extras]" \
        2>&1 | pip_progress "$log"; then
        cat "$log" >&2
        exit 1
    fi
    rm -f "$log"
    step_done
    echo "$want" >"$stamp"
fi
