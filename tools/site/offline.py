"""The site's offline check: every URL a built page would fetch from another host.

`check_offline(folder)` raises SiteError naming each page of a built site that would load a script, stylesheet,
image, frame, CSS url()/@import, JavaScript import or fetch from elsewhere; links a reader may click (<a href>)
are not fetched and pass. Only reads pages; writing them is export and pages.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["STATIC", "SiteError", "check_offline"]

STATIC = "_static"  # the site's folder of copied third-party files (MathJax, reveal.js): not scanned


class SiteError(RuntimeError):
    """The site cannot be built, or a page it built would load something from the network."""


class _ResourceParser(HTMLParser):
    """Collects every URL a page would fetch by itself: element sources, stylesheets, CSS and JavaScript imports."""

    SOURCES = {"script": ("src",), "link": ("href",), "img": ("src", "srcset"), "iframe": ("src",),
               "source": ("src", "srcset"), "video": ("src", "poster"), "audio": ("src",), "embed": ("src",),
               "object": ("data",), "track": ("src",), "input": ("src",), "image": ("href", "xlink:href"),
               "use": ("href", "xlink:href")}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in self.SOURCES.get(tag, ()):
                self.urls.extend(part.strip().split(" ")[0] for part in value.split(",")) if name == "srcset" \
                    else self.urls.append(value.strip())
            elif name == "style":
                self.urls.extend(_css_urls(value))
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.urls.extend(_css_urls(data))
        elif self._in == "script":
            self.urls.extend(_script_urls(data))


_DATA_URI = re.compile(r"data:[^\"')\s]*")
_CSS_URL = re.compile(r"""url\(\s*["']?([^"')\s]+)|@import\s+["']([^"']+)""")
_JS_URL = re.compile(r"""(?:\bfrom|\bimport\s*\(|\bimportScripts\s*\(|\bsrc\s*=|\bhref\s*=|\burl\s*\(|"""
                     r"""\brequire\s*\(\s*\[?|\bfetch\s*\()\s*["'`]\s*((?:https?:)?//[^"'`\s]+)""")


def _css_urls(css: str) -> list[str]:
    """The URLs a piece of CSS loads (url(...) and @import), data: URIs left out."""
    return [a or b for a, b in _CSS_URL.findall(_DATA_URI.sub("data:", css)) if not (a or b).startswith("data:")]


def _script_urls(script: str) -> list[str]:
    """URLs that a piece of JavaScript loads in the usual ways (import, src=, require([...]), fetch)."""
    return _JS_URL.findall(script)


def _is_remote(url: str) -> bool:
    """`url` names another host (http(s)://..., protocol-relative //...; file: URLs are local)."""
    return bool(re.match(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//", url)) and not url.lower().startswith("file:")


def _remote_resources(page: str) -> list[str]:
    """Every URL in the HTML text `page` that the browser would fetch from another host (http(s)://...,
    protocol-relative //...). Links the reader may click (<a href>) are not fetched and not listed."""
    parser = _ResourceParser()
    parser.feed(page)
    parser.close()
    return sorted({url for url in parser.urls if _is_remote(url)})


def check_offline(folder: Path) -> None:
    """Raise SiteError naming every page under `folder` that would load a remote resource, and what."""
    found = {str(path.relative_to(folder)): urls for path in sorted(folder.rglob("*.html"))
             if not path.relative_to(folder).parts[0] == STATIC
             for urls in [_remote_resources(path.read_text(encoding="utf-8"))] if urls}
    if found:
        lines = [f"  {page}: {', '.join(urls[:5])}{' ...' if len(urls) > 5 else ''}" for page, urls in found.items()]
        raise SiteError("pages that would load resources from the network (the site must read offline):\n"
                        + "\n".join(lines))
