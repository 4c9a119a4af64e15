# Sitewarden: `make run` starts the product on its embedded default, `make test` runs the whole suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements/*.txt | md5sum | cut -c1-12)
PORT ?= 8000
# Where the dashboard is really served: `make run`'s processes link there (the CLI's last line, e-mails, webhooks).
# A DASHBOARD_BASE_URL set in the environment (a proxy, another host) wins.
DASHBOARD_BASE_URL ?= http://127.0.0.1:$(PORT)
LIGHTHOUSE_DIR := audits/lighthouse_runner
LIGHTHOUSE_STAMP := $(LIGHTHOUSE_DIR)/node_modules/.installed-$(shell cat $(LIGHTHOUSE_DIR)/package-lock.json | md5sum | cut -c1-12)
# The npm that runs the lockfile, whatever npm the machine has: Debian 12's own npm 9.2 (with its nodejs 18.20)
# refuses it (`npm ci`: "can only install with an existing package-lock.json"); npm 10 reads it. npx fetches this
# npm once into npm's cache (~/.npm/_npx). Node >= 18.17 runs it.
NPM_VERSION := 10.9.2
NPM := npx --yes npm@$(NPM_VERSION)
# apt-get as root, through sudo otherwise (Chromium, Node.js, pdftoppm when missing).
APT_GET := $$( [ "$$(id -u)" = 0 ] || echo sudo ) env DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: install services run test test-fast bench chaos lint format clean lighthouse-install node-install test-tools

$(STAMP): requirements/base.txt requirements/local.txt requirements/production.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check -q -r requirements/local.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

