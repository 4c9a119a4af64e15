"""factory-boy factories for every model, with the deterministic ids the pipeline uses.

`PageFactory(audit=a, url=u).id == page_id_for(a.id, u)`, and likewise for issues (issue_id_for) and
Lighthouse runs (lighthouse_id_for), so a row a test makes is the row the pipeline would upsert.
Related rows default to the same audit (`SelfAttribute("..audit")`). A user's projects go to the
user's account, made on the default plan the first time, as the product does.
"""

import hashlib
from urllib.parse import urljoin, urlsplit

import factory
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import Account, ApiToken, CreditEntry, Membership, Plan, ReportBranding
from accounts.tokens import PREFIX_CHARS, TOKEN_SCHEME
from alerts.models import AlertChannel, AlertDelivery, AlertRule, Notification
from audits.models import (
    AgentFetch,
    Audit,
    AuditEvent,
    ExternalLink,
    Issue,
    LighthouseResult,
    Page,
    PageChange,
    PageCounts,
    Project,
    ReportEmail,
    ReportPdf,
    Schedule,
    Segment,
    ShareLink,
    agent_fetch_id_for,
    external_link_id_for,
    issue_id_for,
    lighthouse_id_for,
    page_change_id_for,
    page_id_for,
)
from audits.selectors.pages import HTML_TYPES
from scratchpad.models import CrawlChunk, Frontier, LinkEdge, ShapeText, SkippedURL, Throttle
from webhooks.models import Webhook, WebhookDelivery

PASSWORD = "pw-for-tests"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password(PASSWORD)


# --- accounts ---------------------------------------------------------------------------------------


class PlanFactory(factory.django.DjangoModelFactory):
    """The default plan unless named otherwise (get-or-create by name, as the product makes it)."""

    class Meta:
        model = Plan
        django_get_or_create = ("name",)

    name = factory.LazyFunction(lambda: settings.DEFAULT_PLAN_NAME)
    pages_per_audit = factory.LazyFunction(lambda: settings.DEFAULT_PLAN_PAGES_PER_AUDIT)
    running_audits = factory.LazyFunction(lambda: settings.DEFAULT_PLAN_RUNNING_AUDITS)
    monthly_units = factory.LazyFunction(lambda: settings.DEFAULT_PLAN_MONTHLY_UNITS)


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    name = factory.Sequence(lambda n: f"account-{n}")
    plan = factory.SubFactory(PlanFactory)


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    account = factory.SubFactory(AccountFactory, name=factory.SelfAttribute("..user.username"))


def account_of(user) -> Account:
    """The user's account; a personal one on the default plan the first time (as the product does)."""
    membership = Membership.objects.filter(user=user).select_related("account").first()
    return membership.account if membership else MembershipFactory(user=user).account


class ReportBrandingFactory(factory.django.DjangoModelFactory):
    """An account's report branding, without a logo (tests that need one save it through accounts.branding)."""

    class Meta:
        model = ReportBranding

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Agency {n}")
    contact = "hello@agency.test"
    accent_color = "#1f4e79"


class ApiTokenFactory(factory.django.DjangoModelFactory):
    """A token row. Its plaintext is not kept: a test that signs in with a token uses `token_create`."""

    class Meta:
        model = ApiToken

    class Params:
        plaintext = factory.Sequence(lambda n: f"{TOKEN_SCHEME}factory-token-{n:08d}-{'x' * 20}")

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"token {n}")
    prefix = factory.LazyAttribute(lambda t: t.plaintext[:PREFIX_CHARS])
    token_hash = factory.LazyAttribute(lambda t: hashlib.sha256(t.plaintext.encode()).hexdigest())


# --- projects and audits ----------------------------------------------------------------------------


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    owner = factory.SubFactory(UserFactory)
    account = factory.LazyAttribute(lambda p: account_of(p.owner))
    name = factory.Sequence(lambda n: f"project-{n}")
    base_url = "http://127.0.0.1:1/"
    max_pages = 1000
    # Off in tests unless a test turns it on: the test sites link to example.org, and nothing leaves the machine.
    check_external_links = False


class AuditFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Audit

    project = factory.SubFactory(ProjectFactory)
    start_url = factory.LazyAttribute(lambda a: a.project.base_url)
    site_url = factory.LazyAttribute(lambda a: a.start_url)
    config = factory.LazyAttribute(lambda a: {"max_pages": a.project.max_pages})


