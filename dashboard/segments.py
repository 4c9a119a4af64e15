"""The project's segments screen: list, add, edit and delete a project's segments (audits.segments), with a preview
of the pages a segment holds on the project's last completed audit. The form has a field per input (no JSON); the
service judges every rule and its refusals show next to their field."""

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from audits.errors import AuditRefused
from audits.models import Segment
from audits.segments import (
    SEGMENT_NAME_MAX_CHARS,
    SEGMENT_REGEX_MAX_CHARS,
    SEGMENT_VALUE_MAX_CHARS,
    last_completed_audit,
    segment_description,
    segment_list,
    segment_preview_count,
    segment_table,
)
from audits.services import segment_create, segment_delete, segment_update
from dashboard import selectors as dashboard
from dashboard.views import dashboard_view

# The form's input for the value of each kind (the service has one `value`).
VALUE_FIELDS = {Segment.Kind.PREFIX: "prefix", Segment.Kind.REGEX: "pattern", Segment.Kind.EXTRACTION: "value"}


class SegmentForm(forms.Form):
    name = forms.CharField(label="Name", max_length=SEGMENT_NAME_MAX_CHARS, help_text="e.g. Blog, Product pages")
    kind = forms.ChoiceField(label="Pages whose…", choices=Segment.Kind.choices, widget=forms.RadioSelect)
    prefix = forms.CharField(
        label="URL path starts with",
        required=False,
        max_length=SEGMENT_VALUE_MAX_CHARS,
        help_text="The part after the host, e.g. /blog/",
    )
    pattern = forms.CharField(
        label="URL path matches",
        required=False,
        max_length=SEGMENT_REGEX_MAX_CHARS,
        help_text="A regular expression on the path and query, e.g. ^/(en|fr)/products/",
    )
    extractor = forms.ChoiceField(label="Custom extractor", required=False)
    value = forms.CharField(
        label="Extracted value is",
        required=False,
        max_length=SEGMENT_VALUE_MAX_CHARS,
        help_text="One of the extractor's values on the page, exactly",
    )
    position = forms.IntegerField(
        label="Position", required=False, min_value=0, help_text="Smaller first in lists; empty: last"
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        names = [e.get("name") for e in project.extractors or [] if isinstance(e, dict) and e.get("name")]
        self.fields["extractor"].choices = [("", "Choose an extractor…"), *((n, n) for n in names)]
        if not names:
            self.fields["extractor"].help_text = "This project has no custom extractors (see its settings)."

    @classmethod
    def initial_for(cls, segment: Segment) -> dict:
        return {
            "name": segment.name,
            "kind": segment.kind,
            VALUE_FIELDS[segment.kind]: segment.value,
            "extractor": segment.extractor,
            "position": segment.position,
        }

    def segment_fields(self) -> dict:
        """The cleaned values as the service's keyword arguments."""
        data = self.cleaned_data
        kind = data["kind"]
        return {
            "name": data["name"],
            "kind": kind,
            "value": data.get(VALUE_FIELDS.get(kind, "value")) or "",
            "extractor": data.get("extractor") or "",
            "position": data.get("position"),
        }

    def add_refusal(self, exc: AuditRefused) -> None:
        field = exc.field
        if field == "value":
            field = VALUE_FIELDS.get(self.cleaned_data.get("kind"), "value")
        self.add_error(field if field in self.fields else None, exc.message)


def _preview(project, form: SegmentForm) -> dict | None:
    """The pages a segment with the form's fields holds on the last completed audit; None when refused (the
    refusal is on the form)."""
    fields = form.segment_fields()
    try:
        audit, pages = segment_preview_count(
            project=project, kind=fields["kind"], value=fields["value"], extractor=fields["extractor"]
        )
    except AuditRefused as exc:
        form.add_refusal(exc)
        return None
    return {"audit": audit, "pages": pages, "of": audit.pages_crawled if audit else 0}


def _screen(request, project, form: SegmentForm, *, editing: Segment | None = None, preview=None, status=200):
    segments = list(segment_list(project=project))
    audit = last_completed_audit(project=project)
    counts = {}
    if audit is not None and segments:
        counts = {row.choice.segment_id: row for row in segment_table(audit=audit)}
    context = {
        "project": project,
        "segments": [
            (s, counts.get(s.id), segment_description(kind=s.kind, value=s.value, extractor=s.extractor))
            for s in segments
        ],
        "audit": audit,
        "form": form,
        "editing": editing,
        "preview": preview,
    }
    return render(request, "dashboard/segments.html", context, status=status)


@require_http_methods(["GET", "POST"])
@dashboard_view
def project_segments(request, project_id):
    """The project's segments and a form to add one ("Preview" counts its pages without saving)."""
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    form = SegmentForm(request.POST or None, project=project, initial={"kind": Segment.Kind.PREFIX})
    if request.method == "GET":
        return _screen(request, project, form)
    if not form.is_valid():
        return _screen(request, project, form, status=400)
    if request.POST.get("action") == "preview":
        preview = _preview(project, form)
        return _screen(request, project, form, preview=preview, status=200 if preview else 400)
    try:
        segment = segment_create(project=project, **form.segment_fields())
    except AuditRefused as exc:
        form.add_refusal(exc)
        return _screen(request, project, form, status=400)
    messages.success(request, f"Segment “{segment.name}” added.")
    return redirect("audits:project-segments", project_id=project.id)


def _segment_of(project, segment_id) -> Segment:
    segment = segment_list(project=project).filter(id=segment_id).first()
    if segment is None:
        raise Http404("No such segment")
    return segment


@require_http_methods(["GET", "POST"])
@dashboard_view
def project_segment_edit(request, project_id, segment_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    segment = _segment_of(project, segment_id)
    form = SegmentForm(request.POST or None, project=project, initial=SegmentForm.initial_for(segment))
    if request.method == "GET":
        return _screen(request, project, form, editing=segment)
    if not form.is_valid():
        return _screen(request, project, form, editing=segment, status=400)
    if request.POST.get("action") == "preview":
        preview = _preview(project, form)
        return _screen(request, project, form, editing=segment, preview=preview, status=200 if preview else 400)
    try:
        segment_update(segment=segment, **form.segment_fields())
    except AuditRefused as exc:
        segment.refresh_from_db()
        form.add_refusal(exc)
        return _screen(request, project, form, editing=segment, status=400)
    messages.success(request, f"Segment “{segment.name}” saved.")
    return redirect("audits:project-segments", project_id=project.id)


@require_POST
@dashboard_view
def project_segment_delete(request, project_id, segment_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    segment = _segment_of(project, segment_id)
    segment_delete(segment=segment)
    messages.success(request, f"Segment “{segment.name}” deleted.")
    return redirect("audits:project-segments", project_id=project.id)
