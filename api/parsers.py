"""The API's JSON parser: DRF's, except that
- a body nested too deep for Python's json is a parse error (400 parse_error) instead of a RecursionError
  that would end as a 500;
- a string anywhere in the body (a key or a value, however nested: JSON fields included) holding a NUL
  character or a lone surrogate (`"\\ud800"`) is a field error (400 validation_error, the field's dotted
  path), since PostgreSQL cannot store the one and UTF-8 cannot encode the other (config.inputs)."""

from rest_framework.exceptions import ErrorDetail, ParseError, ValidationError
from rest_framework.parsers import JSONParser

from config.inputs import first_text_problem


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
            problem = first_text_problem(data)
        except RecursionError:
            # json's decoder recurses once per nesting level; a few thousand "[" exhaust the stack.
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
        if problem:
            field, code, message = problem
            raise ValidationError({field or "non_field_errors": [ErrorDetail(message, code=code)]})
        return data
