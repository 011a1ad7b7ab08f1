"""Assemble the report page: one HTML file with its CSS, JS and data inline, and a CSP that forbids all network.

The Content-Security-Policy allows only the page's own script and style (by SHA-256 hash): no fetch, no
image, font or frame from anywhere, and no inline handler, so even a reply that slipped into the markup
could not run or call home. The renderer inserts every user text with ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib
import html
from importlib.resources import files
from typing import Any

from tutormetrics.report.embed import script_json


def _asset(name: str) -> str:
    return files("tutormetrics.report").joinpath("assets", name).read_text(encoding="utf8")


def csp_hash(source: str) -> str:
    """CSP source expression for an inline element's text: ``'sha256-<base64>'``.

    Example:
        >>> csp_hash("")
        "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    digest = hashlib.sha256(source.encode("utf8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(script: str, style: str) -> str:
    """A policy that allows the one inline script and style and nothing else."""
    return (
        "default-src 'none'; "
        f"script-src {csp_hash(script)}; "
        f"style-src {csp_hash(style)}; "
        "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; "
        "frame-src 'none'; worker-src 'none'; manifest-src 'none'; form-action 'none'; base-uri 'none'"
    )


def render_html(data: dict[str, Any]) -> str:
    """The whole page for ``data`` (from :func:`tutormetrics.report.collect.collect_study`)."""
    style, script = _asset("report.css"), _asset("report.js")
    page = _asset("report.html")
    parts = {
        "{{CSP}}": html.escape(content_security_policy(script, style), quote=False).replace('"', "&quot;"),
        "{{TITLE}}": html.escape(str(data.get("title", "tutormetrics report"))),
        "{{STYLE}}": style,
        "{{DATA}}": script_json(data),
        "{{SCRIPT}}": script,
    }
    out = []
    rest = page
    # Substitute in one pass over the template so a placeholder inside the data is never expanded.
    while True:
        hits = [(rest.find(k), k) for k in parts if rest.find(k) >= 0]
        if not hits:
            out.append(rest)
            break
        pos, key = min(hits)
        out.append(rest[:pos])
        out.append(parts[key])
        rest = rest[pos + len(key):]
    return "".join(out)
