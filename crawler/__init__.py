"""Sitewarden crawler: talking to the web (URLs, HTTP, HTML, robots, sitemaps), no Django."""

__version__ = "0.1.0"
