"""Site checks (to be filled: issue 3)."""


def run_site_checks(audit) -> None:
    return None
