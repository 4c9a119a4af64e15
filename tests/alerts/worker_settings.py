"""Settings of the worker processes the alert tests start: the test settings with a claim that lasts seconds, so a
killed worker's claim expires while the test waits (production: ALERT_LEASE_S, longer than an attempt can take)."""

from config.settings.test import *  # noqa: F403

ALERT_LEASE_S = 4
