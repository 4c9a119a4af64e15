"""Alert rules, channels and the outbox: what an audit alerts about and the sending (filled in by issue 28)."""
