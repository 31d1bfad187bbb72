"""Which tests stay out of the fast tier (`make test-fast`), in one table.

`make test-fast` runs every test not marked ``slow``, ``spark``, ``browser`` or ``chaos``. Whole
folders are marked by their own conftest (tests/spark: ``spark``; tests/chaos: ``slow``), the
dashboard module by ``browser``, a few tests by a ``slow`` decorator; the tests below are marked
``slow`` here because each costs many seconds of processes, pgbench runs, fault runs or
generated examples (measured with ``--durations`` on 2 cores). `make test` runs them all.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

# (module, test name or "*" for every test of it, why it is slow)
SLOW: list[tuple[str, str, str]] = [
    ("tests/test_bench_sql.py", "*", "pgbench runs of every sql_* scenario"),
    ("tests/test_bench_jobs.py", "*", "both job queues' workers drained and timed, 300 jobs each"),
    ("tests/streams/test_streams_bench.py", "*", "the stream benchmark scenarios, run small"),
    (
        "tests/test_bench_held_horizon.py",
        "test_held_horizon_reports_windows_per_phase",
        "five windows per side, a scratch database each",
    ),
    ("tests/ops/test_ops_fuzz.py", "*", "the whole HTTP API fuzzed from its OpenAPI schema"),
    ("tests/exchange/test_bridge_faults.py", "*", "kill -9 of movers and of a server"),
    ("tests/test_devdb.py", "*", "embedded clusters started, killed and restarted"),
    ("tests/contrib/test_celery.py", "*", "Celery worker processes, one killed"),
    ("tests/contrib/test_django.py", "*", "manage.py processes and a worker"),
    ("tests/queues/test_queues_properties.py", "*", "property tests over generated queues"),
    (
        "tests/scaleout/test_topic_servers.py",
        "test_adding_a_server_keeps_each_keys_order_for_readers",
        "three servers, readers following a change of the map",
    ),
    (
        "tests/timers/test_timers_dispatcher.py",
        "test_two_dispatchers_never_call_the_same_attempt_twice",
        "two dispatchers under load",
    ),
    (
        "tests/timers/test_timers_claim_ahead.py",
        "test_the_claim_walks_the_due_index_and_updates_through_the_primary_key",
        "a large table of callbacks",
    ),
    (
        "tests/timers/test_timers_claim_ahead.py",
        "test_a_claim_never_locks_a_callback_it_does_not_claim",
        "claims against a churning writer for seconds",
    ),
    (
        "tests/test_sql_arguments.py",
        "test_documented_functions_give_only_typed_errors",
        "every documented SQL function called with bad arguments",
    ),
    ("tests/ops/test_ops_docs.py", "test_key_scopes_from_the_command_line", "CLI processes"),
]


def mark_slow(items: list[pytest.Item]) -> None:
    """Add ``slow`` to the items named in :data:`SLOW`."""
    named = {(module, test) for module, test, _why in SLOW}
    for item in items:
        module, _, rest = item.nodeid.partition("::")
        test = rest.split("[", 1)[0]
        if (module, "*") in named or (module, test) in named:
            item.add_marker(pytest.mark.slow)


# The fast tier's property tests (`make test-fast` passes ``--hypothesis-profile=fast``) run at
# most this many generated examples each, their own @settings count notwithstanding: enough to
# catch a broken property on every edit-run loop; `make test` (CI) runs each test's full count.
FAST_PROFILE = "fast"
FAST_EXAMPLES = 10
settings.register_profile(FAST_PROFILE, max_examples=FAST_EXAMPLES)


def fewer_examples(items: list[pytest.Item], profile: str | None) -> None:
    """Cap every property test at :data:`FAST_EXAMPLES` when ``profile`` is the fast one.

    An explicit ``@settings(max_examples=...)`` overrides a profile, so the cap is set on the
    settings Hypothesis reads when the test runs (tests/test_tiers.py checks it still takes).
    """
    if profile != FAST_PROFILE:
        return
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if isinstance(current, settings) and current.max_examples > FAST_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
                current, max_examples=FAST_EXAMPLES
            )


# Folders whose tests share one expensive session fixture: one Spark JVM, one built wheel and
# its venv, the fault runs' servers (which also must not compete with each other for the CPU).
SHARED_PROCESS = ("tests/spark/", "tests/wheel/", "tests/chaos/")


def process_group(nodeid: str) -> str:
    """The `pytest -n --dist loadgroup` group of a test: its folder for the shared-fixture
    folders above, else its module, so module-scoped fixtures are made once."""
    module = nodeid.partition("::")[0]
    for folder in SHARED_PROCESS:
        if module.startswith(folder):
            return folder
    return module


def mark_process_groups(items: list[pytest.Item]) -> None:
    """Add ``xdist_group`` (see :func:`process_group`) to every item."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(process_group(item.nodeid)))
