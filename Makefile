# The two commands a newcomer needs are `make demo` and `make test`; both set up what they need first.
# Two PySpark lines are supported: PYSPARK (the default line, in .venv) and PYSPARK_OTHER (in its own venv);
# `make test` runs the whole suite on the first and OTHER_LINE_TESTS on the second. Swap them with
# `make test PYSPARK=4.1.4 PYSPARK_OTHER=3.5.9`.
.PHONY: setup setup-test setup-other demo test test-other test-fast lint bench cluster-start cluster-stop

PYSPARK ?= 3.5.9
PYSPARK_OTHER ?= 4.1.4
VENV_OTHER ?= .venv-pyspark-$(PYSPARK_OTHER)
OTHER_LINE_TESTS ?= tests/integration tests/incremental tests/interop examples
# The second line runs the differential tests with 3 rounds (the first runs their defaults) to keep the suite short.
OTHER_LINE_ENV ?= MT_DIFFERENTIAL_ROUNDS=3

setup:
	bash scripts/setup.sh --pyspark $(PYSPARK)

setup-test:
	bash scripts/setup.sh --test --pyspark $(PYSPARK)

setup-other:
	bash scripts/setup.sh --test --venv $(VENV_OTHER) --pyspark $(PYSPARK_OTHER)

demo: setup
	.venv/bin/python -m mt_magic demo

test: setup-test setup-other lint
	.venv/bin/python -m pytest
	$(OTHER_LINE_ENV) $(VENV_OTHER)/bin/python -m pytest $(OTHER_LINE_TESTS)

test-other: setup-other
	$(OTHER_LINE_ENV) $(VENV_OTHER)/bin/python -m pytest $(OTHER_LINE_TESTS)

# Everything that needs no Spark, no browser, no notebook kernel and no long fuzzing: the grammar, the manager on
# a fake clock, the widgets, the catalog server. About a minute.
test-fast: setup-test
	.venv/bin/python -m pytest tests -m "not spark and not browser and not slow" -q

# Style, the layer contracts of ARCHITECTURE.md (import-linter) and types (mypy); part of `make test`.
lint: setup-test
	.venv/bin/ruff check mt_magic tests benchmarks
	.venv/bin/ruff format --check mt_magic tests benchmarks
	.venv/bin/lint-imports
	.venv/bin/mypy

# A Spark standalone master and two workers on 127.0.0.1, from the installed PySpark (see README).
cluster-start: setup
	.venv/bin/python -m mt_magic.runtime.spark.cluster start --workers 2

cluster-stop:
	.venv/bin/python -m mt_magic.runtime.spark.cluster stop
