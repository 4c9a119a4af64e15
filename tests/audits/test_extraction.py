"""Custom extraction end to end: a project's XPath, CSS and regex extractors on a crawled site on 127.0.0.1,
the values stored per page and shown in the pages grid, the CSV/JSON exports and the API; expressions
refused at save with a sentence; the extractor rules raising `custom-extraction` on exactly the planted pages."""

import csv
import html
import io
import json
import os

import pytest
from django.urls import reverse

from accounts.tokens import token_create
from audits import exports, extraction_sandbox
from audits.errors import AuditRefused
from audits.extraction import (
    MAX_EXTRACTORS,
    NOT_RUN_MARK,
    STOPPED_MARK,
    UNAVAILABLE_MARK,
    compile_extractors,
    extract,
    extractors_from_text,
    extractors_to_text,
    extractors_validate,
    values_bounded,
)
from audits.extraction_eval import TRUNCATION_MARK, VALUES_PER_EXTRACTOR_MAX
from audits.limits import EXTRACTED_PAGE_MAX_BYTES
from audits.models import Audit, AuditEvent, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.projects import ProjectInvalid, project_update
from tests.api.conftest import bearer_client
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes
from tests.support.waits import wait_audit_finished

AUDIT_WAIT_S = 240

EXTRACTORS = [
    {"name": "price", "kind": "css", "expression": ".price::text", "rule": "contains", "rule_value": "€"},
    {"name": "sku", "kind": "xpath", "expression": "//meta[@name='sku']/@content", "rule": "missing"},
    {"name": "code", "kind": "regex", "expression": r'data-code="(\w+)"', "rule": "matches",
     "rule_value": "^[A-Z]{3}[0-9]+$"},
    {"name": "tags", "kind": "css", "expression": "li.tag", "multiple": True},
]  # fmt: skip


def _page(title: str, *, price: str, sku: str | None, code: str, tags=(), links=()) -> str:
    meta = f'<meta name="sku" content="{sku}">' if sku is not None else ""
    items = "".join(f'<li class="tag">{t}</li>' for t in tags)
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (
        f"<!doctype html><html lang=en><head><title>{title}</title>{meta}</head><body><h1>{title}</h1>"
        f'<p>Price: <span class="price">{price}</span></p><div data-code="{code}"></div><ul>{items}</ul>'
        f"{anchors}</body></html>"
    )


SITE = {
    # clean twins: every rule kept
    "/": _page("Home", price="€ 5", sku="H-1", code="HOM1", links=("/p1", "/p2", "/p3")),
    "/p1": _page("Clean", price="€ 12,00", sku="SKU-1", code="ABC123", tags=("red", "  big\n sale ")),
    # planted: the price lacks “€” and there is no sku (one issue, two findings)
    "/p2": _page("Dollar", price="$ 9", sku=None, code="DEF9"),
    # planted: the code does not match the pattern
    "/p3": _page("Lower", price="€ 1", sku="SKU-3", code="abc1"),
}


@pytest.fixture
def crawled(transactional_db):
    with serve_routes() as site:
        for path, body in SITE.items():
            site.add(path, body)
        project = ProjectFactory(base_url=site.url + "/")
        project_update(project=project, extractors=EXTRACTORS)
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=50, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return site.url, audit


def _extracted(audit, base) -> dict:
    return {url.removeprefix(base): extracted for url, extracted in audit.pages.values_list("url", "extracted")}


@pytest.mark.django_db(transaction=True)
def test_values_of_each_kind_are_stored_per_page(crawled):
    base, audit = crawled
    extracted = _extracted(audit, base)
    assert extracted["/p1"] == {"price": ["€ 12,00"], "sku": ["SKU-1"], "code": ["ABC123"], "tags": ["red", "big sale"]}
    assert extracted["/p2"] == {"price": ["$ 9"], "sku": [], "code": ["DEF9"], "tags": []}
    assert extracted["/p3"]["code"] == ["abc1"]