# crawler.speedups' C extension (the page text walk, the tree's markers, the links, the text signature's MinHash
# minima), built in place once the requirements are in (against the installed lxml's headers). Where it cannot be
# built (no C compiler or Python headers) the Python code it stands for runs: the same results, ~0.9 ms more CPU a
# page; `manage.py check` says so (sitewarden.W001).
SPEEDUPS := crawler/speedups/_speedups$(shell "$$(test -x $(PY) && echo $(PY) || echo python3)" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
$(SPEEDUPS): $(wildcard crawler/speedups/*.c crawler/speedups/*.h) crawler/speedups/build.py $(STAMP)
	$(PY) -m crawler.speedups.build || echo "speedups: not built (a C compiler and Python's headers are needed): the numpy code runs instead"

install: $(STAMP) $(SPEEDUPS)

# Node.js and npm (npx) when missing, installed the way Chromium is: Debian's `nodejs` and `npm` packages.
# A Node.js from elsewhere (nodesource, nvm) that already has npm is left as it is.
node-install:
	@missing=; command -v node >/dev/null || missing="nodejs"; \
	  { command -v npm >/dev/null && command -v npx >/dev/null; } || missing="$$missing npm"; \
	  if [ -n "$$missing" ]; then \
	    if command -v apt-get >/dev/null; then \
	      echo "node-install: installing$$( printf ' %s' $$missing ) with apt-get"; \
	      $(APT_GET) update -qq && $(APT_GET) install -y -qq $$missing || exit 1; \
	    else echo "node-install: install Node.js (>= 18.17) with npm (no apt-get here)"; exit 1; fi; \
	  fi; \
	  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 18 || (a === 18 && b >= 17) ? 0 : 1)' \
	    || { echo "node-install: Node.js >= 18.17 is required, found $$(node --version)"; exit 1; }

# Lighthouse (npm, pinned in audits/lighthouse_runner) and Debian's Chromium for the Lighthouse phase. The lockfile
# is run by the pinned npm (NPM_VERSION), not the machine's.
$(LIGHTHOUSE_STAMP): $(LIGHTHOUSE_DIR)/package.json $(LIGHTHOUSE_DIR)/package-lock.json | node-install
	$(NPM) ci --prefix $(LIGHTHOUSE_DIR) --no-audit --no-fund --loglevel=error
	touch $(LIGHTHOUSE_STAMP)

lighthouse-install: node-install $(LIGHTHOUSE_STAMP)
	@if [ -z "$$CHROME_PATH" ] && [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null; then \
	  if command -v apt-get >/dev/null; then \
	    $(APT_GET) update -qq && $(APT_GET) install -y -qq chromium; \
	  else echo "lighthouse-install: install Chromium and set CHROME_PATH (no apt-get here)"; exit 1; fi; \
	fi

# Poppler's pdftoppm, with which the report tests render the printed PDF's pages to images
# (tests/dashboard/test_report.py), installed the way Chromium is.
test-tools:
	@if ! command -v pdftoppm >/dev/null; then \
	  if command -v apt-get >/dev/null; then \
	    $(APT_GET) update -qq && $(APT_GET) install -y -qq poppler-utils; \
	  else echo "test-tools: install poppler-utils (pdftoppm); no apt-get here"; exit 1; fi; \
	fi

# PostgreSQL and Redis for the tests and the benchmark: started only when they are not answering.
services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done

run: export DASHBOARD_BASE_URL := $(DASHBOARD_BASE_URL)
run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py install_watchdog
	@mkdir -p var
	@login="$$($(PY) manage.py ensure_login)" || exit 1; \
	  setsid $(VENV)/bin/celery -A config worker --beat --concurrency 2 --loglevel INFO --without-gossip --without-mingle \
	    --logfile var/worker.log >/dev/null 2>&1 & \
	  worker=$$!; \
	  web=; \
	  trap 'exit 130' INT TERM; \
	  trap '[ -n "$$web" ] && kill -TERM -- -$$web 2>/dev/null; kill -TERM -- -$$worker 2>/dev/null; for i in $$(seq 1 15); do kill -0 $$worker 2>/dev/null || exit 0; sleep 1; done; kill -KILL -- -$$worker 2>/dev/null' EXIT; \
	  setsid env DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-config.settings.local} $(VENV)/bin/uvicorn \
	    config.asgi:application --host 127.0.0.1 --port $(PORT) --log-level warning & \
	  web=$$!; \
	  for i in $$(seq 1 60); do $(PY) -c "import socket; socket.create_connection(('127.0.0.1', $(PORT)), 1)" 2>/dev/null && break; sleep 1; done; \
	  echo; \
	  echo "Sitewarden: http://127.0.0.1:$(PORT)/  (Ctrl-C stops the web process and the worker; worker log: var/worker.log)"; \
	  echo "$$login"; \
	  echo "CLI in another shell: DASHBOARD_BASE_URL=$(DASHBOARD_BASE_URL) $(PY) manage.py audit https://example.com/"; \
	  wait $$web

# SITEWARDEN_TEST_SLOT=N (1-12) gives a run its own database (sitewarden_N) and Redis db (N), so two
# runs on one machine do not flush each other; see config/settings/test.py.
test: install services lighthouse-install test-tools
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest

# The edit loop: no real workers, browsers, Lighthouse or other slow tests (markers in pyproject.toml);
# stops at the first failure.
FAST_MARKERS := not e2e and not browser and not slow
test-fast: install services
	$(VENV)/bin/pytest -x -q -m "$(FAST_MARKERS)"

bench: install services
	$(VENV)/bin/pip install -q -r requirements/bench.txt
	$(PY) -m bench.run
	$(PY) -m bench.near_duplicates
	$(PY) -m bench.small
	$(PY) -m bench.fairness
	$(PY) -m bench.external

# Each fault of issue 13 against a 2-worker fleet on private PostgreSQL, Redis and RabbitMQ instances it starts
# itself (ports 5544, 6390, 5682): the machine's own services are never touched. Prints one table.
chaos: install
	$(PY) -m bench.chaos

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) db.sqlite3* var media staticfiles $(LIGHTHOUSE_DIR)/node_modules
