"""The operators' admin: audit actions (reconcile now, cancel, re-run), read-only results, accounts and
their ledger, schedules, webhooks and their deliveries, API tokens."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from accounts.models import ApiToken, CreditEntry
from accounts.services import credits_entry
from accounts.tokens import TokenRefused, token_authenticate, token_create
from audits.models import Audit, AuditEvent, Project, Schedule
from audits.pipeline.lifecycle import audit_event
from tests.admin.conftest import messages_of
from tests.api.conftest import finished_audit
from tests.factories import AuditFactory, ProjectFactory
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db

AUDITS = "/admin/audits/audit/"


def act(client, url, action, objects):
    return client.post(url, {"action": action, "_selected_action": [str(o.pk) for o in objects]}, follow=True)


def stale_audit(project, settings, **fields):
    long_ago = timezone.now() - timedelta(hours=2)
    return AuditFactory(
        project=project,
        started_at=long_ago,
        last_progress_at=long_ago,
        current_phase="crawling",
        revivals=settings.RECONCILE_MAX_REVIVALS,
        **fields,
    )


def test_reconcile_now_fails_a_stale_audit_and_leaves_a_live_one(admin_client, project, settings):
    stale = stale_audit(project, settings)
    live = AuditFactory(project=ProjectFactory(), started_at=timezone.now(), last_progress_at=timezone.now())
    response = act(admin_client, AUDITS, "reconcile_now", [stale, live])
    assert response.status_code == 200
    stale.refresh_from_db()
    live.refresh_from_db()
    assert stale.status == "failed" and stale.error_code == "instance_lost"
    assert stale.reconciled_by == "admin"
    assert AuditEvent.objects.filter(audit=stale, kind="reconciled").exists()
    assert live.status == "running"
    text = " ".join(messages_of(response))
    assert f"{stale.id}: failed (instance_lost)" in text and f"{live.id}: alive" in text


def test_cancel_action(admin_client, project):
    running = AuditFactory(project=project)
    done = finished_audit(project, pages={"/": 200}, issues=[])
    response = act(admin_client, AUDITS, "cancel_audits", [running, done])
    running.refresh_from_db()
    done.refresh_from_db()
    assert (running.status, running.current_phase) == ("cancelled", "cancelled")
    assert done.status == "completed"
    assert "1 audit(s) cancelled." in messages_of(response)


def test_rerun_starts_a_new_audit_with_the_same_settings(admin_client, project):
    old = finished_audit(project, pages={"/": 200}, issues=[])
    Audit.objects.filter(id=old.id).update(start_url="http://127.0.0.1:1/docs/", config={"max_pages": 40})
    response = act(admin_client, AUDITS, "rerun_audits", [old])
    new = Audit.objects.exclude(id=old.id).get(project=project)
    assert (new.status, new.start_url, new.max_pages) == ("running", "http://127.0.0.1:1/docs/", 40)
    assert CreditEntry.objects.filter(audit_ref=new.id, kind="reserve", units=40).exists()
    assert f"{old.id}: re-run as {new.id}." in messages_of(response)
    # A second re-run is refused while that one runs: the refusal is shown, nothing is created.
    response = act(admin_client, AUDITS, "rerun_audits", [old])
    assert any("refused (audit_already_running)" in m for m in messages_of(response))
    assert Audit.objects.filter(project=project).count() == 2


def test_audit_list_filters_and_search(admin_client, project, settings):
    stale_audit(project, settings, error_code="oom", status="failed")
    finished_audit(project, pages={"/": 200}, issues=[])
    for query in (
        "?status__exact=failed",
        "?current_phase__exact=crawling",
        "?error_code=oom",
        "?q=127.0.0.1",
        "?reconciled_by=admin",
    ):
        assert admin_client.get(AUDITS + query).status_code == 200, query
    body = admin_client.get(AUDITS + "?error_code=oom").content.decode()
    assert "oom" in body


def test_audit_page_is_read_only_with_issue_and_event_inlines(admin_client, project):
    audit = finished_audit(project, pages={"/": 200, "/a": 200}, issues=[("missing-title", "critical", "/a")])
    audit_event(audit_id=audit.id, kind="phase", message="Phase finalizing")
    url = f"{AUDITS}{audit.id}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "missing-title" in body and "Phase finalizing" in body and "all issues" in body
    assert admin_client.post(url, {"status": "running"}).status_code == 403
    assert admin_client.get("/admin/audits/audit/add/").status_code == 403


def test_audit_delete_goes_through_the_service(admin_client, project):
    running = AuditFactory(project=project)
    response = admin_client.post(f"{AUDITS}{running.id}/delete/", {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert not Audit.objects.filter(id=running.id).exists()


def test_pages_searchable_by_url_and_read_only(admin_client, project):
    audit = finished_audit(project, pages={"/shop/shoes": 200, "/about": 200}, issues=[])
    body = admin_client.get("/admin/audits/page/?q=shoes").content.decode()
    assert "/shop/shoes" in body and "/about" not in body
    page = audit.pages.first()
    assert admin_client.post(f"/admin/audits/page/{page.id}/change/", {"url": "x"}).status_code == 403
    assert admin_client.get("/admin/audits/issue/?severity__exact=critical").status_code == 200


def test_account_shows_plan_limits_and_credit_ledger(admin_client, project):
    audit = finished_audit(project, pages={"/": 200}, issues=[])
    credits_entry(audit=audit, kind="reserve", units=123)
    listing = admin_client.get("/admin/accounts/account/").content.decode()
    pages_per_audit = str(project.account.plan.pages_per_audit)  # the listing shows the plan's limit
    assert project.account.name in listing and pages_per_audit in listing.replace(",", "")
    detail = admin_client.get(f"/admin/accounts/account/{project.account_id}/change/").content.decode()
    assert "123" in detail and "reserve" in detail
    assert admin_client.get("/admin/accounts/creditentry/?kind__exact=reserve").status_code == 200


def test_schedule_saved_through_the_service(admin_client, project):
    response = admin_client.post(
        "/admin/audits/schedule/add/", {"project": project.id, "kind": "daily", "cron": "", "enabled": "on"}
    )
    assert response.status_code == 302, response.content[:2000]
    schedule = Schedule.objects.get(project=project)
    assert schedule.cron == "0 3 * * *" and schedule.periodic_task.task == "audits.run_schedule"
    bad = admin_client.post(
        f"/admin/audits/schedule/{schedule.id}/change/",
        {"project": project.id, "kind": "cron", "cron": "61 * * * *", "enabled": "on"},
    )
    assert bad.status_code == 200 and "cron" in bad.context["adminform"].form.errors
    admin_client.post(f"/admin/audits/schedule/{schedule.id}/delete/", {"post": "yes"})
    assert not Schedule.objects.filter(project=project).exists()
    assert not PeriodicTask.objects.filter(name=f"project-{project.id}-audit").exists()


def test_webhook_created_with_a_secret_shown_once_and_ssrf_checked(admin_client, project, settings):
    response = admin_client.post(
        "/admin/webhooks/webhook/add/",
        {
            "project": project.id,
            "url": "http://127.0.0.1:9/hook",
            "enabled": "on",
            "deliveries-TOTAL_FORMS": "0",
            "deliveries-INITIAL_FORMS": "0",
        },
        follow=True,
    )
    webhook = Webhook.objects.get(project=project)
    assert any(webhook.secret in m for m in messages_of(response))
    settings.ALLOW_PRIVATE_TARGETS = False
    refused = admin_client.post(
        "/admin/webhooks/webhook/add/",
        {
            "project": project.id,
            "url": "http://10.1.2.3/hook",
            "deliveries-TOTAL_FORMS": "0",
            "deliveries-INITIAL_FORMS": "0",
        },
    )
    assert refused.status_code == 200 and "url" in refused.context["adminform"].form.errors
    assert Webhook.objects.count() == 1


def test_delivery_send_again(admin_client, project):
    webhook = Webhook.objects.create(project=project, url="http://127.0.0.1:9/", secret="x" * 32)
    audit = AuditFactory(project=project)
    delivery = WebhookDelivery.objects.create(
        webhook=webhook, audit=audit, audit_ref=audit.id, event="audit.finished", status="failed", attempts=6
    )
    assert admin_client.get("/admin/webhooks/webhookdelivery/?status__exact=failed").status_code == 200
    act(admin_client, "/admin/webhooks/webhookdelivery/", "send_again", [delivery])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 0)


def test_api_token_created_shown_once_and_revoked(admin_client, django_user_model):
    owner = django_user_model.objects.create_user("integrator", password="pw-for-tests")
    expires_on = (timezone.now() + timedelta(days=30)).date()
    form = {"user": owner.id, "name": "CI", "scope": "read", "expires_on": expires_on.isoformat()}
    response = admin_client.post("/admin/accounts/apitoken/add/", form, follow=True)
    (shown,) = [m for m in messages_of(response) if "never shown again" in m]
    plaintext = next(word for word in shown.split() if word.startswith("sw_"))
    token = ApiToken.objects.get(user=owner)
    assert token_authenticate(plaintext) == token and plaintext not in token.token_hash
    assert token.read_only and token.expires_at.date() == expires_on and token.account is not None
    past = {**form, "expires_on": "2000-01-01"}
    refused = admin_client.post("/admin/accounts/apitoken/add/", past)
    assert refused.status_code == 200 and "after today" in refused.content.decode()
    detail = admin_client.get(f"/admin/accounts/apitoken/{token.id}/change/").content.decode()
    assert plaintext not in detail and token.token_hash not in detail
    _, other_plaintext = token_create(user=owner, name="other")
    act(admin_client, "/admin/accounts/apitoken/", "revoke", [token])
    token.refresh_from_db()
    assert token.revoked_at is not None
    with pytest.raises(TokenRefused):
        token_authenticate(plaintext)
    assert token_authenticate(other_plaintext).name == "other"


@pytest.mark.parametrize(
    "url",
    [
        "/admin/audits/project/",
        "/admin/accounts/plan/",
        "/admin/audits/auditevent/",
        "/admin/audits/schedule/",
        "/admin/webhooks/webhook/",
        "/admin/accounts/apitoken/",
        "/admin/accounts/apitoken/add/",
    ],
)
def test_other_pages_load(admin_client, project, url):
    assert admin_client.get(url).status_code == 200


NO_SEGMENT_ROWS = {"segments-TOTAL_FORMS": "0", "segments-INITIAL_FORMS": "0"}  # the segments inline's formset


def test_project_basic_auth_password_is_never_shown_back(admin_client, project):
    project.auth_username, project.auth_password = "crawler", "s3cret-value"
    project.save()
    page = admin_client.get(f"/admin/audits/project/{project.id}/change/")
    assert page.status_code == 200 and "s3cret-value" not in page.content.decode()
    # saving the form with the password left blank keeps the stored one
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and not isinstance(v, (list, dict))}
    data.update(
        owner=project.owner_id, account=project.account_id, auth_password="", include_patterns="[]",
        exclude_patterns="[]", query_keep_keys="[]", check_overrides="{}", query_policy=project.query_policy,
        **NO_SEGMENT_ROWS,
    )  # fmt: skip
    saved = admin_client.post(f"/admin/audits/project/{project.id}/change/", data)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    project.refresh_from_db()
    assert project.auth_password == "s3cret-value"


def test_moving_a_project_to_another_origin_in_the_admin_removes_the_password_and_says_so(admin_client, project):
    project.auth_username, project.auth_password = "crawler", "s3cret-value"
    project.save()
    page = admin_client.get(f"/admin/audits/project/{project.id}/change/")
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and not isinstance(v, (list, dict))}
    data.update(
        owner=project.owner_id, account=project.account_id, auth_password="", include_patterns="[]",
        exclude_patterns="[]", query_keep_keys="[]", check_overrides="{}", query_policy=project.query_policy,
        base_url="https://elsewhere.example/", **NO_SEGMENT_ROWS,
    )  # fmt: skip
    saved = admin_client.post(f"/admin/audits/project/{project.id}/change/", data, follow=True)
    assert saved.status_code == 200
    assert "basic-auth password was removed" in saved.content.decode()
    project.refresh_from_db()
    assert project.base_url == "https://elsewhere.example/" and project.auth_password == ""


def admin_project_data(project, **change) -> dict:
    data = {
        "account": project.account_id, "owner": project.owner_id, "name": "Added", "base_url": "127.0.0.1:8000",
        "max_pages": "100", "include_patterns": "[]", "exclude_patterns": "[]", "user_agent": "",
        "auth_username": "", "auth_password": "", "render_budget_pages": "1", "max_depth": "",
        "max_urls_per_pattern": "100", "query_policy": "keep", "query_keep_keys": "[]",
        "max_path_segments": "15", "calendar_years_ahead": "3", "max_dated_urls_per_pattern": "1000",
        "max_query_variants_per_path": "500", "max_identical_pages_per_pattern": "100",
        "min_request_interval_ms": "0", "max_concurrency": "2", "check_overrides": "{}",
        "external_links_max": "2000", "external_links_budget_s": "300",
        "bot_sample_max": "10",
        **NO_SEGMENT_ROWS,
    }  # fmt: skip
    data.update(change)
    return data


def test_project_added_through_the_service(admin_client, project):
    response = admin_client.post("/admin/audits/project/add/", admin_project_data(project))
    assert response.status_code == 302, response.content.decode()[:2000]
    added = Project.objects.get(name="Added")
    assert added.base_url == "https://127.0.0.1:8000/"  # normalised by audits.projects
    assert added.account_id == project.account_id


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"base_url": "http://127.0.0.1:0/"}, "base_url", "port must be a number"),
        ({"base_url": "http://127.0.0.1:65536/"}, "base_url", "port must be a number"),
        ({"user_agent": "Bot\r\nX-Injected: 1"}, "user_agent", "printable ASCII"),
        ({"max_concurrency": "0"}, "max_concurrency", "from 1 to 64"),
        ({"exclude_patterns": '["(a)\\\\1"]'}, "exclude_patterns", "backreference"),
        ({"check_overrides": "[" * 100_000 + "]" * 100_000}, "check_overrides", "nested too deeply"),
        ({"include_patterns": "[" * 100_000 + "]" * 100_000}, "include_patterns", "nested too deeply"),
    ],
)
def test_project_admin_refuses_what_the_api_refuses(admin_client, project, change, field, words):
    response = admin_client.post("/admin/audits/project/add/", admin_project_data(project, **change))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert words in str(errors.get(field)), errors.as_data()
    assert not Project.objects.filter(name="Added").exists()


def test_project_admin_change_refusal_keeps_the_row(admin_client, project):
    ProjectFactory(owner=project.owner, name="Taken")
    url = f"/admin/audits/project/{project.id}/change/"
    response = admin_client.post(url, admin_project_data(project, name="Taken", max_pages="7"))
    assert "already have a project" in str(response.context["adminform"].form.errors["name"])
    project.refresh_from_db()
    assert project.name != "Taken" and project.max_pages != 7


def test_events_say_what_happened_in_the_admin(admin_client, project):
    audit = AuditFactory(project=project)
    AuditEvent.objects.create(
        audit=audit, kind="lease_expired", message="m", data={"round": 4, "chunks": 2, "lease_s": 60}
    )
    said = "Worker lost: 2 crawl chunks of round 4 stopped reporting for over 60 s and were handed to another worker."
    assert said in admin_client.get("/admin/audits/auditevent/").content.decode()
    assert said in admin_client.get(f"/admin/audits/audit/{audit.id}/change/").content.decode()


def test_the_admin_shows_check_overrides_as_indented_json_with_words_on_their_shape(admin_client, project):
    project.check_overrides = {"disabled": ["long-url"]}
    project.save()
    page = admin_client.get(f"/admin/audits/project/{project.id}/change/").content.decode()
    assert "{\n  &quot;disabled&quot;: [\n    &quot;long-url&quot;\n  ]\n}</textarea>" in page
    assert "The dashboard's project settings show them as fields." in page  # the admin marks help safe


def test_project_segments_inline_saves_through_the_service_and_shows_refusals(admin_client, project):
    url = f"/admin/audits/project/{project.id}/change/"
    rows = {
        "segments-TOTAL_FORMS": "1",
        "segments-0-name": "Blog",
        "segments-0-kind": "prefix",
        "segments-0-value": "/blog/",
        "segments-0-extractor": "",
        "segments-0-position": "0",
    }
    response = admin_client.post(url, {**admin_project_data(project, name=project.name), **rows})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert list(project.segments.values_list("name", "value")) == [("Blog", "/blog/")]

    refused = {**rows, "segments-0-name": "Docs", "segments-0-value": "docs/"}
    response = admin_client.post(url, {**admin_project_data(project, name=project.name), **refused})
    assert response.status_code == 200
    assert "starts with “/”" in response.content.decode()
    assert project.segments.count() == 1
