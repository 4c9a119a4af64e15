"""Report branding (accounts.branding, dashboard/branding.py): the settings screen saves name, contact, accent colour,
logo and paper size per account through the one service; a colour that is not #rrggbb, a logo over the size limit,
an SVG (whatever it is called) and a file that only pretends to be an image are refused beside their field; the
admin writes through the same service. In the browser: the screen and the branded shared report at 1440 and
390 px (no overflow, axe-core, screenshots)."""

import re
import struct
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from accounts.branding import LOGO_MAX_BYTES, branding_for_account, logo_check, report_branding_save
from accounts.models import ReportBranding
from audits.errors import AuditRefused
from audits.sharing import share_link_create
from tests.dashboard.conftest import PASSWORD
from tests.dashboard.test_browser import sign_in
from tests.dashboard.test_report import png_bytes
from tests.factories import UserFactory, account_of
from tests.support.browser import chromium_browser, serious_axe_violations

URL = reverse("audits:report-branding")
SHOTS = Path("/tmp/report-shots")
SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


# A real 48×16 JPEG (Chromium's screenshot of two coloured boxes), so Pillow, where installed, accepts it too.
JPEG = (Path(__file__).parent / "fixtures" / "logo.jpg").read_bytes()


def jpeg_header(width: int, height: int) -> bytes:
    """A JPEG's start: SOI, a JFIF APP0 and a baseline start-of-frame with its size (what logo_check reads first)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def _post(client, **fields):
    data = {"name": "Northwind", "contact": "ada@northwind.test", "accent_color": "#1f4e79", "paper_size": "A4"}
    data.update(fields)
    return client.post(URL, data)


@pytest.mark.django_db
def test_the_screen_is_in_the_navigation_and_saves_the_branding(owner_client, owner, results):
    page = owner_client.get(reverse("audits:project-list")).content.decode()
    assert f'href="{URL}"' in page and "Report branding" in page
    screen = owner_client.get(URL).content.decode()
    preview = reverse("audits:audit-report-preview", args=[results.audit.id])
    assert preview in screen  # the newest ended audit's report, to see the branding on

    logo = SimpleUploadedFile("logo.png", png_bytes(), content_type="image/png")
    response = _post(owner_client, accent_color="#FF8800", paper_size="Letter", logo=logo)
    assert response.status_code == 302 and response["Location"] == URL
    row = ReportBranding.objects.get(account=account_of(owner))
    assert (row.name, row.contact, row.accent_color, row.paper_size, row.logo_type) == (
        "Northwind",
        "ada@northwind.test",
        "#ff8800",
        "Letter",
        "image/png",
    )
    assert bytes(row.logo) == png_bytes()
    assert "Report branding saved" in owner_client.get(URL).content.decode()

    # saved again without a file: the logo stays; "remove" drops it
    _post(owner_client, name="Northwind Digital")
    row.refresh_from_db()
    assert row.name == "Northwind Digital" and row.logo_type == "image/png"
    _post(owner_client, name="Northwind Digital", remove_logo="on")
    row.refresh_from_db()
    assert row.logo_type == "" and bytes(row.logo) == b""

    # a JPEG is a logo too
    _post(
        owner_client,
        name="Northwind Digital",
        logo=SimpleUploadedFile("logo.jpg", JPEG, content_type="image/jpeg"),
    )
    assert ReportBranding.objects.get(id=row.id).logo_type == "image/jpeg"

    # the shared report shows it (the name on the cover)
    token = share_link_create(audit=results.audit, created_by=owner)[1]
    shared = Client().get(reverse("shared-report", args=[token]))
    html = shared.content.decode()
    assert "Northwind Digital" in html and "data:image/jpeg;base64," in html
    nonce = re.search(r"style-src 'self' 'nonce-([^']+)'", shared["Content-Security-Policy"]).group(1)
    assert f'<style nonce="{nonce}">.client-report {{ --accent: #1f4e79;' in html
    assert "script-src 'self';" in shared["Content-Security-Policy"]  # no script admitted


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"accent_color": "red"}, "accent_color", "#rrggbb"),
        ({"accent_color": "#12345g"}, "accent_color", "#rrggbb"),
        ({"accent_color": "#fff"}, "accent_color", "#rrggbb"),
        ({"accent_color": "#ffffff;}body{x:1"}, "accent_color", ""),  # too long for the field, or not #rrggbb
        ({"paper_size": "A3"}, "paper_size", ""),
        ({"logo": ("big.png", png_bytes() + b"\0" * LOGO_MAX_BYTES, "image/png")}, "logo", "at most 512 KB"),
        ({"logo": ("logo.svg", SVG, "image/svg+xml")}, "logo", "SVG"),
        ({"logo": ("logo.png", SVG, "image/png")}, "logo", "SVG"),  # its name and type say PNG; its bytes do not
        ({"logo": ("logo.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, "image/png")}, "logo", "damaged"),
        ({"logo": ("huge.png", png_bytes(5000, 10), "image/png")}, "logo", "at most 4000 px"),
        ({"logo": ("huge.jpg", jpeg_header(100, 9000), "image/jpeg")}, "logo", "100×9000 px"),
    ],
)
def test_bad_branding_is_refused_beside_its_field(owner_client, owner, fields, field, message):
    if "logo" in fields:
        name, data, content_type = fields["logo"]
        fields = {"logo": SimpleUploadedFile(name, data, content_type=content_type)}
    response = _post(owner_client, **fields)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert not ReportBranding.objects.exists()
    html = response.content.decode()
    assert f'id="id_{field}_error"' in html or field == "paper_size"


@pytest.mark.django_db
def test_the_service_checks_everything_itself(owner):
    account = account_of(owner)
    for bad in ({"accent_color": "blue"}, {"paper_size": "A5"}, {"logo": SVG}):
        with pytest.raises(AuditRefused) as refused:
            report_branding_save(
                account=account, **{"name": "", "contact": "", "accent_color": "#000000", "paper_size": "A4", **bad}
            )
        assert refused.value.code == "invalid_branding" and refused.value.status == 400
    assert logo_check(JPEG) == "image/jpeg" and logo_check(png_bytes()) == "image/png"
    assert not ReportBranding.objects.exists()


@pytest.mark.django_db
def test_branding_is_per_account(owner_client, owner, stranger):
    _post(owner_client, name="Owner's agency")
    assert branding_for_account(account_id=account_of(owner).id).name == "Owner's agency"
    theirs = branding_for_account(account_id=account_of(stranger).id)
    assert theirs.name == "Sitewarden" and not theirs.is_set
    other = Client()
    other.force_login(stranger)
    assert "Owner&#x27;s agency" not in other.get(URL).content.decode()


@pytest.mark.django_db
def test_the_admin_writes_through_the_service(owner):
    admin_user = UserFactory(username="operator", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin_user)
    account = account_of(owner)
    add = reverse("admin:accounts_reportbranding_add")
    data = {"account": account.id, "name": "Ops", "contact": "", "accent_color": "#abcdef", "paper_size": "A4"}
    refused = client.post(add, {**data, "logo_upload": SimpleUploadedFile("x.png", SVG, content_type="image/png")})
    assert refused.status_code == 200 and "SVG" in refused.content.decode()
    assert client.post(add, {**data, "accent_color": "nope"}).status_code == 200
    assert not ReportBranding.objects.exists()
    saved = client.post(
        add, {**data, "logo_upload": SimpleUploadedFile("x.png", png_bytes(), content_type="image/png")}
    )
    assert saved.status_code == 302
    row = ReportBranding.objects.get(account=account)
    assert (row.name, row.accent_color, row.logo_type) == ("Ops", "#abcdef", "image/png")

    change = reverse("admin:accounts_reportbranding_change", args=[row.id])
    assert client.get(change).status_code == 200
    edited = {"name": "Ops team", "contact": "ops@x.test", "accent_color": "#ABCDEF", "paper_size": "Letter"}
    assert client.post(change, edited).status_code == 302
    row.refresh_from_db()
    assert (row.name, row.accent_color, row.paper_size, row.logo_type) == ("Ops team", "#abcdef", "Letter", "image/png")
    assert ReportBranding.objects.count() == 1


# --- in a real browser ----------------------------------------------------------------------------------------


def _check(tab, name: str) -> None:
    for width in (1440, 390):
        tab.set_viewport_size({"width": width, "height": 900})
        tab.reload()
        overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (name, width, overflow)
        assert serious_axe_violations(tab) == [], (name, width)
        tab.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_branding_screen_and_branded_report_in_the_browser(live_server, owner, tmp_path, settings):
    """Set the branding on the screen (a logo uploaded, gold accent), then open the shared report: its cover
    carries the name, the contact, the logo, and black text on the gold band; nothing overflows at 390 px."""
    from tests.dashboard.conftest import finished_audit, make_issue, make_page
    from tests.factories import ProjectFactory

    settings.MEDIA_ROOT = str(tmp_path / "media")
    SHOTS.mkdir(parents=True, exist_ok=True)
    owner.set_password(PASSWORD)
    owner.save()
    project = ProjectFactory(owner=owner, name="Shop with a rather long project name for the cover")
    audit = finished_audit(project)
    for i in range(12):
        page = make_page(audit, f"/blog/{'a-very-long-slug-without-any-break-' * 3}{i}")
        make_issue(audit, page, "missing-h1", "warning")
    make_issue(audit, None, "sitemap-missing", "info")
    logo = tmp_path / "logo.png"
    logo.write_bytes(png_bytes(120, 40, (20, 60, 160)))

    with chromium_browser() as browser:
        context = browser.new_context()
        tab = context.new_page()
        errors: list = []
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        sign_in(tab, live_server, owner.username)
        tab.get_by_role("link", name="Report branding").click()
        tab.get_by_label("Prepared by").fill("Northwind SEO Partners")
        tab.get_by_label("Contact line").fill("Ada Lovelace · ada@northwind.test · +44 20 7946 0000")
        tab.get_by_label("Accent colour").fill("#ffd700")
        tab.get_by_label("Logo").set_input_files(str(logo))
        tab.get_by_label("US Letter").check()
        tab.get_by_role("button", name="Save branding").click()
        tab.get_by_text("Report branding saved").wait_for()
        assert tab.get_by_role("img", name="Current logo").is_visible()
        _check(tab, "branding")

        token = share_link_create(audit=audit, created_by=owner)[1]
        reader = browser.new_context().new_page()
        reader.goto(live_server.url + reverse("shared-report", args=[token]))
        cover = reader.locator(".cover-band")
        assert "Northwind SEO Partners" in reader.locator(".report-cover").inner_text()
        assert cover.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 215, 0)"
        assert cover.evaluate("e => getComputedStyle(e).color") == "rgb(0, 0, 0)"  # black reads on gold
        assert reader.get_by_role("img", name="Northwind SEO Partners").is_visible()
        assert reader.locator(".example-url").count() == 10 + 1  # ten H1 examples and the site-wide one
        _check(reader, "shared-branded")
        assert errors == []
        context.close()


@pytest.mark.slow
@pytest.mark.django_db
def test_generated_branding_input_never_answers_5xx(owner_client):
    """Hypothesis through the branding form (tests/dashboard/test_forms_fuzz.py's way): any text, colour, paper and
    file bytes (including ones that start like a PNG or a JPEG) get a saved branding or a form error, never a 5xx."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.dashboard.test_forms_fuzz import TEXT

    magic = st.sampled_from([b"", b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", b"\xff\xd8\xff", b"<svg"])
    logo = st.one_of(st.none(), st.tuples(magic, st.binary(max_size=300)).map(lambda parts: parts[0] + parts[1]))
    colour = st.one_of(TEXT, st.from_regex(r"\A#[0-9a-fA-F]{6}\Z"), st.sampled_from(["#ffffff", "#ffffff\x00"]))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        name=TEXT,
        contact=TEXT,
        accent=colour,
        paper=st.one_of(st.sampled_from(["A4", "Letter"]), TEXT),
        data=logo,
        remove=st.booleans(),
    )
    def post(name, contact, accent, paper, data, remove):
        fields = {"name": name, "contact": contact, "accent_color": accent, "paper_size": paper}
        if data is not None:
            fields["logo"] = SimpleUploadedFile("logo.png", data, content_type="image/png")
        if remove:
            fields["remove_logo"] = "on"
        response = owner_client.post(URL, fields)
        assert response.status_code in (302, 400), response.status_code

    post()
