"""Every issue type with its severity, explanation, how-to-fix and thresholds (to be filled: issue 3)."""

from dataclasses import dataclass, field


@dataclass
class CheckSettings:
    thresholds: dict = field(default_factory=dict)
    severities: dict = field(default_factory=dict)
    disabled: set = field(default_factory=set)
    site_https: bool = False

    @classmethod
    def for_audit(cls, audit) -> "CheckSettings":
        return cls(site_https=(audit.site_url or audit.start_url).startswith("https://"))