@pytest.mark.django_db(transaction=True)
def test_custom_check_fires_on_exactly_the_planted_pages(crawled):
    base, audit = crawled
    issues = {i.page_url.removeprefix(base): i.details["findings"] for i in Issue.objects.filter(
        audit=audit, type="custom-extraction")}  # fmt: skip
    assert set(issues) == {"/p2", "/p3"}
    assert issues["/p2"] == [
        {"extractor": "price", "rule": "contains €", "value": "$ 9"},
        {"extractor": "sku", "rule": "missing", "value": "(nothing found)"},
    ]
    assert issues["/p3"] == [{"extractor": "code", "rule": "matches ^[A-Z]{3}[0-9]+$", "value": "abc1"}]


@pytest.mark.django_db(transaction=True)
def test_values_in_the_grid_the_exports_and_the_api(crawled, client):
    base, audit = crawled
    owner = audit.project.owner
    client.force_login(owner)
    url = reverse("audits:audit-pages", args=[audit.id])
    response = client.get(url, {"cols_set": "1", "cols": ["title", "ex0", "ex3"]})
    text = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert ">price</th>" in text and ">tags</th>" in text and ">sku</th>" not in text
    assert "€ 12,00" in text and "red | big sale" in text

    rows = {r["url"].removeprefix(base): r for r in csv.DictReader(io.StringIO("".join(exports.pages_csv_rows(audit))))}
    assert rows["/p1"]["extracted.price"] == "€ 12,00" and rows["/p1"]["extracted.tags"] == "red | big sale"
    assert rows["/p2"]["extracted.sku"] == ""
    export = client.get(reverse("audits:audit-pages-export", args=[audit.id, "csv"]))
    assert "extracted.code" in b"".join(export.streaming_content).decode().splitlines()[0]
    pages = {p["url"].removeprefix(base): p for p in json.loads("".join(exports.pages_json_chunks(audit)))}
    assert pages["/p1"]["extracted.tags"] == ["red", "big sale"]

    api = bearer_client(token_create(user=owner, name="t")[1])
    listed = api.get(f"/api/v1/audits/{audit.id}/pages/", {"page_size": 50, "include": "extracted"}).json()
    by_url = {p["url"].removeprefix(base): p for p in listed["results"]}
    assert by_url["/p3"]["extracted"]["code"] == ["abc1"]
    page = Page.objects.get(audit=audit, url=base + "/p1")
    assert api.get(f"/api/v1/audits/{audit.id}/pages/{page.id}/").json()["extracted"]["sku"] == ["SKU-1"]
    project = api.get(f"/api/v1/projects/{audit.project_id}/").json()
    assert [e["name"] for e in project["extractors"]] == ["price", "sku", "code", "tags"]


# --- refused at save --------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "extractor, words",
    [
        ({"name": "x", "kind": "xpath", "expression": "//div[@class='a'"}, "not a valid XPath expression"),
        ({"name": "x", "kind": "css", "expression": "div >> .a["}, "not a valid CSS selector"),
        ({"name": "x", "kind": "regex", "expression": "(a)\\1"}, "backreference"),
        ({"name": "x", "kind": "regex", "expression": "a("}, "not a valid regular expression"),
        ({"name": "x", "kind": "sql", "expression": "1"}, "kind is one of xpath, css, regex"),
        ({"name": "x", "kind": "css", "expression": "p", "rule": "matches", "rule_value": "(?=a)"}, "lookahead"),
        ({"name": "x", "kind": "css", "expression": "p", "rule": "contains"}, "needs a value"),
    ],
)
def test_bad_expressions_are_refused_at_save_with_a_sentence(extractor, words):
    project = ProjectFactory()
    with pytest.raises(ProjectInvalid) as refused:
        project_update(project=project, extractors=[extractor])
    assert refused.value.field == "extractors" and words in refused.value.message
    project.refresh_from_db()
    assert project.extractors == []


