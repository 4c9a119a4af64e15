"""Reads of the audit domain, one module per entity they read, for every face alike (dashboard, API, MCP server,
CLI, exports): `audits` (one audit: crawl bar, progress, summary, skipped URLs, events, comparison), `issues`
(counts per type and severity, summaries, lists), `pages` (the pages grid, one page), `links` (inlinks and
outlinks), `external` (an audit's external link targets, their outcomes and linking pages), `projects` (the
projects a person may see), `reports` (the figures of the report a person is sent) and `pagination` (the one
keyset paginator and its cursors). Selectors only read; import the module you need."""
