# Metnos: `make run` starts it on its embedded defaults, `make test` runs the tests.
# Needs only Python >= 3.11 and make; everything else comes from PyPI into .venv.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install lint bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/metnos init --if-needed
	$(VENV)/bin/metnos serve

# one pytest-xdist worker per core, each with its own Prefect server (tests/support/services.py)
# (three on two cores ran ~15% faster, and missed the crash tests' 30 s bounds in one full run
# of three); worksteal: a worker that runs out takes the tail of the other's share
TEST_WORKERS ?= 2

test: $(STAMP)
	$(PY) -m tests.support.services --workers $(TEST_WORKERS) -- \
		$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check metnos flows tasks deployments tests bench
	$(VENV)/bin/mypy --strict metnos flows tasks deployments
	$(VENV)/bin/lint-imports --no-cache

bench: $(STAMP)
	-$(PY) -m tests.support.services -- $(PY) bench/turn_latency.py
	-$(PY) -m tests.support.services -- $(PY) bench/approval_roundtrip.py
	-$(PY) bench/audit_append.py
	-$(PY) bench/i18n_sweep.py
	-$(PY) bench/hot_paths.py
	-$(PY) bench/sandbox_limits.py
	-$(PY) bench/sandbox_spawn.py
	-$(PY) bench/footprint.py
	-$(PY) bench/peer_compare.py
	-$(PY) bench/tutor_eval.py
	-$(PY) -m tests.support.services -- $(PY) bench/chat_concurrency.py
	-$(PY) -m tests.support.services -- $(PY) bench/mnestoma_scale.py
	-$(PY) -m tests.support.services -- $(PY) bench/scale_out.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