@pytest.mark.django_db
def test_at_most_twenty_extractors_with_distinct_names():
    project = ProjectFactory()
    many = [{"name": f"e{i}", "kind": "css", "expression": "p"} for i in range(MAX_EXTRACTORS + 1)]
    with pytest.raises(AuditRefused, match="At most 20"):
        project_update(project=project, extractors=many)
    with pytest.raises(AuditRefused, match="named “a”"):
        project_update(project=project, extractors=[{"name": "a", "kind": "css", "expression": "p"}] * 2)
    project_update(project=project, extractors=many[:MAX_EXTRACTORS])
    project.refresh_from_db()
    assert len(project.extractors) == MAX_EXTRACTORS


@pytest.mark.django_db
def test_the_api_refuses_a_bad_xpath_as_a_field_error(client):
    project = ProjectFactory()
    api = bearer_client(token_create(user=project.owner, name="t")[1])
    bad = [{"name": "x", "kind": "xpath", "expression": "//a[", "rule": ""}]
    response = api.patch(f"/api/v1/projects/{project.id}/", {"extractors": bad}, format="json")
    assert response.status_code == 400
    assert "not a valid XPath expression" in json.dumps(response.json())


@pytest.mark.django_db
def test_the_dashboard_form_reads_lines_and_refuses_a_bad_css(client):
    project = ProjectFactory(base_url="http://127.0.0.1:8000/")
    client.force_login(project.owner)
    url = reverse("audits:project-edit", args=[project.id])
    form = client.get(url).context["form"]
    data = {k: v for k, v in form.initial.items() if k in form.fields and v is not None}
    data.update(max_depth="", include_patterns="", exclude_patterns="", check_overrides="", query_keep_keys="")
    response = client.post(url, {**data, "extractors": "price | css | .price[ "})
    assert response.status_code == 200
    assert "not a valid CSS selector" in html.unescape(response.content.decode())
    project.refresh_from_db()
    assert project.extractors == []
    lines = "price | css | .price::text | contains €\nsku | xpath | //meta[@name='sku']/@content | multiple | missing"
    response = client.post(url, {**data, "extractors": lines})
    assert response.status_code == 302, response.context["form"].errors
    project.refresh_from_db()
    assert project.extractors[1] == {"name": "sku", "kind": "xpath", "expression": "//meta[@name='sku']/@content",
                                     "multiple": True, "rule": "missing", "rule_value": ""}  # fmt: skip
    assert extractors_validate(extractors_from_text(extractors_to_text(project.extractors))) == project.extractors


def test_values_are_bounded():
    body = ("<html><body>" + "<p>" + "x" * 5000 + "</p>" * 1 + "<i>v</i>" * 100 + "</body></html>").encode()
    extractors = compile_extractors([
        {"name": "long", "kind": "css", "expression": "p"},
        {"name": "many", "kind": "xpath", "expression": "//i", "multiple": True},
        {"name": "one", "kind": "xpath", "expression": "//i"},
    ])  # fmt: skip
    values = extract(extractors, body).stored
    assert len(values["long"][0]) == 1000 and values["long"][0].endswith(TRUNCATION_MARK)
    assert len(values["many"]) == VALUES_PER_EXTRACTOR_MAX and values["one"] == ["v"]


# --- bounded: a per-page time budget, 32 KiB stored per page (issue 24) ----------------------------------------

# Cost grows with the cube of the elements: ~1 s of CPU at 400 elements on lxml, ~8x per doubling, minutes at 3,000.
CUBIC = "count(//*[count(//*[count(//*) > 0]) > 0])"
CATCH_ALL = [("xpath", "//*"), ("xpath", "//text()"), ("css", "*"), ("regex", "(?s)(.+)"), ("xpath", "//@*"),
             ("css", "*::text"), ("xpath", "//node()")]  # fmt: skip


