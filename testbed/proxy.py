"""The corporate proxy, run for real: Debian's Squid 5 as a plain process on loopback, with Basic
authentication (its own `basic_ncsa_auth` helper over an htpasswd file), forwarding plain requests and
CONNECT tunnels, one access-log line per request, so a test proves that every download went through it and
carried the password. `scripts/setup.sh --test` installs it (squid, apache2-utils for htpasswd).

Connections it makes to loopback addresses leave from 127.0.0.2 (`tcp_outgoing_address`): a mirror that
admits only that peer (`Mirror(allow=("127.0.0.2",))`) is then reachable through the proxy and nowhere
else. Usage:

    python -m testbed.proxy USER   (the password is read from stdin)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testbed.distribution import _free_port

SOURCE_FOR_LOOPBACK = "127.0.0.2"
SQUID = "/usr/sbin/squid"
NCSA_AUTH = "/usr/lib/squid/basic_ncsa_auth"  # Debian's path of Squid's htpasswd helper
SQUID_USER = "proxy"  # Debian's account for Squid: run as root, it drops to this one


class Proxy:
    """A running Squid on 127.0.0.1 that asks every request for `user` and `secret` (Basic), with the log
    of what it answered: (method, target, status); a request without the password is logged with 407."""

    def __init__(self, user: str, secret: str) -> None:
        missing = [tool for tool in (SQUID, NCSA_AUTH) if not os.path.exists(tool)] + (
            [] if shutil.which("htpasswd") else ["htpasswd"]
        )
        if missing:
            raise RuntimeError(f"{', '.join(missing)} missing: bash scripts/setup.sh --test installs them")
        self.user, self.secret = user, secret
        self.folder = Path(tempfile.mkdtemp(prefix="squid-"))
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The proxy's address without credentials (what a client that sends none is refused at)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url_with_password(self) -> str:
        return f"http://{self.user}:{self.secret}@127.0.0.1:{self.port}"

    @property
    def log(self) -> list[tuple[str, str, int]]:
        """What Squid answered, oldest first: (method, absolute URL or host:port, status sent)."""
        lines = (self.folder / "access.log").read_text().splitlines() if (self.folder / "access.log").exists() else []
        return [(method, target, int(status)) for method, target, status in (line.split(" ") for line in lines)]

    def _config(self) -> Path:
        made = subprocess.run(  # bcrypt; the secret on stdin, never on a command line
            ["htpasswd", "-iBn", self.user], input=self.secret, capture_output=True, text=True, check=True
        )
        (self.folder / "passwd").write_text(made.stdout)
        owner = f"cache_effective_user {SQUID_USER}\n" if os.geteuid() == 0 else ""
        config = self.folder / "squid.conf"
        config.write_text(
            f"http_port 127.0.0.1:{self.port}\nvisible_hostname testbed-proxy\n{owner}"
            f"pid_filename {self.folder}/squid.pid\ncache_log {self.folder}/cache.log\ncoredump_dir {self.folder}\n"
            f"logformat testbed %rm %ru %>Hs\naccess_log stdio:{self.folder}/access.log testbed\n"
            "cache deny all\nshutdown_lifetime 1 second\n"
            f"auth_param basic program {NCSA_AUTH} {self.folder}/passwd\nauth_param basic realm testbed-proxy\n"
            "acl users proxy_auth REQUIRED\nhttp_access allow users\nhttp_access deny all\n"
            f"acl loopback_dst dst 127.0.0.0/8\ntcp_outgoing_address {SOURCE_FOR_LOOPBACK} loopback_dst\n"
        )
        if os.geteuid() == 0:  # Squid and its helper run as `proxy`: the folder is theirs
            account = pwd.getpwnam(SQUID_USER)
            for path in (self.folder, *self.folder.iterdir()):
                os.chown(path, account.pw_uid, account.pw_gid)
        return config

    def __enter__(self) -> Proxy:
        config = self._config()
        out = (self.folder / "squid.out").open("w")
        self.process = subprocess.Popen([SQUID, "-N", "-f", str(config)], stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while not self._listening():
            if self.process.poll() is not None or time.monotonic() > deadline:
                logs = [self.folder / name for name in ("squid.out", "cache.log")]
                said = "".join(log.read_text() for log in logs if log.exists())
                self.__exit__()
                raise RuntimeError(f"squid did not start: {said}")
            time.sleep(0.05)
        return self

    def _listening(self) -> bool:
        """Squid says it accepts connections (asked of its log: a probing connection would be logged)."""
        log = self.folder / "cache.log"
        return log.exists() and "Accepting HTTP Socket connections" in log.read_text()

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.proxy", description=__doc__.split("\n")[0])
    parser.add_argument("user")
    args = parser.parse_args(argv)
    with Proxy(args.user, sys.stdin.readline().strip()) as proxy:
        assert proxy.process is not None
        print(f"proxy at {proxy.url} (user {args.user}); Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            proxy.process.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
