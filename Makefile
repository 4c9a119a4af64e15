# Sitewarden: `make run` starts the product on its embedded default, `make test` runs the whole suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements/*.txt | md5sum | cut -c1-12)
PORT ?= 8000

.PHONY: install services run test bench lint format clean

$(STAMP): requirements/base.txt requirements/local.txt requirements/production.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check -q -r requirements/local.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

# PostgreSQL and Redis for the tests and the benchmark: started only when they are not answering.
services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensure_login
	@echo "Sitewarden: http://127.0.0.1:$(PORT)/  (Ctrl-C stops the web process and the worker)"
	@trap 'kill 0' EXIT INT TERM; \
	  $(VENV)/bin/celery -A config worker --concurrency 2 --loglevel INFO --without-gossip --without-mingle & \
	  $(PY) manage.py runserver 127.0.0.1:$(PORT)

test: install services
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest

bench: install services
	$(PY) -m bench.run

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) db.sqlite3* var media staticfiles
