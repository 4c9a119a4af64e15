"""URL map: admin, the REST API and the app's own routes."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from dashboard import share


class FaviconView(RedirectView):
    """Browsers ask for /favicon.ico on pages that link no icon (admin, API docs): send them to ours."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("favicon.svg")


urlpatterns = [
    path("favicon.ico", FaviconView.as_view()),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("api.urls")),
    # Read-only shared reports: no account, the token is the only key (dashboard/share.py).
    path("r/<str:token>/", share.shared_report, name="shared-report"),
    path("r/<str:token>/report.pdf", share.shared_report_pdf, name="shared-report-pdf"),
    path("", include("dashboard.urls")),
]

# Unknown URLs and requests Django refuses (a bad Host header) under /api/ answer problem JSON like the rest of
# the API; elsewhere Django's pages.
handler404 = "api.errors.page_not_found"
handler400 = "api.errors.bad_request"
