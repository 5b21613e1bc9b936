"""Whether a service's host can be reached at all, asked before a client library's own long retries and
credential chains: a store or a hub that cannot be reached is said as such within seconds."""

from __future__ import annotations

import socket
import urllib.request
from urllib.parse import urlsplit


def cannot_reach(url: str, timeout: float = 5.0) -> str | None:
    """Why `url`'s host cannot be reached (its name does not resolve, or nothing answers on its port within
    `timeout` seconds), or None where it answers or a proxy stands between (the proxy reaches it, not we)."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    proxies = urllib.request.getproxies()
    if proxies.get(parts.scheme) and not urllib.request.proxy_bypass(host):
        return None
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror:
        return f"{host} does not resolve (no network here, or a mistyped name)"
    except TimeoutError:
        return f"{host}:{port} did not answer within {timeout:g} s"
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
