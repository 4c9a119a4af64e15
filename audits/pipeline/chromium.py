"""The one way the product finds and starts Chromium (JS rendering and Lighthouse): where the binary is, and
the flags that keep it headless, quiet and, unless private targets are allowed, behind the egress proxy."""

import os
import shutil

from django.conf import settings

from crawler.egress import egress_proxy_url

CHROME_PATH_ENV = "CHROME_PATH"  # explicit Chromium; when set, nothing else is tried (Lighthouse reads it too)
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_NAMES = ("chromium", "chromium-browser")
_CHROMIUM_HINT = f"apt-get install chromium, or set {CHROME_PATH_ENV} to a Chromium binary"

# Chromium must not reach for the network on its own (updates, sync, field trials) and must run
# headless in containers; --no-sandbox is added only when we are root, where the sandbox cannot start.
CHROMIUM_BASE_FLAGS = (
    "--headless=new",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
)
# With a proxy set, Chromium still resolves names for its own purposes (DNS prefetch, preconnect hints)
# and still sends loopback directly unless told otherwise; these flags leave it no way out but the proxy:
# every name resolves to nothing (the proxy is an address, not a name), loopback goes through the proxy
# too, no QUIC (UDP, which an HTTP proxy cannot carry) and no WebRTC UDP outside the proxy.
_HOST_RESOLVER_RULES = "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"
CHROMIUM_EGRESS_FLAGS = (
    "--proxy-bypass-list=<-loopback>",
    f"--host-resolver-rules={_HOST_RESOLVER_RULES}",
    "--disable-quic",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_chromium() -> tuple[str | None, str]:
    """The Chromium binary to drive, or None and why not (with how to install it)."""
    explicit = os.environ.get(CHROME_PATH_ENV)
    if explicit:
        if _executable(explicit):
            return explicit, f"{CHROME_PATH_ENV}={explicit}"
        return None, f"Chromium not found at {CHROME_PATH_ENV}={explicit} ({_CHROMIUM_HINT})"
    for path in CHROMIUM_PATHS:
        if _executable(path):
            return path, path
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found, found
    return None, f"Chromium not found ({_CHROMIUM_HINT})"


def chromium_flags(*, user_data_dir=None, allow_private: bool | None = None) -> list[str]:
    """Command-line flags for a Chromium the product starts. Unless private targets are allowed
    (settings.ALLOW_PRIVATE_TARGETS, or `allow_private`), every request goes through this process's
    egress proxy (crawler.egress), which refuses non-public addresses as the crawler does."""
    flags = list(CHROMIUM_BASE_FLAGS)
    if user_data_dir is not None:
        flags.append(f"--user-data-dir={user_data_dir}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")
    if allow_private is None:
        allow_private = settings.ALLOW_PRIVATE_TARGETS
    if not allow_private:
        flags.append(f"--proxy-server={egress_proxy_url()}")
        flags.extend(CHROMIUM_EGRESS_FLAGS)
    return flags
