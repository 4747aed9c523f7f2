# The two commands a newcomer needs are `make demo` and `make test`; both set up what they need first.
# Two PySpark lines are supported: PYSPARK (the default line, in .venv) and PYSPARK_OTHER (in its own venv);
# `make test` runs the whole suite on the first and OTHER_LINE_TESTS' Spark tests on the second. Swap them with
# `make test PYSPARK=4.1.4 PYSPARK_OTHER=3.5.9`.
# `make test` also runs CONNECT_LINE_TESTS on a Spark Connect server (MT_TEST_SPARK_CONNECT=1: no JVM in the tests or
# the kernels; the server runs from VENV_CONNECT's PySpark 4, with Iceberg and the catalogs on it).
# `make help` lists every target. Tiers for contributors: test-quick (no JVM) < test-spark (one PySpark line, no
# kernels, cluster, browser or long rounds) < test (everything, both lines: the README's command and CI's).
.PHONY: help setup setup-test setup-other demo test test-other test-reference test-connect test-quick test-spark spark-connect-start \
	spark-connect-stop test-airflow lint docs bench bench-smoke fuzz-soak cluster-start \
	cluster-stop
.DEFAULT_GOAL := help

PYSPARK ?= 3.5.9
PYSPARK_OTHER ?= 4.1.4
# The first line installs the newest pyiceberg the pin allows; the second line (and the Connect line on its venv)
# the oldest supported, so `make test` runs both.
PYICEBERG_OTHER ?= 0.10.0
VENV_OTHER ?= .venv-pyspark-$(PYSPARK_OTHER)
# The second line runs what depends on the PySpark version: every incremental strategy and the in-process path
# against Spark (4.x has ANSI on by default), engine interop, and the integration tests whose answers or plans
# depend on Spark's semantics. The notebooks, the grammar and the catalog's own tests run on the first line (the
# Spark Connect line runs two notebooks on PySpark 4); measured, this keeps `make test` inside CI's time.
OTHER_LINE_TESTS ?= tests/incremental tests/interop tests/integration/test_session_settings.py \
	tests/integration/test_lifecycle.py tests/integration/test_recommendations.py tests/integration/test_start_mode.py \
	tests/integration/test_format_v3_tables.py tests/integration/test_materialized_view_spec.py
# Of those, only the tests that start Spark (marker `spark`): the others (query analysis, plans, the in-process gate's
# decisions, the fuzzer's oracle) run no Spark, so the first line's run of them is the same run.
OTHER_LINE_ARGS ?= -m spark $(OTHER_LINE_TESTS)
# The second line runs the differential tests with 2 rounds (the first runs their defaults) to keep the suite short.
OTHER_LINE_ENV ?= MT_DIFFERENTIAL_ROUNDS=2
# `make test` runs the second line as two pytest processes: these modules of it (about a third of its time) at the
# end of the waiting chain, the rest after the main line, so that the two chains end about together.
OTHER_LINE_WAITING ?= tests/incremental/test_change_contract.py tests/incremental/test_in_process_fuzz.py \
	tests/incremental/test_adaptive.py
# The Spark Connect line needs PySpark 4 (its wheel ships the server): whichever of the two lines is 4.x.
VENV_CONNECT ?= $(if $(filter 4.%,$(PYSPARK)),.venv,$(VENV_OTHER))
CONNECT_LINE_TESTS ?= tests/spark_connect tests/security/test_connect_server.py tests/integration/test_lifecycle.py tests/integration/test_session_settings.py tests/interop \
	tests/incremental/test_exactly_once.py tests/incremental/test_sum_overflow.py tests/incremental/test_unlistable_slices.py \
	"tests/incremental/test_replace_rows.py::test_touched_slices_are_replaced_in_place_with_the_state_in_the_same_snapshot[merge-on-read]" \
	"tests/expectations/test_expectations_spark.py::test_a_bad_batch_is_held_off_main_for_every_reader_and_published_once_fixed" \
	"tests/expectations/test_expectations_spark.py::test_drop_row_keeps_the_filtered_query_and_a_held_refresh_is_published_on_purpose" \
	tests/manager/test_manager_held.py examples/01_quickstart.ipynb examples/03_incremental.ipynb
# Only what runs on Spark (a test without Spark has no Connect mode to differ in; the first line runs it).
CONNECT_LINE_ARGS ?= -m spark $(CONNECT_LINE_TESTS)

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/' | expand -t 28

setup:  ## .venv with the default PySpark line, Java, the Iceberg runtime (what the demo needs)
	bash scripts/setup.sh --pyspark $(PYSPARK)

setup-test:  ## setup plus what the tests need (Chromium, PostgreSQL, the test jars)
	bash scripts/setup.sh --test --pyspark $(PYSPARK)

setup-other:  ## the second PySpark line in its own virtualenv
	bash scripts/setup.sh --test --connect --venv $(VENV_OTHER) --pyspark $(PYSPARK_OTHER) --pyiceberg $(PYICEBERG_OTHER)

