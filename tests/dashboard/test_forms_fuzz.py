"""Generated input (Hypothesis) through every dashboard form and list a signed-in person can reach: the project
form (create and edit), the audit start form in each mode (with uploaded .txt/.csv files), API tokens,
webhooks, schedules, and the query strings of the pages grid, a page's link lists, the issues and events
lists and the comparison. Whatever is typed, the answer is never a 5xx (a refusal is a form error, a 404 or
a redirect to the list's first page).

Every URL generated is on 127.0.0.1: a start or a project save checks its host, and nothing may leave the
machine. Lone surrogates are not generated here: form encoding cannot carry them (the API's JSON can:
tests/api/test_schema_fuzz.py)."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import ProjectFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

MAX_EXAMPLES = 60  # x 4 tests: ~25 s on 2 cores
FUZZ = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
CSV_FIELD_LIMIT_CHARS = 128 * 1024  # csv.field_size_limit()'s default

HOSTILE_NUMBERS = ["99999999999999999999", str(2**63), str(-(2**63) - 1), "-1", "0", "1e400", "NaN", "٣"]
HOSTILE_TEXTS = ["a\x00b", "\x00", "x" * 5000, "line\r\nbreak", "<script>", "%00", "‮"]
TEXT = st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE_TEXTS))
NUMBER = st.one_of(st.integers().map(str), st.sampled_from(HOSTILE_NUMBERS), st.text(max_size=6))
URL = st.one_of(
    st.sampled_from(
        [
            "http://127.0.0.1:1/",
            "http://127.0.0.1:0/",
            "http://127.0.0.1:65536/",
            "http://127.0.0.1:99999999999999999999/",
            "http://u:p@127.0.0.1:1/",
            "http://127.0.0.1:1/a\x00b",
            "ftp://127.0.0.1/",
            "javascript:alert(1)",
            "",
        ]
    ),
    st.text(max_size=30).map(lambda path: "http://127.0.0.1:1/" + path.replace("\\", "/")),
)
SEVERITY = st.sampled_from(["", "critical", "warning", "info", "x", "\x00"])
EXTRACTORS = st.one_of(
    TEXT, st.sampled_from(["p | css | h1", "p | xpath | //a[", "p | regex | (", "p | css | h1 | contains \x00"])
)
CURSOR = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "eyJ0IjogInVybCIsICJrIjogWzEwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAsICJ4Il0sICJiIjogMH0",
            "eyJ0IjoiIiwiayI6WyJhIl0sImIiOjB9:GxOp_A9A9LG555DHEbRxRbMUlszO1ZeAhqEkwNVbVvY",
            "x" * 20_000,
        ]
    ),
)


def _no_server_error(response) -> None:
    assert response.status_code < 500, response.status_code


def _form(fields: dict) -> st.SearchStrategy:
    """Each field present or absent, so missing and extra fields are tried too."""
    return st.fixed_dictionaries({}, optional=fields)


PROJECT_FORM = _form(
    {
        "name": TEXT,
        "base_url": URL,
        "max_pages": NUMBER,
        "include_patterns": TEXT,
        "exclude_patterns": TEXT,
        "user_agent": TEXT,
        "auth_username": TEXT,
        "auth_password": TEXT,
        "clear_auth_password": st.sampled_from(["on", ""]),
        "follow_nofollow": st.sampled_from(["on", "", "x"]),
        "crawl_subdomains": st.sampled_from(["on", ""]),
        "max_depth": NUMBER,
        "query_policy": st.sampled_from(["keep", "drop", "keep_listed", "x", ""]),
        "query_keep_keys": TEXT,
        "render_js": st.sampled_from(["on", ""]),
        "render_budget_pages": NUMBER,
        "max_urls_per_pattern": NUMBER,
        "max_path_segments": NUMBER,
        "calendar_years_ahead": NUMBER,
        "max_dated_urls_per_pattern": NUMBER,
        "max_query_variants_per_path": NUMBER,
        "max_identical_pages_per_pattern": NUMBER,
        "min_request_interval_ms": NUMBER,
        "max_concurrency": NUMBER,
        "check_external_links": st.sampled_from(["on", ""]),
        "external_links_max": NUMBER,
        "external_links_budget_s": NUMBER,
        "bot_sample_max": NUMBER,
        # the checks' fields: the marker, a whole-number, a bounded and a decimal threshold, a severity, a tick
        "checks_shown": st.sampled_from(["True", "False", "", "x"]),
        "check__title-too-long__max_chars": NUMBER,
        "check__large-html__max_bytes": NUMBER,
        "check__poor-cls__max_cls": st.one_of(NUMBER, st.sampled_from(["0.25", "1e400", "nan", "-0.1", "inf"])),
        "check__missing-h1__severity": SEVERITY,
        "check__long-url__enabled": st.sampled_from(["on", ""]),
        "extractors": EXTRACTORS,
    }
)


@pytest.fixture
def fuzz_project(owner):
    return ProjectFactory(owner=owner, name="Fuzz", base_url="http://127.0.0.1:1/")


def test_project_form_never_answers_5xx(owner_client, fuzz_project):
    create, edit = reverse("audits:project-create"), reverse("audits:project-edit", args=[fuzz_project.id])

    @FUZZ
    @given(data=PROJECT_FORM, editing=st.booleans())
    def post(data, editing):
        _no_server_error(owner_client.post(edit if editing else create, data))

    post()


UPLOAD = st.one_of(
    st.none(),
    st.tuples(st.sampled_from(["urls.csv", "urls.txt", "urls.xlsx", "urls"]), st.binary(max_size=200)),
    st.tuples(st.just("urls.csv"), st.text(max_size=200).map(lambda t: t.encode("utf-8"))),
    st.just(("urls.csv", b'url\n"' + b"x" * (CSV_FIELD_LIMIT_CHARS + 1) + b'"\n')),  # over csv's field limit
    st.just(("urls.csv", b"url\nhttp://127.0.0.1:1/a\x00b\n")),
)
START_FORM = _form(
    {
        "mode": st.sampled_from(["crawl", "list", "sitemap", "x", ""]),
        "start_url": URL,
        "url_list": st.one_of(TEXT, st.lists(URL, max_size=4).map("\n".join)),
        "sitemap_url": URL,
        "max_pages": NUMBER,
        "lighthouse": st.sampled_from(["on", ""]),
        "include_patterns": TEXT,
        "exclude_patterns": TEXT,
    }
)


def test_audit_start_form_never_answers_5xx(owner_client, fuzz_project):
    url = reverse("audits:audit-new", args=[fuzz_project.id])

    @FUZZ
    @given(data=START_FORM, upload=UPLOAD)
    def post(data, upload):
        if upload is not None:
            data = {**data, "url_file": SimpleUploadedFile(upload[0], upload[1])}
        _no_server_error(owner_client.post(url, data))

    post()


def test_token_webhook_and_schedule_forms_never_answer_5xx(owner_client, fuzz_project):
    webhooks = reverse("audits:project-webhooks", args=[fuzz_project.id])
    schedule = reverse("audits:project-schedule", args=[fuzz_project.id])
    forms = st.one_of(
        st.tuples(st.just(reverse("audits:api-tokens")), _form({"name": TEXT})),
        st.tuples(st.just(webhooks), _form({"url": URL, "secret": TEXT})),
        st.tuples(
            st.just(schedule),
            _form({"kind": st.sampled_from(["daily", "weekly", "cron", "x"]), "cron": TEXT, "action": TEXT}),
        ),
    )

    @FUZZ
    @given(target=forms)
    def post(target):
        url, data = target
        _no_server_error(owner_client.post(url, data))

    post()


def test_list_query_strings_never_answer_5xx(owner_client, results):
    audit = results.audit
    grid = reverse("audits:audit-pages", args=[audit.id])
    page = reverse("audits:page-detail", args=[audit.id, results.home.id])
    lists = st.one_of(
        st.tuples(
            st.just(grid),
            _form(
                {
                    "view": st.sampled_from(["", "titles", "descriptions", "x"]),
                    "show": st.sampled_from(["", "missing", "over", "under", "duplicate", "x"]),
                    "chars": NUMBER,
                    "q": TEXT,
                    "status": TEXT,
                    "fetch_class": TEXT,
                    "indexable": st.sampled_from(["yes", "no", "x"]),
                    "issue": TEXT,
                    "sort": st.sampled_from(["url", "-depth", "depth", "-inlinks", "x", "--url"]),
                    "cols": TEXT,
                    "cols_set": st.sampled_from(["1", "", "x"]),
                    "cursor": CURSOR,
                }
            ),
        ),
        st.tuples(st.just(page), _form({"in": CURSOR, "out": CURSOR})),
        st.tuples(
            st.just(reverse("audits:audit-issues", args=[audit.id])),
            _form({"severity": TEXT, "category": TEXT, "sort": TEXT}),
        ),
        st.tuples(st.just(reverse("audits:audit-events", args=[audit.id])), _form({"page": NUMBER})),
        st.tuples(st.just(reverse("audits:project-detail", args=[results.project.id])), _form({"page": NUMBER})),
        st.tuples(
            st.just(reverse("audits:audit-compare", args=[audit.id])),
            _form({"base": TEXT, "kind": TEXT, "type": TEXT, "page": NUMBER}),
        ),
    )

    @FUZZ
    @given(target=lists)
    def get(target):
        url, query = target
        _no_server_error(owner_client.get(url, query))

    get()