class CreditEntryFactory(factory.django.DjangoModelFactory):
    """A ledger entry of an audit (a reservation of its page budget unless told otherwise)."""

    class Meta:
        model = CreditEntry

    audit = factory.SubFactory(AuditFactory)
    account = factory.LazyAttribute(lambda c: c.audit.project.account)
    audit_ref = factory.LazyAttribute(lambda c: c.audit.id)
    kind = CreditEntry.Kind.RESERVE
    units = factory.LazyAttribute(lambda c: c.audit.max_pages)


class AuditEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditEvent

    audit = factory.SubFactory(AuditFactory)
    kind = AuditEvent.Kind.STARTED
    message = factory.LazyAttribute(lambda e: f"Audit {e.kind}")


class ScheduleFactory(factory.django.DjangoModelFactory):
    """A schedule row without its beat task (`schedule_set` makes both; use it when beat matters)."""

    class Meta:
        model = Schedule

    project = factory.SubFactory(ProjectFactory)
    kind = Schedule.Kind.DAILY
    cron = "0 3 * * *"


class SegmentFactory(factory.django.DjangoModelFactory):
    """A path-prefix segment of a project (`kind`/`value`/`extractor` for the other kinds)."""

    class Meta:
        model = Segment

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"segment-{n}")
    kind = Segment.Kind.PREFIX
    value = factory.Sequence(lambda n: f"/section-{n}/")
    extractor = ""
    position = factory.Sequence(lambda n: n)


def _url_on_site(obj, n: int, prefix: str) -> str:
    return urljoin(obj.audit.site_url or obj.audit.start_url, f"{prefix}-{n}")


class PageFactory(factory.django.DjangoModelFactory):
    """A fetched, indexable HTML page of the audit's site; id = page_id_for(audit, url)."""

    class Meta:
        model = Page

    audit = factory.SubFactory(AuditFactory)
    url = factory.LazyAttributeSequence(lambda p, n: _url_on_site(p, n, "page"))
    id = factory.LazyAttribute(lambda p: page_id_for(p.audit.id, p.url))
    status_code = 200
    fetch_class = Page.FetchClass.OK
    content_type = "text/html"
    title = factory.LazyAttribute(lambda p: f"Title of {urlsplit(p.url).path}")
    is_indexable = True
    depth = 1
    word_count = 300
    response_time_ms = 120
    fetched_at = factory.LazyFunction(timezone.now)