demo: setup  ## runs examples/01_quickstart.ipynb headless on the embedded defaults
	.venv/bin/python -m mt_magic demo

# The jobs contract's cancel tests run in a process of its own. After test_merge_on_read's v2 refreshes in the same
# SparkContext, and once in CI alone, the cancelled query ran to its end: Spark cancels only the jobs running when
# asked, and the query's main job started after a quick first job had ended. SparkJobs.cancel now asks again until
# the run ends (test_a_job_the_group_submits_after_the_cancel_is_stopped_too); the isolation stays until make test
# has shown the pair green side by side several times.
ISOLATED_TESTS ?= tests/spark_connect/test_jobs_contract.py
# Each pytest run is a line of the timing table `make test` ends with (scripts/test_line.py records its tests,
# passed, wall time, CPU, JVMs and kernels started, and its junit xml with every test's time, in TIMES;
# scripts/test_times.py prints the table and where each line's time went). Every line runs even when one fails;
# the table is printed, then `make test` fails if any line did.
TIMES ?= .test-times
RUN_LINE = MT_TEST_TIMES=$(TIMES) .venv/bin/python scripts/test_line.py
TIMING_TABLE = MT_TEST_TIMES=$(TIMES) .venv/bin/python scripts/test_times.py
# `make test` runs two processes side by side, each a chain of lines: the first line's tests that mostly wait (the
# kernels and notebooks, the browser, Airflow, the standalone cluster: JVMs and servers starting, freshness
# intervals, schedulers), then the Connect line, the reference-catalog line, the isolated tests and the second
# PySpark line's OTHER_LINE_WAITING (line other-waiting), beside the first line's other tests (main), then the rest
# of the second PySpark line (other). Each chain keeps about one of the 2 cores busy (CPU over wall, 0.8-1.1 in
# the timing table), so the split is by wall time: before it, main + other (1,399 + 619 s) was the whole run's
# length while the waiting chain ended at 1,555 s (fresh clone at 34ee97e). Every pytest process has its own
# MT_MAGIC_HOME (conftest.py), catalog servers, Spark
# session or Connect server and free ports. The waiting chain's output is printed as each of its lines ends.
# `make test SIDE_BY_SIDE=0` runs the lines one after another.
SIDE_BY_SIDE ?= 1
WAITING_TIERS ?= kernel or browser or airflow or cluster
# The waiting line's Spark drivers live a minute or less (a kernel's, a notebook's, a runner's, an Airflow task's):
# Java's quick compiler alone halves their CPU (docs/contributing.md). The lines whose one JVM lives long keep the
# default compilers, which their hot code needs.
SHORT_JVM_OPTS ?= -XX:TieredStopAtLevel=1
MAIN_LINE_ARGS ?= $(addprefix --ignore=,$(ISOLATED_TESTS))
test: setup-test setup-other lint docs  ## everything, both PySpark lines (CI runs this); ends with the timing table
	rm -rf $(TIMES); status=0; side=; \
	waiting() { \
	  s=0; \
	  SPARK_SUBMIT_OPTS="$(SHORT_JVM_OPTS)" $(RUN_LINE) main-waiting --log -- .venv/bin/python -m pytest -m "$(WAITING_TIERS)" $(MAIN_LINE_ARGS) || s=1; \
	  MT_TEST_SPARK_CONNECT=1 $(RUN_LINE) connect --log -- $(VENV_CONNECT)/bin/python -m pytest $(CONNECT_LINE_ARGS) || s=1; \
	  MT_TEST_CATALOG=reference $(RUN_LINE) reference --log -- .venv/bin/python -m pytest tests/reference_line -q || s=1; \
	  $(RUN_LINE) isolated --log -- .venv/bin/python -m pytest $(ISOLATED_TESTS) || s=1; \
	  $(OTHER_LINE_ENV) $(RUN_LINE) other-waiting --log -- $(VENV_OTHER)/bin/python -m pytest -m spark $(OTHER_LINE_WAITING) || s=1; \
	  return $$s; \
	}; \
	if [ "$(SIDE_BY_SIDE)" = 1 ]; then waiting & side=$$!; else waiting || status=1; fi; \
	$(RUN_LINE) main -- .venv/bin/python -m pytest -m "not ($(WAITING_TIERS))" $(MAIN_LINE_ARGS) || status=1; \
	$(OTHER_LINE_ENV) $(RUN_LINE) other -- $(VENV_OTHER)/bin/python -m pytest $(OTHER_LINE_ARGS) \
	  $(addprefix --ignore=,$(OTHER_LINE_WAITING)) || status=1; \
	if [ -n "$$side" ]; then wait $$side || status=1; fi; \
	$(TIMING_TABLE); exit $$status

test-connect: setup-other  ## the Spark Connect line's share of `make test` (a real Connect server on loopback)
	MT_TEST_SPARK_CONNECT=1 $(RUN_LINE) connect -- $(VENV_CONNECT)/bin/python -m pytest $(CONNECT_LINE_ARGS) \
	; status=$$?; $(TIMING_TABLE) connect; exit $$status