def _catch_all(count: int) -> list[dict]:
    return [
        {"name": f"all{n:02}", "kind": kind, "expression": expression, "multiple": True}
        for n, (kind, expression) in enumerate((CATCH_ALL * count)[:count])
    ]


def _small(n: int, *, h1: bool = True) -> str:
    words = " ".join(f"word{i} ünïcödé “quoted” {n}" for i in range(60))  # ~2 KB
    heading = f"<h1>Small page {n}</h1>" if h1 else ""
    return (
        f"<!doctype html><html lang=en><head><title>Small {n}</title><meta name=x content='m{n}'></head>"
        f"<body>{heading}<p class=a>{words}</p><div><span>{n}</span></div></body></html>"
    )


def _large(n: int) -> str:
    items = "".join(f"<li><span>item {i}</span></li>" for i in range(1500))  # 3,000+ elements
    head = f"<!doctype html><html><head><title>Large {n}</title></head>"
    return f"{head}<body><h1>Large {n}</h1><ul>{items}</ul></body></html>"


def _stored_bytes(extracted: dict) -> int:
    return len(json.dumps(extracted, ensure_ascii=False).encode())


def test_twenty_catch_all_extractors_store_at_most_32_kib_a_page_with_marks():
    body = _small(1).encode()
    extraction = extract(compile_extractors(_catch_all(MAX_EXTRACTORS)), body)
    found = sum(_stored_bytes({k: v}) for k, v in extraction.values.items())
    assert found > EXTRACTED_PAGE_MAX_BYTES > 10 * len(body)  # unbounded, 20 catch-alls would store ~25x the page
    assert _stored_bytes(extraction.stored) <= EXTRACTED_PAGE_MAX_BYTES
    cut = [name for name, values in extraction.stored.items() if values and values[-1].endswith(TRUNCATION_MARK)]
    assert len(cut) >= MAX_EXTRACTORS // 2
    for name, values in extraction.stored.items():  # what is kept is the start of what was found
        *whole, last = values
        assert whole == extraction.values[name][: len(whole)]
        assert extraction.values[name][len(whole)].startswith(last.removesuffix(TRUNCATION_MARK))


@pytest.mark.parametrize("text", ["x", "é", "€", "😀", '"', "\\", "\n"])
def test_the_page_bound_is_shared_fairly_and_counts_bytes(text):
    extracted = {"small": ["€ 12"], "big": [text * 900] * 20, "other": [text * 300] * 20, "empty": []}
    bounded = values_bounded(extracted, max_bytes=4096)
    assert _stored_bytes(bounded) <= 4096
    assert bounded["small"] == ["€ 12"] and bounded["empty"] == []  # what fits its share is kept whole
    assert bounded["big"][-1].endswith(TRUNCATION_MARK) and bounded["other"][-1].endswith(TRUNCATION_MARK)
    assert _stored_bytes(bounded) > 4096 - 200  # the room left by the small ones went to the big ones
    assert values_bounded({"a": ["b"]}, max_bytes=4096) == {"a": ["b"]}