class PageCountsFactory(factory.django.DjangoModelFactory):
    """A page's stored counts as finalize writes them (audits.pipeline.page_totals): audit, URL and sort keys are
    the page's, the URL's rank its place among the audit's pages made so far."""

    class Meta:
        model = PageCounts

    page = factory.SubFactory(PageFactory)
    audit = factory.SelfAttribute("page.audit")
    url = factory.SelfAttribute("page.url")
    url_rank = factory.LazyAttribute(lambda o: Page.objects.filter(audit=o.page.audit, url__lte=o.page.url).count())
    inlinks = 3
    inlink_pages = 2
    issues = 1
    status_code = factory.SelfAttribute("page.status_code")
    depth = factory.SelfAttribute("page.depth")
    title = factory.SelfAttribute("page.title")
    title_len = factory.LazyAttribute(lambda o: len(o.page.title))
    description_len = factory.LazyAttribute(lambda o: len(o.page.meta_description or ""))
    h1 = factory.SelfAttribute("page.h1")
    h1_len = factory.LazyAttribute(lambda o: len(o.page.h1))
    h1_count = factory.SelfAttribute("page.h1_count")
    response_time_ms = factory.SelfAttribute("page.response_time_ms")
    bytes = factory.SelfAttribute("page.bytes")
    word_count = factory.SelfAttribute("page.word_count")
    html = factory.LazyAttribute(lambda o: (o.page.status_code or 0) // 100 == 2 and o.page.content_type in HTML_TYPES)


class IssueFactory(factory.django.DjangoModelFactory):
    """An issue on a page of the same audit (`page=None` for a site-wide one); id = issue_id_for(…)."""

    class Meta:
        model = Issue

    class Params:
        dedupe_key = ""

    audit = factory.SubFactory(AuditFactory)
    page = factory.SubFactory(PageFactory, audit=factory.SelfAttribute("..audit"))
    page_url = factory.LazyAttribute(lambda i: i.page.url if i.page else "")
    type = "missing-meta-description"
    severity = Issue.Severity.WARNING
    id = factory.LazyAttribute(lambda i: issue_id_for(i.audit.id, i.page_url, i.type, i.dedupe_key))


class LighthouseResultFactory(factory.django.DjangoModelFactory):
    """A successful run on a page of the same audit; id = lighthouse_id_for(audit, page, strategy).

    Pass the layout shift as `cls_score` (it lands in the `cls` column)."""

    class Meta:
        model = LighthouseResult
        skip_postgeneration_save = True

    audit = factory.SubFactory(AuditFactory)
    page = factory.SubFactory(PageFactory, audit=factory.SelfAttribute("..audit"))
    url = factory.LazyAttribute(lambda r: r.page.url)
    strategy = LighthouseResult.Strategy.MOBILE
    status = LighthouseResult.Status.OK
    id = factory.LazyAttribute(lambda r: lighthouse_id_for(r.audit.id, r.page.id, r.strategy))
    performance = 90
    accessibility = 90
    best_practices = 100
    seo = 90

    @factory.post_generation
    def cls_score(obj, create, extracted, **kwargs):
        """The `cls` column: that name clashes with factory_boy's own arguments, so it is set afterwards."""
        if extracted is not None:
            obj.cls = extracted
            if create:
                obj.save(update_fields=["cls"])


class ExternalLinkFactory(factory.django.DjangoModelFactory):
    """A distinct external target of the audit, checked and answering 200 (id = external_link_id_for(audit, url)).
    The pages linking to it are LinkEdge rows with internal=False and this target_url (make them beside it)."""

    class Meta:
        model = ExternalLink

    audit = factory.SubFactory(AuditFactory)
    url = factory.Sequence(lambda n: f"https://elsewhere-{n}.example/page")
    id = factory.LazyAttribute(lambda e: external_link_id_for(e.audit.id, e.url))
    host = factory.LazyAttribute(lambda e: urlsplit(e.url).hostname or "")
    outcome = ExternalLink.Outcome.OK
    status_code = 200
    method = "HEAD"
    linking_pages = 1
    response_time_ms = 80
    checked_at = factory.LazyFunction(timezone.now)


# --- crawl state (scratchpad) -----------------------------------------------------------------------


class FrontierFactory(factory.django.DjangoModelFactory):
    """A pending, link-discovered URL of the audit's site."""

    class Meta:
        model = Frontier

    audit = factory.SubFactory(AuditFactory)
    url = factory.LazyAttributeSequence(lambda f, n: _url_on_site(f, n, "url"))
    depth = 1
    source = Frontier.Source.LINK


class LinkEdgeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LinkEdge

    audit = factory.SubFactory(AuditFactory)
    source_page = factory.SubFactory(PageFactory, audit=factory.SelfAttribute("..audit"))
    target_url = factory.LazyAttributeSequence(lambda e, n: _url_on_site(e, n, "target"))
    anchor_text = "a link"


class ThrottleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Throttle
        django_get_or_create = ("audit",)

    audit = factory.SubFactory(AuditFactory)


class CrawlChunkFactory(factory.django.DjangoModelFactory):
    """A chunk of round 1, queued; its lease key has the shape the pipeline gives (audit:rN:cI)."""

    class Meta:
        model = CrawlChunk

    audit = factory.SubFactory(AuditFactory)
    round_no = 1
    lease_key = factory.LazyAttributeSequence(lambda o, n: f"{o.audit.id}:r{o.round_no}:c{n}")
    quota = 25
    sent_at = factory.LazyFunction(timezone.now)


class SkippedURLFactory(factory.django.DjangoModelFactory):
    """A calendar URL a trap rule refused, as scratchpad.services._insert_new records it."""

    class Meta:
        model = SkippedURL

    audit = factory.SubFactory(AuditFactory)
    url = factory.Sequence(lambda n: f"https://example.com/events/{2090 + n}-01")
    rule = "calendar"
    pattern = "/events/{date}"


class ShapeTextFactory(factory.django.DjangoModelFactory):
    """Crawled pages of one shape sharing one main text, as scratchpad.services.shape_texts_record counts them."""

    class Meta:
        model = ShapeText

    audit = factory.SubFactory(AuditFactory)
    pattern = factory.Sequence(lambda n: f"/list{n}/{{n}}/")
    text_hash = "3f786850e387550f"
    pages = 12


class ShareLinkFactory(factory.django.DjangoModelFactory):
    """A live share link; the plaintext token is `token` (only its sha256 is stored, as audits.sharing does)."""

    class Meta:
        model = ShareLink
        exclude = ("token",)

    audit = factory.SubFactory(AuditFactory)
    token = factory.Sequence(lambda n: f"share-token-{n:06d}")
    token_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.token.encode()).hexdigest())
    label = "client"
    # a link works while its creator has access to the audit's account (audits.sharing)
    created_by = factory.SelfAttribute("audit.project.owner")


