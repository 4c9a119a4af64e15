"""Page checks (to be filled: issue 3)."""

PAGE_CHECK_TYPES: tuple[str, ...] = ()


def page_issues(page, data, result, settings) -> list:
    return []
