"""The project's one error type for refused requests: a stable code for programs, a sentence for people."""


class AuditRefused(Exception):
    def __init__(self, code: str, message: str, *, field: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field  # the input the refusal is about, for forms
