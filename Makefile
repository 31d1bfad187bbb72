# The two commands of the README: `make demo` and `make test`. Both prepare the machine first.
.PHONY: demo test test-fast test-min lint typecheck pytest bench bootstrap clean generate screenshots chaos cluster

VENV := .venv
BIN := $(VENV)/bin

bootstrap:
	bash scripts/bootstrap.sh test

demo: bootstrap
	$(BIN)/python examples/demo.py

# The suite in parallel processes, each with its own PostgreSQL server: most tests wait on
# processes, servers and the network rather than on the CPU, so three share 2 cores well.
# Tests that share a module or a session fixture stay in one process (tests/tiers.py).
PROCESSES ?= 3
PARALLEL := -n $(PROCESSES) --dist loadgroup

test: bootstrap
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/async_to_sync.py --check
	$(BIN)/lint-imports
	$(BIN)/mypy src tests
	$(BIN)/pytest $(PARALLEL)

# The edit-run loop (about 6 minutes on 2 cores, lint and types included): lint, the twin check, the layer contracts
# (`lint-imports`, [tool.importlinter] in pyproject.toml), types and every test
# that needs no Spark, no browser and no slow fault run (markers in pyproject.toml), property
# tests at 10 generated examples each (tests/tiers.py). `make test` stays the whole suite.
FAST_TESTS := -m "not chaos and not spark and not browser and not slow and not wheel" \
	--hypothesis-profile=fast

test-fast: bootstrap
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/async_to_sync.py --check
	$(BIN)/lint-imports
	$(BIN)/mypy src tests
	$(BIN)/pytest -q $(PARALLEL) $(FAST_TESTS)

# The oldest versions pyproject.toml allows (constraints-min.txt), in a venv of their own, through
# the fast tier (no Spark, no wheel tier, no browser or fuzzing tools): each lower bound is a
# version that is tested. Spark's bounds are its pinned versions (tested by `make test`).
MIN_VENV := .venv-min
MIN_TESTS := tests/test_cli.py tests/test_schema.py tests/test_schema_leftovers.py \
	tests/test_uninstall.py tests/test_dsn.py tests/test_errors.py tests/cli tests/contrib \
	tests/timers --ignore=tests/timers/test_timers_webhooks.py

test-min: bootstrap
	rm -rf $(MIN_VENV)
	$(BIN)/python -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q -c constraints-min.txt -e ".[server,celery,django]" \
		pytest pytest-timeout hypothesis
	$(MIN_VENV)/bin/python -m pytest -p no:cacheprovider -m "not slow and not spark and not chaos" \
		$(MIN_TESTS)

lint: bootstrap
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/async_to_sync.py --check
	$(BIN)/lint-imports
	$(BIN)/python tools/plpgsql_check.py

# The blocking twins (sync Bus, timers store, streams client and worker) from their async sources.
generate: bootstrap
	$(BIN)/python tools/async_to_sync.py

typecheck: bootstrap
	$(BIN)/mypy src tests

# the dashboard pages in chromium, saved into docs/img (docs/operations.md shows them)
screenshots: bootstrap
	PGMBUS_SCREENSHOTS=docs/img $(BIN)/pytest -q tests/ops/test_ops_dashboard.py tests/ops/test_ops_browse_page.py \
		-k "every_page or screenshots or charts_draw"

# The fault-injection suite (minutes): every engine under every fault, a summary table at the
# end (also in .chaos/summary.md). CHAOS_DURATION_S, CHAOS_SEED and CHAOS_XMIN_HOLD_S (60) tune
# it; CHAOS_LOGS=folder keeps what the worker/dispatcher/serve processes logged.
chaos: bootstrap
	$(BIN)/pytest tests/chaos -m "chaos or not chaos" -p no:cacheprovider
	$(BIN)/pytest tests -m chaos --ignore=tests/chaos --ignore=tests/spark/test_spark_cluster.py -p no:cacheprovider
	$(MAKE) cluster

# Spark distributed (1-2 min): a standalone master and two workers on 127.0.0.1 started from
# the pyspark package, the data source and the jobs on spark://, checked against SQL.
cluster: bootstrap
	$(BIN)/pytest tests/spark/test_spark_cluster.py -m "chaos or not chaos" -p no:cacheprovider

bench: bootstrap
	$(BIN)/python -m pgmbus dev start >/dev/null
	$(BIN)/python -m bench insert_copy

clean:
	rm -rf $(VENV) $(MIN_VENV) .pytest_cache .mypy_cache .ruff_cache .grimp_cache .import_linter_cache
