"""API exports: the dashboard's streamed files (audits.exports) through the API — issues and pages as CSV or JSON,
the issues workbook, external link targets and their linking pages, changes against the baseline, one issue
type's evidence. CSV or JSON whatever Accept says (`_FirstRenderer`)."""

from django.http import FileResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from api import result_serializers as s
from api.views import SEGMENT_PARAMETER, ApiMixin, _issues_q, _pages_q
from audits import exports
from audits.checks.registry import CHECKS_BY_TYPE
from audits.models import PageChange


class _FirstRenderer(BaseContentNegotiation):
    """Exports answer CSV or JSON whatever Accept says; errors are rendered as JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


EXPORTS = {
    ("issues", "csv"): (exports.issues_csv_rows, exports.CSV_CONTENT_TYPE),
    ("issues", "json"): (exports.issues_json_chunks, exports.JSON_CONTENT_TYPE),
    ("pages", "csv"): (exports.pages_csv_rows, exports.CSV_CONTENT_TYPE),
    ("pages", "json"): (exports.pages_json_chunks, exports.JSON_CONTENT_TYPE),
}


class _Export(ApiMixin, APIView):
    """The dashboard's streamed exports (audits.exports): the same files, through the API."""

    needs_page_rows = True

    kind = ""  # issues | pages
    fmt = ""  # csv | json
    content_negotiation_class = _FirstRenderer
    pagination_class = None
    filter_backends = []

    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        segment = self.segment_for(audit)
        chunks, content_type = EXPORTS[(self.kind, self.fmt)]
        restriction = _issues_q(segment) if self.kind == "issues" else _pages_q(segment)
        response = StreamingHttpResponse(chunks(audit, **restriction), content_type=content_type)
        filename = exports.export_filename(audit, self.kind, self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _export_view(kind: str, fmt: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export the audit's {kind} as {fmt.upper()} (streamed)",
        parameters=[SEGMENT_PARAMETER],
        responses={(200, media): schema},
    )
    return decorated(type(f"{kind.title()}{fmt.upper()}Export", (_Export,), {"kind": kind, "fmt": fmt}))


class _IssuesXlsxExport(_Export):
    """The dashboard's workbook (audits.exports.issues_xlsx_file): Overview plus one sheet per issue type."""

    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        segment = self.segment_for(audit)
        return FileResponse(
            exports.issues_xlsx_file(audit, segment_name=segment.name if segment else "", **_issues_q(segment)),
            as_attachment=True,
            filename=exports.export_filename(audit, "issues", "xlsx"),
            content_type=exports.XLSX_CONTENT_TYPE,
        )


IssuesXlsxExport = extend_schema(
    tags=["exports"],
    summary="Export the audit's issues as an XLSX workbook (an Overview sheet, one sheet per issue type)",
    parameters=[SEGMENT_PARAMETER],
    responses={(200, exports.XLSX_CONTENT_TYPE): OpenApiTypes.BINARY},
)(_IssuesXlsxExport)
IssuesCsvExport = _export_view("issues", "csv")
IssuesJsonExport = _export_view("issues", "json")
PagesCsvExport = _export_view("pages", "csv")
PagesJsonExport = _export_view("pages", "json")

EXTERNAL_EXPORTS = {  # the dashboard's External screen's exports (dashboard.external_views)
    ("external-links", "csv"): (exports.external_links_csv_rows, exports.CSV_CONTENT_TYPE),
    ("external-links", "json"): (exports.external_links_json_chunks, exports.JSON_CONTENT_TYPE),
    ("external-link-pages", "csv"): (exports.external_link_pages_csv_rows, exports.CSV_CONTENT_TYPE),
    ("external-link-pages", "json"): (exports.external_link_pages_json_chunks, exports.JSON_CONTENT_TYPE),
}


class _ExternalExport(_Export):
    """The audit's external targets, or their linking pages, as the dashboard exports them (the whole site's)."""

    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        chunks, content_type = EXTERNAL_EXPORTS[(self.kind, self.fmt)]
        response = StreamingHttpResponse(chunks(audit), content_type=content_type)
        filename = exports.export_filename(audit, self.kind, self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _external_export_view(kind: str, fmt: str, what: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export the audit's {what} as {fmt.upper()} (streamed)",
        responses={(200, media): schema},
    )
    name = "".join(part.title() for part in kind.split("-"))
    return decorated(type(f"{name}{fmt.upper()}Export", (_ExternalExport,), {"kind": kind, "fmt": fmt}))


_TARGETS = "external link targets (one row per target)"
_LINKING = "external links' linking pages (one row per target and page, with the anchor)"
ExternalLinksCsvExport = _external_export_view("external-links", "csv", _TARGETS)
ExternalLinksJsonExport = _external_export_view("external-links", "json", _TARGETS)
ExternalLinkPagesCsvExport = _external_export_view("external-link-pages", "csv", _LINKING)
ExternalLinkPagesJsonExport = _external_export_view("external-link-pages", "json", _LINKING)


class _ChangesExport(_Export):
    """The audit's changes against its baseline (url, field, direction, before, after), filtered like the list."""

    def get(self, request, pk):
        audit = self.audit_or_404(pk)
        segment = self.segment_for(audit)
        query = s.ChangeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        chunks = exports.changes_csv_rows if self.fmt == "csv" else exports.changes_json_chunks
        content_type = exports.CSV_CONTENT_TYPE if self.fmt == "csv" else exports.JSON_CONTENT_TYPE
        response = StreamingHttpResponse(
            chunks(audit, segment=segment, **{k: v for k, v in query.validated_data.items() if v}),
            content_type=content_type,
        )
        filename = exports.export_filename(audit, "changes", self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _changes_export_view(fmt: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export the audit's changes against its baseline as {fmt.upper()} (streamed)",
        description="One row per URL and field: url, field, direction, before, after; by URL. The filters of "
        "GET /audits/{id}/changes/ apply.",
        parameters=[
            OpenApiParameter("field", str, OpenApiParameter.QUERY, enum=PageChange.Field.values),
            OpenApiParameter("direction", str, OpenApiParameter.QUERY, enum=PageChange.Direction.values),
            SEGMENT_PARAMETER,
        ],
        responses={(200, media): schema},
    )
    return decorated(type(f"Changes{fmt.upper()}Export", (_ChangesExport,), {"kind": "changes", "fmt": fmt}))


ChangesCsvExport = _changes_export_view("csv")
ChangesJsonExport = _changes_export_view("json")

ISSUE_TYPE_EXPORTS = {  # the dashboard's per-type exports (dashboard.issue_views.audit_issue_type_export)
    "csv": (exports.issue_type_csv_rows, exports.CSV_CONTENT_TYPE),
    "json": (exports.issue_type_json_chunks, exports.JSON_CONTENT_TYPE),
}


class _IssueTypeExport(_Export):
    """One issue type's evidence in its named columns (audits.evidence), as the dashboard exports it."""

    def get(self, request, pk, issue_type):
        audit = self.audit_with_rows_or_404(pk)
        if issue_type not in CHECKS_BY_TYPE:
            raise exceptions.NotFound(f"No such issue type: {issue_type[:100]!r}.")
        segment = self.segment_for(audit)
        chunks, content_type = ISSUE_TYPE_EXPORTS[self.fmt]
        response = StreamingHttpResponse(chunks(audit, issue_type, **_issues_q(segment)), content_type=content_type)
        filename = exports.export_filename(audit, f"issues-{issue_type}", self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _issue_type_export_view(fmt: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export one issue type's evidence as {fmt.upper()} (streamed)",
        description=(
            "The rows of the type's evidence table in the dashboard, with the same named columns "
            "(the JSON objects have the CSV's column keys). An unknown type answers 404 not_found."
        ),
        parameters=[
            OpenApiParameter(
                "issue_type", str, OpenApiParameter.PATH, description="An issue type", enum=sorted(CHECKS_BY_TYPE)
            ),
            SEGMENT_PARAMETER,
        ],
        responses={(200, media): schema},
    )
    return decorated(type(f"IssueType{fmt.upper()}Export", (_IssueTypeExport,), {"kind": "issue-type", "fmt": fmt}))


IssueTypeCsvExport = _issue_type_export_view("csv")
IssueTypeJsonExport = _issue_type_export_view("json")
