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

# Unknown URLs, refused requests (a bad Host header) and unhandled errors under /api/ answer problem JSON like the
# rest of the API; elsewhere the product's own pages (templates/404.html, 400, 403, 500). Django's debug pages
# appear only with DEBUG on (DJANGO_DEBUG=true), never by default.
handler404 = "api.errors.page_not_found"
handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler500 = "api.errors.server_error"
