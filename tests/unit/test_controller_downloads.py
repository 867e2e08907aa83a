"""One download for many hosts (run/controller_cache.py, tasks/downloads/relay.py): the controller's
cache fetched from a real HTTP server on loopback (testbed/mirror.py), the lock's wheel URLs read from PyPI's
real pages for six (tests/fixtures/index/), and the host's
staged_install.py (tests/unit/test_host_scripts.py)."""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyinfra.connectors.local import LocalConnector
from pyinfra.connectors.ssh import SSHConnector

from bench.common import mirror_bytes
from config.settings import load
from run import controller_cache
from tasks.downloads import relay as controller_downloads
from tasks.venv import lock_digests
from tasks.venv.plan import VenvPlan
from testbed.mirror import Mirror

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "index"
SIX_WHEEL = "six-1.17.0-py2.py3-none-any.whl"
SIX_SHA = "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"
TORCH_WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
LOCK = (
    f"six==1.17.0 --hash=sha256:{SIX_SHA}  # {SIX_WHEEL}\ntorch==2.13.0+cpu --hash=sha256:{'6' * 64}  # {TORCH_WHEEL}\n"
)


@pytest.fixture
def mirror(tmp_path):
    with Mirror(tmp_path / "mirror") as served:
        yield served


def _placed(mirror: Mirror, name: str, data: bytes) -> tuple[str, str]:
    (mirror.root / name).write_bytes(data)
    return f"{mirror.url}/{name}", hashlib.sha256(data).hexdigest()


def _gets(mirror: Mirror, name: str) -> int:
    return sum(1 for method, path, status in mirror.requests() if method == "GET" and path.endswith(name))


def test_a_file_is_fetched_once_kept_under_its_sha256_and_fetched_again_once_altered(mirror, tmp_path) -> None:
    url, sha = _placed(mirror, "triton.tar.gz", b"a build" * 1000)
    cache = tmp_path / "cache"
    first = controller_cache.fetched(url, sha, cache)
    again = controller_cache.fetched(url, sha, cache)
    assert first == again == cache / sha and first.read_bytes() == b"a build" * 1000
    assert _gets(mirror, "triton.tar.gz") == 1
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    first.write_bytes(b"altered on the controller")
    assert controller_cache.fetched(url, sha, cache).read_bytes() == b"a build" * 1000
    assert _gets(mirror, "triton.tar.gz") == 2


def test_what_finds_a_files_url_is_asked_only_where_the_cache_lacks_the_file(mirror, tmp_path) -> None:
    """A kept lock's wheel URL comes from the index's pages (tens of MB for a large lock): a file the cache holds
    needs none of them."""
    url, sha = _placed(mirror, "six.whl", b"a wheel" * 100)
    asked: list[str] = []

    def finds() -> str:
        asked.append(url)
        return url

    cache = tmp_path / "cache"
    assert controller_cache.fetched(finds, sha, cache).read_bytes() == b"a wheel" * 100
    assert controller_cache.fetched(finds, sha, cache) == cache / sha
    assert len(asked) == 1 and _gets(mirror, "six.whl") == 1


def test_hosts_asking_at_once_read_the_index_pages_once(monkeypatch) -> None:
    """Hosts run at once (greenlets; threads here): the second host to ask for the lock's URLs waits for the
    first one's read of the pages instead of reading them all again."""
    reads: list[str] = []
    second_read = threading.Event()

    def wheel_urls(lock, index_url, torch_index, find_links, fetch) -> dict[str, str]:
        reads.append(lock)
        if len(reads) == 1:
            second_read.wait(timeout=1.0)  # held open until another read starts (none should), or 1 s
        else:
            second_read.set()
        return {SIX_WHEEL: "https://files.example/six.whl"}

    monkeypatch.setattr(controller_downloads.lock_digests, "wheel_urls", wheel_urls)
    monkeypatch.setattr(controller_downloads, "_urls_read", {})
    found: list[dict[str, str]] = []
    hosts = [
        threading.Thread(target=lambda: found.append(controller_downloads._wheel_urls(LOCK, "", None, "")))
        for _ in range(2)
    ]
    for host in hosts:
        host.start()
    for host in hosts:
        host.join()
    assert len(reads) == 1 and found == [{SIX_WHEEL: "https://files.example/six.whl"}] * 2


