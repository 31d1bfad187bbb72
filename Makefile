# The two commands of the README: `make demo` and `make test`. Both prepare the machine first.
.PHONY: demo test lint typecheck pytest bench bootstrap clean chaos

VENV := .venv
BIN := $(VENV)/bin

bootstrap:
	bash scripts/bootstrap.sh test

demo: bootstrap
	$(BIN)/python examples/demo.py

test: bootstrap
	$(BIN)/ruff check .
	$(BIN)/mypy src
	$(BIN)/pytest

lint: bootstrap
	$(BIN)/ruff check .

typecheck: bootstrap
	$(BIN)/mypy src

# The fault-injection suite (minutes): every engine under every fault, a summary table at the
# end (also in .chaos/summary.md). CHAOS_DURATION_S and CHAOS_SEED tune it.
chaos: bootstrap
	$(BIN)/pytest tests/chaos -m "chaos or not chaos" -p no:cacheprovider

bench: bootstrap
	$(BIN)/python -m bench insert_copy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
