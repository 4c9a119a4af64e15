"""`<id:name>` in URL patterns: a row id (1 to 2**63-1, PostgreSQL's bigint). Django's `<int:…>` takes any
number of digits, and a 20-digit id reached the database; this converter does not match it, so the URL is
a 404 before any query. Registered here once, on import (the URL modules import it)."""

from django.urls import register_converter

from config.inputs import ID_MAX_DIGITS, id_in_range


class IdConverter:
    regex = f"[0-9]{{1,{ID_MAX_DIGITS}}}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not id_in_range(number):
            raise ValueError("not an id")  # Django tries the next pattern, then answers 404
        return number

    def to_url(self, value) -> str:
        return str(value)


register_converter(IdConverter, "id")