def test_a_wrong_sha256_or_a_cut_transfer_keeps_nothing_and_says_what_to_fix(mirror, tmp_path) -> None:
    url, sha = _placed(mirror, "triton.tar.gz", b"a build" * 1000)
    cache = tmp_path / "cache"
    with pytest.raises(controller_cache.FetchError, match=f"not {'0' * 64}: nothing was kept or sent"):
        controller_cache.fetched(url, "0" * 64, cache)
    with pytest.raises(controller_cache.FetchError, match="cut at 100 of 7000 bytes"):
        controller_cache.fetched(mirror.cut_url("triton.tar.gz", 100), sha, cache)
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == []


def test_a_file_larger_than_its_signed_size_is_cut_off_there_and_nothing_is_kept(mirror, tmp_path) -> None:
    """The review's .deb line claimed 10 bytes and the controller wrote 297 MiB: it stops past the size now."""
    url, sha = _placed(mirror, "big.deb", b"d" * (3 << 20))
    cache = tmp_path / "cache"
    with pytest.raises(controller_cache.FetchError, match="sent more than the 10 bytes it has: cut off, nothing kept"):
        controller_cache.fetched(url, sha, cache, 10)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []
    assert controller_cache.fetched(url, sha, cache, 3 << 20).stat().st_size == 3 << 20  # its own size: kept


def test_a_urls_password_is_sent_as_basic_auth_and_never_shown(mirror, tmp_path) -> None:
    url, _ = _placed(mirror, "missing-here", b"x")
    secret_url = url.replace("http://", "http://user:s3cret@").replace("missing-here", "absent")
    with pytest.raises(controller_cache.FetchError) as raised:
        controller_cache.fetched(secret_url, "1" * 64, tmp_path / "cache")
    assert "s3cret" not in str(raised.value) and "user:***@" in str(raised.value)


def _fetch_in_another_process(url: str, sha: str, cache: str) -> None:
    controller_cache.fetched(url, sha, Path(cache))


def test_two_controller_processes_sharing_the_cache_fetch_a_file_once(mirror, tmp_path) -> None:
    _, sha = _placed(mirror, "torch.whl", b"w" * 400_000)
    slow = mirror.slow_url("torch.whl", 400_000)  # a second for the whole file: the other process must wait
    cache = str(tmp_path / "cache")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fetch_in_another_process, args=(slow, sha, cache)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert _gets(mirror, "torch.whl") == 1


def test_the_locks_wheel_urls_are_read_from_json_html_and_find_links_pages() -> None:
    pages = {
        "https://pypi.org/simple/six/": (
            "application/vnd.pypi.simple.v1+json",
            (FIXTURES / "pypi-six.json").read_bytes(),
        ),
        "http://mirror/wheels/": ("text/html", f'<a href="{TORCH_WHEEL}">{TORCH_WHEEL}</a>'.encode()),
    }

    def fetch(url: str) -> tuple[str, bytes]:
        if url not in pages:
            raise OSError(f"404 {url}")
        return pages[url]

    urls = lock_digests.wheel_urls(LOCK, "", None, "http://mirror/wheels/", fetch)
    assert urls[SIX_WHEEL].startswith("https://files.pythonhosted.org/packages/") and urls[SIX_WHEEL].endswith(
        SIX_WHEEL
    )
    assert urls[TORCH_WHEEL] == f"http://mirror/wheels/{TORCH_WHEEL}"
    html = lock_digests.file_links(
        "text/html", (FIXTURES / "pypi-six.html").read_bytes(), "https://pypi.org/simple/six/"
    )
    assert html[SIX_WHEEL] == urls[SIX_WHEEL]


