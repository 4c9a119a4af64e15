"""End to end through the API alone: a Bearer token drives a real audit of a site on 127.0.0.1 in a real
Celery worker (live server + worker + Redis + PostgreSQL), and the project's webhook is delivered by the
worker, signed, after a first 500 from the receiver."""

import csv
import io

import pytest
import requests

from accounts.tokens import token_create
from audits.models import Page
from tests.factories import UserFactory
from tests.support.waits import wait_until
from tests.webhooks.test_delivery import verify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

AUDIT_WAIT_S = 240
WEBHOOK_WAIT_S = 60  # the first retry comes WEBHOOK_RETRY_BASE_S (10 s) after the 500
SECRET = "a-shared-secret-for-the-receiver"


def test_start_poll_results_and_webhook_through_the_api(small_site, celery_worker_process, live_server, receiver):
    base, manifest = small_site
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {token_create(user=UserFactory(), name='ci')[1]}"
    v1 = live_server.url + "/api/v1"

    project = api.post(f"{v1}/projects/", json={"name": "generated site", "base_url": base + "/", "max_pages": 1000})
    assert project.status_code == 201, project.text
    project_id = project.json()["id"]
    hook = api.post(f"{v1}/projects/{project_id}/webhooks/", json={"url": receiver.url, "secret": SECRET})
    assert hook.status_code == 201, hook.text
    receiver.statuses = [500]  # the first delivery attempt fails

    started = api.post(f"{v1}/projects/{project_id}/audits/", json={"max_pages": 1000})
    assert started.status_code == 202, started.text
    location = started.headers["Location"]

    def finished():
        body = api.get(location).json()
        return body if body["status"] != "running" else None

    audit = wait_until(finished, AUDIT_WAIT_S, "audit finished")
    assert audit["status"] == "completed", audit
    expected = manifest.expected_urls(base)
    assert audit["pages_crawled"] == len(expected)
    assert audit["health_score"] is not None and 0 <= audit["health_score"] <= 100
    assert audit["error_code"] == "" and sum(audit["issues_by_type"].values()) > 0

    audit_url = f"{v1}/audits/{audit['id']}"
    summary = api.get(f"{audit_url}/issues/summary/").json()
    assert {row["type"]: row["count"] for row in summary} == audit["issues_by_type"]
    some_type = summary[0]["type"]
    issues = api.get(f"{audit_url}/issues/", params={"type": some_type, "page_size": 500}).json()
    assert issues["count"] == summary[0]["count"] and {i["type"] for i in issues["results"]} == {some_type}

    pages = api.get(f"{audit_url}/pages/", params={"page_size": 500}).json()
    assert pages["count"] == len(expected)
    assert {p["url"] for p in pages["results"]} <= expected
    assert api.get(f"{audit_url}/pages/", params={"status_code": 404}).json()["count"] >= 1
    home = Page.objects.get(audit_id=audit["id"], url=base + "/")
    detail = api.get(f"{audit_url}/pages/{home.id}/").json()
    assert detail["outlinks_count"] > 0 and detail["status_code"] == 200

    export = api.get(f"{audit_url}/exports/pages.csv")
    assert export.status_code == 200 and export.headers["Content-Type"].startswith("text/csv")
    assert {row["url"] for row in csv.DictReader(io.StringIO(export.text))} == expected

    # The webhook: sent by the worker when the audit completed, answered 500, retried with backoff, then 200.
    received = wait_until(lambda: len(receiver.received) >= 2 and receiver.received, WEBHOOK_WAIT_S, "webhook retry")
    for got in received:
        assert verify(got, SECRET)
        assert got.json()["audit"]["id"] == audit["id"] and got.json()["audit"]["status"] == "completed"
    assert received[0].body == received[1].body
    deliveries = wait_until(
        lambda: [d for d in api.get(f"{v1}/webhooks/{hook.json()['id']}/deliveries/").json()["results"]
                 if d["status"] == "succeeded"],
        10,
        "delivery logged",
    )  # fmt: skip
    assert deliveries[0]["attempts"] == 2 and deliveries[0]["last_response_code"] == 200
    assert deliveries[0]["audit"] == audit["id"]
