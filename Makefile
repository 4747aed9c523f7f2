# The two commands a newcomer needs are `make demo` and `make test`; both set up what they need first.
.PHONY: setup setup-test demo test test-fast lint bench

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

demo: setup
	.venv/bin/python -m mt_magic demo

test: setup-test lint
	.venv/bin/python -m pytest

# Everything that needs no Spark, no browser and no notebook kernel: the grammar, the manager on a fake clock,
# the widgets, the catalog server. Under a minute.
test-fast: setup-test
	.venv/bin/python -m pytest tests -m "not spark and not browser" -q

# Style, the layer contracts of ARCHITECTURE.md (import-linter) and types (mypy); part of `make test`.
lint: setup-test
	.venv/bin/ruff check mt_magic tests benchmarks
	.venv/bin/lint-imports
	.venv/bin/mypy
