"""What every face (API, dashboard, MCP) refuses before a value reaches the database: whole numbers outside
what PostgreSQL stores, text PostgreSQL cannot store (NUL) or UTF-8 cannot encode (lone surrogates).

One home for these rules: the `<id:…>` path converter (config/converters.py), the API's JSON parser, the
dashboard's JSON fields and raw form reads, and the MCP tools' arguments all ask this module.
"""

from collections.abc import Iterator

ID_MIN = 1
ID_MAX = 2**63 - 1  # PostgreSQL bigint (the primary keys); a larger number is no id of ours
ID_MAX_DIGITS = len(str(ID_MAX))  # 19
PAGE_NUMBER_MAX = 100_000  # a list page number; past it OFFSET would walk millions of rows for nothing

# The codes and sentences DRF's CharField answers with, so a client reads one code whichever field it was.
NUL_CODE = "null_characters_not_allowed"
SURROGATE_CODE = "surrogate_characters_not_allowed"


def text_problem(value: str) -> tuple[str, str] | None:
    """(code, sentence) when `value` holds a NUL character or a lone surrogate, else None."""
    if "\x00" in value:
        return NUL_CODE, "Null characters are not allowed."
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return SURROGATE_CODE, f"Surrogate characters are not allowed: U+{ord(value[exc.start]):X}."
    return None


def text_problems(data, path: str = "") -> Iterator[tuple[str, str, str]]:
    """(dotted path, code, sentence) of every string in `data` (nested dicts and lists: keys too) that
    text_problem refuses. The path names the field as api.errors does (`extractors.0.name`)."""
    if isinstance(data, str):
        problem = text_problem(data)
        if problem:
            yield (path, *problem)
    elif isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (problem := text_problem(key)):
                yield (path or "non_field_errors", *problem)
                continue
            yield from text_problems(value, where)
    elif isinstance(data, list | tuple):
        for index, value in enumerate(data):
            yield from text_problems(value, f"{path}.{index}" if path else str(index))


def first_text_problem(data) -> tuple[str, str, str] | None:
    return next(text_problems(data), None)


def id_in_range(value: int) -> bool:
    return ID_MIN <= value <= ID_MAX
