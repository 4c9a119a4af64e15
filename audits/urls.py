from django.urls import path

from audits import views

app_name = "audits"
urlpatterns = [
    path("", views.audit_list, name="audit-list"),
    path("healthz", views.healthz, name="healthz"),
]