test-other: setup-other  ## the second line's share of `make test`
	$(OTHER_LINE_ENV) $(RUN_LINE) other -- $(VENV_OTHER)/bin/python -m pytest $(OTHER_LINE_ARGS) \
	; status=$$?; $(TIMING_TABLE) other; exit $$status

# The second catalog line: the integration tests on Iceberg's reference REST server (tests/reference_line).
test-reference: setup-test  ## materialized tables on Iceberg's reference REST catalog server; in `make test`
	MT_TEST_CATALOG=reference $(RUN_LINE) reference -- .venv/bin/python -m pytest tests/reference_line -q \
	; status=$$?; $(TIMING_TABLE) reference; exit $$status

# No JVM: the grammar, query analysis, the manager on a fake clock, the widgets, the catalog server.
test-quick: setup-test  ## no JVM, under 2 minutes
	$(RUN_LINE) quick -- .venv/bin/python -m pytest tests -q -m "not spark and not browser and not slow and not kernel and not cluster" \
	; status=$$?; $(TIMING_TABLE) quick; exit $$status

# The default line with a real Spark, without kernels, the cluster, the browser, Airflow, slow kits; 2 differential
# rounds. Two pytest processes (pytest-xdist), each module whole in one of them with its own Spark, catalog server and
# MT_MAGIC_HOME: about half of the line's time is spent waiting on Spark and the catalog, so two share 2 cores well.
TEST_SPARK_PROCESSES ?= 2
test-spark: setup-test  ## one PySpark line, no kernels/cluster/browser/Airflow, short differential rounds
	MT_DIFFERENTIAL_ROUNDS=2 $(RUN_LINE) spark -- .venv/bin/python -m pytest tests -q \
	-n $(TEST_SPARK_PROCESSES) --dist loadfile \
	-m "not browser and not slow and not kernel and not cluster and not airflow" \
	; status=$$?; $(TIMING_TABLE) spark; exit $$status

# A real Airflow 3 (its own virtualenv, started by the tests on loopback) running the tables' refreshes; in `make test`.
test-airflow: setup-test  ## the refresh workflows on a real Airflow (tests/airflow)
	$(RUN_LINE) airflow -- .venv/bin/python -m pytest tests/airflow tests/scheduling -q \
	; status=$$?; $(TIMING_TABLE) airflow; exit $$status

# The streaming comparison end to end at a tiny size (four Spark JVMs; not in `make test`).
bench-smoke: setup-test  ## benchmarks/bench_streaming.py at a tiny size, every contender equal to Spark
	.venv/bin/python -m pytest benchmarks/test_bench_streaming.py -q

# The in-process path against Spark, long: `make fuzz-soak SEED=7 CASES=10000 SHARDS=3
# [FUZZ_PYTHON=.venv-pyspark-4.1.4/bin/python]`; SHARDS processes share the seed's batches (scripts/fuzz_soak.py).
SEED ?= 1
CASES ?= 10000
SHARDS ?= 1
FUZZ_PYTHON ?= .venv/bin/python
fuzz-soak: setup-test  ## the differential fuzzer of the in-process path, CASES refreshes compared with Spark
	.venv/bin/python scripts/fuzz_soak.py --seed $(SEED) --cases $(CASES) --shards $(SHARDS) --python $(FUZZ_PYTHON)

# Style, the layer contracts of ARCHITECTURE.md (import-linter) and types (mypy); part of `make test`.
lint: setup-test  ## ruff, the layer contracts (import-linter) and mypy; part of make test
	.venv/bin/ruff check mt_magic tests benchmarks
	.venv/bin/ruff format --check mt_magic tests benchmarks
	.venv/bin/lint-imports
	.venv/bin/mypy

# The reference pages (docs/, mkdocs.yml) in strict mode: a broken link, anchor or image fails; about a second.
docs: setup-test  ## builds docs/ with MkDocs (strict: a broken link fails); part of make test
	.venv/bin/mkdocs build --strict --quiet

# A Spark standalone master and two workers on 127.0.0.1, from the installed PySpark (see README).
cluster-start: setup  ## a Spark standalone master and two workers on 127.0.0.1
	.venv/bin/python -m mt_magic.runtime.spark.cluster start --workers 2

cluster-stop:  ## stops them
	.venv/bin/python -m mt_magic.runtime.spark.cluster stop

# A Spark Connect server on sc://127.0.0.1:15002 from the installed PySpark 4, Iceberg and the catalog on it (README).
spark-connect-start: setup-other  ## a Spark Connect server on 127.0.0.1:15002 (the catalog mt on the server)
	$(VENV_CONNECT)/bin/python -m mt_magic.runtime.spark.connect_server start

spark-connect-stop:  ## stops it
	$(VENV_CONNECT)/bin/python -m mt_magic.runtime.spark.connect_server stop
