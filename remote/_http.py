"""Shared: HTTP pieces of the host's download scripts (fetch.py, hub_fetch.py), inlined where a
script says `from _http import ...`: URL passwords masked in what is shown, a URL's user and password
sent as Basic authentication, and never to another host after a redirect."""

import base64
import re
import urllib.parse
import urllib.request


def masked(url: str) -> str:
    """url with its password (or a lone token) shown as *** (the controller's config/secrets.py rule)."""

    def hide(m):
        user, sep, _ = m.group(2).partition(":")
        return f"{m.group(1)}{user}:***@" if sep else f"{m.group(1)}***@"

    return re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s'\"]*)@", hide, url)


class NoCredentialsAcrossHosts(urllib.request.HTTPRedirectHandler):
    """Follows a redirect, but sends the Authorization header (a URL's user and password) only back to the
    host it was given for: a redirect to another host, scheme or port never gets them."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            old, moved = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(new.full_url)
            if (old.scheme, old.hostname, old.port) != (moved.scheme, moved.hostname, moved.port):
                new.remove_header("Authorization")
        return new


OPENER = urllib.request.build_opener(NoCredentialsAcrossHosts)


def request(url: str) -> urllib.request.Request:
    """A request for url; its user and password, if any, moved into a Basic Authorization header."""
    parts = urllib.parse.urlsplit(url)
    if not (parts.username or parts.password):
        return urllib.request.Request(url)
    host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    bare = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return urllib.request.Request(bare, headers={"Authorization": f"Basic {token}"})
