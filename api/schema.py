"""OpenAPI details drf-spectacular cannot infer: the bearer scheme and the problem responses."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from api.errors import PROBLEM_CONTENT_TYPE, ProblemSerializer


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`sw_…`) as `Authorization: Bearer <token>`; `Token <token>` works too.",
        }


class ApiAutoSchema(AutoSchema):
    """Every operation documents the problem+json answers it can give."""

    error_codes = ("400", "401", "403", "404", "429")
    write_error_codes = ("402", "409")

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        codes = list(self.error_codes)
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            codes += self.write_error_codes
        if getattr(self.view, "needs_page_rows", False):
            codes.append("409")  # audit_summarised: retention pruned the audit's page-level rows
        for code in codes:
            if code not in responses:
                responses[code] = self._get_response_for_code(
                    ProblemSerializer, code, media_types=[PROBLEM_CONTENT_TYPE]
                )
        return responses
