# The two commands a newcomer needs are `make demo` and `make test`; both set up what they need first.
.PHONY: setup setup-test demo test lint bench

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

demo: setup
	.venv/bin/python -m mt_magic demo

test: setup-test
	.venv/bin/python -m pytest

lint:
	.venv/bin/ruff check mt_magic tests benchmarks
