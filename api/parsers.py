"""The API's JSON parser: DRF's, except that a body nested too deep for Python's json is a parse error
(400 parse_error) instead of a RecursionError that would end as a 500."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json's decoder recurses once per nesting level; a few thousand "[" exhaust the stack.
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