@pytest.mark.django_db(transaction=True)
def test_a_cubic_xpath_is_stopped_and_catch_alls_are_bounded_in_a_worker_audit(celery_worker_process):
    """A real worker crawls a site on 127.0.0.1 with two large pages (3,000+ elements), where a cubic XPath would
    burn minutes of CPU, and small ~2 KB pages; twenty extractors: a title, seventeen catch-alls, the cubic one and
    one after it. The audit completes; on the large pages the cubic extractor is stopped and the one after it not
    run, reported once on the audit; every page stores at most 32 KiB, cut values marked; the small pages'
    extraction is whole and right, the rule of the extractor after the cubic judged only where it ran."""
    extractors = [
        {"name": "title", "kind": "css", "expression": "title::text", "rule": "missing"},
        *_catch_all(MAX_EXTRACTORS - 3),
        {"name": "cubic", "kind": "xpath", "expression": CUBIC},
        {"name": "after", "kind": "xpath", "expression": "//h1", "rule": "missing"},
    ]
    small = {"/p1": _small(1), "/p2": _small(2), "/p3": _small(3, h1=False)}
    with serve_routes() as site:
        links = "".join(f'<a href="{path}">{path}</a>' for path in ("/large1", "/large2", *small))
        site.add("/", f"<!doctype html><html><head><title>Home</title></head><body><h1>Home</h1>{links}</body></html>")
        site.add("/large1", _large(1))
        site.add("/large2", _large(2))
        for path, body in small.items():
            site.add(path, body)
        project = ProjectFactory(base_url=site.url + "/")
        project_update(project=project, extractors=extractors)
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=20)
        audit = wait_audit_finished(audit, AUDIT_WAIT_S)
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    assert audit.pages_crawled == 6
    kinds = set(audit.events.values_list("kind", flat=True))
    assert not kinds & {AuditEvent.Kind.TASK_FAILED, AuditEvent.Kind.LEASE_EXPIRED, AuditEvent.Kind.REVIVED}
    pages = _extracted(audit, site.url)

    for path in ("/large1", "/large2"):
        assert pages[path]["title"] == [f"Large {path[-1]}"]
        assert pages[path]["cubic"] == [STOPPED_MARK]
        assert pages[path]["after"] == [NOT_RUN_MARK]
    (stopped,) = audit.events.filter(kind=AuditEvent.Kind.EXTRACTION_STOPPED)  # once per audit, not per page
    assert stopped.data["extractor"] == "cubic" and "“cubic” was stopped" in stopped.message
    assert stopped.data["page_url"] in {site.url + "/large1", site.url + "/large2"}

    for path, extracted in pages.items():
        assert _stored_bytes(extracted) <= EXTRACTED_PAGE_MAX_BYTES, path
        if path != "/":  # the home page is a few links: its catch-alls fit whole
            assert any(v and v[-1].endswith(TRUNCATION_MARK) for v in extracted.values()), path
    for n, path in enumerate(small, start=1):
        assert pages[path]["title"] == [f"Small {n}"]
        assert pages[path]["cubic"][0].isdigit()  # cheap on a small page: it finished
    assert pages["/p1"]["after"] == ["Small page 1"] and pages["/p3"]["after"] == []
    issues = {i.page_url.removeprefix(site.url): i.details["findings"] for i in Issue.objects.filter(
        audit=audit, type="custom-extraction")}  # fmt: skip
    assert issues == {"/p3": [{"extractor": "after", "rule": "missing", "value": "(nothing found)"}]}

    api = bearer_client(token_create(user=project.owner, name="t")[1])
    listed = api.get(f"/api/v1/audits/{audit.id}/pages/", {"page_size": 50})
    assert listed.status_code == 200 and all("extracted" not in p for p in listed.json()["results"])
    asked = api.get(f"/api/v1/audits/{audit.id}/pages/", {"page_size": 50, "include": "extracted"}).json()
    assert {p["url"].removeprefix(site.url): p["extracted"] for p in asked["results"]} == pages


def test_a_page_goes_on_when_the_extraction_process_cannot_start(monkeypatch):
    monkeypatch.setattr(extraction_sandbox, "_sandbox", extraction_sandbox.Sandbox())
    monkeypatch.setattr(extraction_sandbox, "_sandbox_pid", os.getpid())
    monkeypatch.setattr(extraction_sandbox.sys, "executable", "/nonexistent/python")  # no process can start
    extraction = extract(compile_extractors(EXTRACTORS), _small(1).encode())
    assert extraction.values == {} and extraction.stopped == ""
    assert extraction.stored == {e["name"]: [UNAVAILABLE_MARK] for e in EXTRACTORS}
