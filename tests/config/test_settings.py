"""config.settings.base: broker settings that must agree with the pipeline's time limits."""

from audits.limits import (
    CHUNK_TIME_LIMIT_S,
    FINALIZE_TIME_LIMIT_MAX_S,
    LIGHTHOUSE_TIME_LIMIT_S,
    STEP_TIME_LIMIT_S,
    finalize_time_limit_s,
)
from config.settings.base import REDIS_VISIBILITY_TIMEOUT_S, broker_transport_options


def test_redis_hands_a_message_out_again_only_after_the_longest_time_limit_a_task_may_run():
    """Else Redis gives a finalize still running at the page ceiling to another worker, whose claim stops the first
    run, and so on every visibility timeout: the audit would never complete."""
    options = broker_transport_options("redis://127.0.0.1:6379/0")
    assert options["visibility_timeout"] == REDIS_VISIBILITY_TIMEOUT_S
    longest = max(CHUNK_TIME_LIMIT_S, LIGHTHOUSE_TIME_LIMIT_S, STEP_TIME_LIMIT_S, FINALIZE_TIME_LIMIT_MAX_S)
    assert longest == FINALIZE_TIME_LIMIT_MAX_S
    assert REDIS_VISIBILITY_TIMEOUT_S > longest
    assert "visibility_timeout" not in broker_transport_options("amqp://guest:guest@127.0.0.1:5672//")


def test_finalize_s_time_limit_grows_with_the_audit_from_the_steps_own():
    assert finalize_time_limit_s(0) == STEP_TIME_LIMIT_S
    assert STEP_TIME_LIMIT_S < finalize_time_limit_s(300) < finalize_time_limit_s(1_000_000) == 2_200
    # the million-page benchmark audit's finalize took 550 s; the limit leaves room for a slower machine and site
    assert finalize_time_limit_s(1_000_000) >= 4 * 550
    assert FINALIZE_TIME_LIMIT_MAX_S == 8_600  # the ceiling's limit, the figure docs/DEPLOY.md gives