def test_a_lock_naming_a_path_or_a_shell_word_is_refused() -> None:
    hostile = LOCK + f"x==1 --hash=sha256:{'1' * 64}  # ../../etc/cron.d/x.whl\n"
    hostile += f"y==1 --hash=sha256:{'2' * 64}  # six$(id).whl\n"
    assert controller_downloads.unsafe_lock_names(LOCK) == []
    assert controller_downloads.unsafe_lock_names(hostile) == ["../../etc/cron.d/x.whl", "six$(id).whl"]
    # a model's own environment's kept lock is checked as the venv's is
    venv = VenvPlan("/opt/triton/venv.versions/a", "/usr/bin/python3", "3.11", {}, lock=LOCK, lock_store="/l/venv")
    env = VenvPlan("/opt/triton/venv.model-envs/m", "/usr/bin/python3", "3.11", {}, lock=hostile, lock_store="/l/m")
    assert controller_downloads.unsafe_lock([venv, env]) == ("/l/m", "../../etc/cron.d/x.whl, six$(id).whl")
    assert controller_downloads.unsafe_lock([venv]) == ("", "")


def _host(connector, inventory: list) -> SimpleNamespace:
    host = SimpleNamespace(connector_cls=connector, inventory=inventory)
    inventory.append(host)
    return host


@pytest.mark.parametrize(
    ("choice", "ssh_hosts", "data", "relayed"),
    [
        ("auto", 2, {}, True),
        ("auto", 1, {}, False),
        ("auto", 2, {"https_proxy": "http://proxy.corp:3128"}, False),
        ("yes", 1, {}, True),
        ("no", 2, {}, False),
    ],
)
def test_which_hosts_fetch_through_the_controller(choice, ssh_hosts, data, relayed) -> None:
    settings = load({"downloads_via_controller": choice, "controller_cache_dir": "/srv/cache", **data})
    inventory: list = []
    hosts = [_host(SSHConnector, inventory) for _ in range(ssh_hosts)]
    local = _host(LocalConnector, inventory)
    assert controller_downloads.relay_dir(settings, hosts[0]) == ("/srv/cache" if relayed else "")
    assert controller_downloads.relay_dir(settings, local) == ""


def test_the_cache_folder_is_under_the_controller_users_home() -> None:
    settings = load({})
    assert settings.on_controller(settings.controller_cache_dir) == Path.home() / ".cache/triton-provisioner/downloads"


def test_a_find_links_folder_of_the_hosts_own_is_not_relayed() -> None:
    plan = VenvPlan(venv_dir="/opt/triton/venvs/a", python="/usr/bin/python3", python_minor="3.11", requirements={})
    local = controller_downloads.wheels_relayed(
        VenvPlan(**{**plan.__dict__, "find_links": "/srv/wheels"}), "/c", "x86_64", ""
    )
    assert local.relay_dir == ""
    relayed = controller_downloads.wheels_relayed(VenvPlan(**{**plan.__dict__, "lock": LOCK}), "/c", "x86_64", "")
    assert relayed.relay_dir == "/c" and relayed.uv_wheel[2].startswith("uv-") and relayed.uv_wheel[2].endswith(".whl")
    by_hand = VenvPlan(**{**plan.__dict__, "lock": LOCK + f"numpy==1.26.4 --hash=sha256:{'3' * 64}\n"})
    assert controller_downloads.wheels_relayed(by_hand, "/c", "x86_64", "").relay_dir == ""


def test_the_mirror_counts_the_bytes_a_get_sends_and_none_for_a_head(mirror) -> None:
    url, _ = _placed(mirror, "triton.tar.gz", b"b" * 5000)
    urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10).close()
    assert mirror_bytes(mirror, 0) == 0
    urllib.request.urlopen(url, timeout=10).read()
    assert mirror_bytes(mirror, 0) == 5000


def test_a_url_a_host_printed_is_shown_masked_with_what_a_terminal_acts_on_escaped() -> None:
    shown = controller_cache.shown("http://ops:s3cret@deb.debian.org/debian/pool/\x1b[2Jx.deb")
    assert shown == "http://ops:***@deb.debian.org/debian/pool/\\x1b[2Jx.deb"
