"""Server-rendered pages. Views are thin: they call selectors and render."""

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from audits.models import Audit


@login_required
def audit_list(request):
    audits = Audit.objects.filter(project__owner=request.user).select_related("project")[:100]
    return render(request, "audits/audit_list.html", {"audits": audits})


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
