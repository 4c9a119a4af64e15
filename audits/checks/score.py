"""Health score (to be filled: issue 3)."""


def health_score(audit_id) -> tuple[int | None, int]:
    return None, 0
