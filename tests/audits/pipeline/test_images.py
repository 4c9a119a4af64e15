"""The image pass, a stage of finalize (audits.pipeline.images): one headers-only request per distinct internal
image URL of the crawled pages, after the crawl and outside the checks; the image checks read its answers. A
real crawl of a site served on 127.0.0.1, whose requests are counted."""

import tracemalloc

import pytest

from audits import bulk
from audits.checks.images import image_site_issues
from audits.checks.registry import CheckSettings
from audits.checks.site import judged_pages
from audits.models import Issue, Page
from audits.pipeline import images
from audits.pipeline.images import images_judge
from audits.pipeline.inline import pipeline_crawl_inline
from audits.pipeline.start import audit_start
from tests.factories import AuditFactory, PageFactory, ProjectFactory
from tests.support.sites import serve_routes
from tests.support.sites.crawled import IMAGES_PAGE, IMAGES_TWIN, image_routes
from tests.support.sites.pages import html_route, page

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE_TYPES = ("broken-image", "image-too-large")


@pytest.fixture
def crawled():
    """A crawl (finalize not run) of a home page linking to a page of three images and a twin showing one of
    them; yields (site, audit)."""
    routes = image_routes()
    routes["/"] = html_route(page("home", links=[(IMAGES_PAGE, "Pictures"), (IMAGES_TWIN, "One picture")]))
    with serve_routes(routes) as site:
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=10, dispatch=False)
        assert pipeline_crawl_inline(audit.id)
        audit.refresh_from_db()
        site.requests.clear()
        yield site, audit


def _image_requests(site) -> list[str]:
    return sorted(path for path, _ in site.requests if path.startswith("/img/") and path.endswith(".png"))


def _issues(audit, base: str) -> dict:
    return {
        (i.type, i.page_url.removeprefix(base)): i.details
        for i in Issue.objects.filter(audit=audit, type__in=IMAGE_TYPES)
    }


def test_each_distinct_image_is_asked_once_and_the_checks_judge_the_answers(crawled):
    site, audit = crawled
    assert _issues(audit, site.url) == {}  # the crawl itself asks for no image and judges none
    images_judge(audit)
    # small.png is on both pages: asked once
    assert _image_requests(site) == ["/img/big.png", "/img/missing.png", "/img/small.png"]
    found = _issues(audit, site.url)
    assert set(found) == {("broken-image", IMAGES_PAGE), ("image-too-large", IMAGES_PAGE)}  # the twin: none
    assert found[("broken-image", IMAGES_PAGE)]["images"] == [
        {"src": site.url + "/img/missing.png", "status_code": 404, "error": ""}
    ]
    assert found[("image-too-large", IMAGES_PAGE)]["images"] == [{"src": site.url + "/img/big.png", "kb": 400}]


def test_run_again_it_replaces_its_issues_with_the_same_rows(crawled):
    site, audit = crawled
    images_judge(audit)
    first = sorted(Issue.objects.filter(audit=audit, type__in=IMAGE_TYPES).values_list("id", "type", "details"))
    images_judge(audit)
    assert sorted(Issue.objects.filter(audit=audit, type__in=IMAGE_TYPES).values_list("id", "type", "details")) == (
        first
    )


def test_with_the_image_checks_disabled_no_image_is_asked_for(crawled):
    site, audit = crawled
    audit.config = {**audit.config, "checks": {"disabled": list(IMAGE_TYPES)}}
    audit.save(update_fields=["config"])
    images_judge(audit)
    assert (_image_requests(site), _issues(audit, site.url)) == ([], {})


def test_the_pass_asks_for_at_most_its_bound_of_images(crawled, monkeypatch):
    site, audit = crawled
    monkeypatch.setattr(images, "IMAGE_REQUESTS_MAX_PER_AUDIT", 2)
    images_judge(audit)
    assert len(_image_requests(site)) == 2  # the first-linked two; the third is not judged


def test_a_broken_image_on_every_page_is_written_as_it_comes_not_held(monkeypatch):
    # Issue 29: a broken logo in the template is a broken-image issue on every page. Listed whole before the write,
    # 300,000 of them took the finalize worker +577 MiB. 4,000 pages here: the write holds a batch of issues (and
    # a chunk of page rows), not the audit's issues.
    audit = AuditFactory()
    logo = audit.start_url + "logo.png"
    Page.objects.bulk_create(PageFactory.build_batch(4000, audit=audit, image_urls=[logo]))
    answers = {logo: {"status_code": 404, "bytes": None, "error": ""}}
    check_settings = CheckSettings.for_audit(audit)
    monkeypatch.setattr(bulk, "ISSUE_WRITE_BATCH", 50)

    def issues():
        return image_site_issues(audit.id, judged_pages(audit.id), answers, check_settings)

    tracemalloc.start()
    try:
        held = list(issues())
        _now, held_peak = tracemalloc.get_traced_memory()
        del held
        tracemalloc.reset_peak()
        base, _peak = tracemalloc.get_traced_memory()
        written = bulk.issues_insert(issues())
        _now, write_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written == Issue.objects.filter(audit=audit, type="broken-image").count() == 4000
    images_listed = Issue.objects.filter(audit=audit).values_list("details__images", flat=True)
    assert all(listed == [{"src": logo, "status_code": 404, "error": ""}] for listed in images_listed)
    assert write_peak - base < held_peak / 3
