"""URL map: admin, the REST API and the app's own routes."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("api.urls")),
    path("", include("dashboard.urls")),
]

# Unknown URLs under /api/ answer problem JSON like the rest of the API; elsewhere Django's 404 page.
handler404 = "api.errors.page_not_found"