class ReportPdfFactory(factory.django.DjangoModelFactory):
    """A report PDF asked for and not yet printed (audits.report_pdfs sets file and status when it is)."""

    class Meta:
        model = ReportPdf

    audit = factory.SubFactory(AuditFactory, status=Audit.Status.COMPLETED)
    fingerprint = factory.Sequence(lambda n: hashlib.sha256(f"report-{n}".encode()).hexdigest())
    requested_at = factory.LazyFunction(timezone.now)


class ReportEmailFactory(factory.django.DjangoModelFactory):
    """A scheduled audit's report e-mail waiting in the outbox (audits.report_emails claims and sends it)."""

    class Meta:
        model = ReportEmail

    audit = factory.SubFactory(AuditFactory, status=Audit.Status.COMPLETED, scheduled=True)
    recipients = factory.LazyFunction(lambda: ["client@example.test"])
    next_attempt_at = factory.LazyFunction(timezone.now)


# --- webhooks ---------------------------------------------------------------------------------------


class WebhookFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Webhook

    project = factory.SubFactory(ProjectFactory)
    url = "http://127.0.0.1:9/hooks/sitewarden"
    secret = factory.Sequence(lambda n: f"webhook-secret-{n:04d}")


class WebhookDeliveryFactory(factory.django.DjangoModelFactory):
    """A pending audit-finished delivery for an audit of the webhook's project."""

    class Meta:
        model = WebhookDelivery

    webhook = factory.SubFactory(WebhookFactory)
    audit = factory.SubFactory(AuditFactory, project=factory.SelfAttribute("..webhook.project"))
    audit_ref = factory.LazyAttribute(lambda d: d.audit.id)
    event = "audit.finished"
    payload = factory.LazyAttribute(lambda d: {"event": d.event, "audit": {"id": str(d.audit.id)}})


class AgentFetchFactory(factory.django.DjangoModelFactory):
    """A sampled page as one agent of the bot pass was served it (id = agent_fetch_id_for(audit, url, agent))."""

    class Meta:
        model = AgentFetch

    audit = factory.SubFactory(AuditFactory)
    url = factory.LazyAttribute(lambda f: f.audit.start_url)
    agent = "browser"
    id = factory.LazyAttribute(lambda f: agent_fetch_id_for(f.audit.id, f.url, f.agent))
    status_code = 200
    title = "A page"
    main_words = 300
    fetched_at = factory.LazyFunction(timezone.now)


class PageChangeFactory(factory.django.DjangoModelFactory):
    """A title changed on one URL between an audit and its baseline (id = page_change_id_for(audit, url, field))."""

    class Meta:
        model = PageChange

    audit = factory.SubFactory(AuditFactory)
    baseline = factory.SubFactory(AuditFactory, project=factory.SelfAttribute("..audit.project"))
    url = factory.LazyAttribute(lambda f: f.audit.start_url)
    field = PageChange.Field.TITLE
    direction = PageChange.Direction.CHANGED
    before = "Old title"
    after = "New title"
    id = factory.LazyAttribute(lambda f: page_change_id_for(f.audit.id, f.url, f.field))


class AlertRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AlertRule

    project = factory.SubFactory(ProjectFactory)
    kind = AlertRule.Kind.NEW_CRITICAL


class AlertChannelFactory(factory.django.DjangoModelFactory):
    """A Slack-style channel pointing at a receiver the test serves."""

    class Meta:
        model = AlertChannel

    project = factory.SubFactory(ProjectFactory)
    kind = AlertChannel.Kind.SLACK
    target = "http://127.0.0.1:9/hooks/slack"


class AlertDeliveryFactory(factory.django.DjangoModelFactory):
    """A pending alert of an audit of the channel's project."""

    class Meta:
        model = AlertDelivery

    channel = factory.SubFactory(AlertChannelFactory)
    audit = factory.SubFactory(AuditFactory, project=factory.SelfAttribute("..channel.project"))
    audit_ref = factory.LazyAttribute(lambda d: d.audit.id)
    payload = factory.LazyAttribute(lambda d: {"subject": "An alert", "findings": []})


class NotificationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Notification

    user = factory.SubFactory(UserFactory)
    project = factory.SubFactory(ProjectFactory)
    audit = factory.SubFactory(AuditFactory, project=factory.SelfAttribute("..project"))
    audit_ref = factory.LazyAttribute(lambda n: n.audit.id)
    title = "2 indexable pages became non-indexable"
