"""Triton from a container image without Docker: oci_pull.py against the registry stand-in (testbed/registry.py,
a real HTTP server on loopback with a token service and a CDN redirect), then unpack_triton.py's image
source on a temporary tree: whiteouts, only /opt/tritonserver kept, every digest checked before use."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

import remote
from config.layout import Layout
from config.settings import SettingsError, load
from tasks.triton.build import cache_proof, choose_artifact
from tasks.triton.install import version_dir_name
from testbed.registry import Registry, digest_of
from tests.unit.test_triton_model import ONNX_CONFIG
from tests.unit.test_triton_model import folder as triton_folder

oci_pull = remote.load("oci_pull.py")
unpack_triton = remote.load("unpack_triton.py")
archive = remote.load("unpack_python.py")  # the shared extractor (remote/_archive.py), inlined

STUB = b"\x7fELF stub, links libpython3.11.so.1.0"


def layer(*members: tuple[str, bytes | str | None]) -> bytes:
    """A gzipped layer: (name, bytes) a file, (name, None) a folder, (name, "->target") a symlink."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content.removeprefix("->")
                tar.addfile(info)
            else:
                info.size, info.mode = len(content), 0o755
                tar.addfile(info, io.BytesIO(content))
    return gzip.compress(out.getvalue(), mtime=0)


BASE = layer(
    ("etc/shadow", b"root:x"),
    ("usr/lib/x86_64-linux-gnu/libb64.so.0d", b"b64"),
    ("opt/tritonserver/bin/tritonserver", b"server"),
    ("opt/tritonserver/lib/libtritonserver.so", b"old"),
    ("opt/tritonserver/backends/onnxruntime/libtriton_onnxruntime.so", b"onnx"),
    ("opt/tritonserver/NOTES", b"removed by the next layer"),
)
TOP = layer(
    ("opt/tritonserver/.wh.NOTES", b""),
    ("opt/tritonserver/backends/python/triton_python_backend_stub", STUB),
    ("opt/tritonserver/backends/.wh..wh..opq", b""),  # after a member of its own layer, which stays
    ("opt/tritonserver/lib/libtritonserver.so", b"new"),
    ("opt/tritonserver/TRITON_VERSION", b"2.51.0\n"),
)
CONFIG = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Labels": {}}}).encode()


@pytest.fixture
def registry():
    with Registry() as reg:
        yield reg


def pull(registry: Registry, digest: str, cache: Path, key_file: str = "") -> int:
    return oci_pull.main(registry.url, registry.repository, digest, str(cache), key_file)


def unpack(cache: Path, digest: str, dest: Path, backends: str = "") -> int:
    hex_digest = digest.removeprefix("sha256:")
    return unpack_triton.main("image", str(cache), str(dest), "3.11", hex_digest, "0", "", "{}", backends)


def tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
        if p.name != ".provisioner"
    }


def test_an_image_is_pulled_through_the_token_service_and_only_its_triton_unpacked(
    registry: Registry, tmp_path: Path
) -> None:
    index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP])
    cache, dest = tmp_path / "cache", tmp_path / "versions" / "image"
    dest.parent.mkdir()
    assert pull(registry, index, cache) == 0
    # anonymous: a 401 with a challenge, a token from the realm, the manifest with it; blobs from the CDN host
    first, token = registry.log[0], registry.log[1]
    assert (first[2], first[3]) == (401, "") and token[1].startswith("/token?") and token[2] == 200
    assert f"scope=repository%3A{registry.repository.replace('/', '%2F')}%3Apull" in token[1]
    cdn = [entry for entry in registry.log if entry[1].startswith("/cdn/")]
    assert len(cdn) == 3 and all(auth == "" for *_, auth in cdn)  # config and two layers; no token to the CDN
    assert unpack(cache, index, dest) == 0
    assert tree(dest) == {
        "TRITON_VERSION": b"2.51.0\n",
        "backends": None,
        "backends/python": None,
        "backends/python/triton_python_backend_stub": STUB,
        "bin": None,
        "bin/tritonserver": b"server",
        "lib": None,
        "lib/libtritonserver.so": b"new",
    }
    assert "source=image\n" in (dest / ".provisioner").read_text()
    before = len(registry.log)
    assert pull(registry, index, cache) == 0  # a second pull: everything is cached, nothing is asked
    assert registry.log[before:] == []


def test_a_layer_altered_in_transit_is_refused_and_not_kept(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP])
    registry.tamper(digest_of(TOP))
    cache = tmp_path / "cache"
    assert pull(registry, index, cache) == 3
    assert f"not the {digest_of(TOP)} asked for" in capsys.readouterr().err
    assert not (cache / "blobs" / "sha256" / digest_of(TOP)[7:]).exists()
    assert not list(cache.rglob("*.part"))


def test_a_layer_or_manifest_longer_than_it_may_be_is_cut_off_and_not_kept(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A registry that sends more than a layer's size (as its manifest gives it) or a manifest over the OCI
    limit is cut off there: nothing is written on to the end, nothing is kept."""
    index, manifest = registry.push("25.01-py3", CONFIG, [BASE, TOP])
    registry.pad(digest_of(TOP), 3 << 20)
    cache = tmp_path / "cache"
    assert pull(registry, index, cache) == 3
    assert f"more than the {len(TOP)} bytes it may have; removed" in capsys.readouterr().err
    assert not (cache / "blobs" / "sha256" / digest_of(TOP)[7:]).exists()
    assert not list(cache.rglob("*.part"))
    registry.pad(manifest, oci_pull.DOCUMENT_LIMIT)
    cache = tmp_path / "cache2"
    assert pull(registry, index, cache) == 3
    assert f"more than the {oci_pull.DOCUMENT_LIMIT} bytes it may have; removed" in capsys.readouterr().err
    assert not (cache / "blobs" / "sha256" / manifest[7:]).exists()
    assert not list(cache.rglob("*.part"))


@pytest.mark.parametrize("size", [None, -1, True, "12"], ids=["missing", "negative", "bool", "text"])
def test_a_manifest_whose_blob_has_no_size_is_refused_before_any_blob_is_fetched(size, tmp_path: Path) -> None:
    """The pull stops a registry at each blob's size: a manifest that gives one none is refused by resolve,
    which the pull, the unpack and the config's read all go through."""
    layer_descriptor = {"mediaType": oci_pull.LAYER_TYPES[1], "digest": digest_of(TOP)}
    if size is not None:
        layer_descriptor["size"] = size
    manifest = {
        "mediaType": oci_pull.MANIFEST_TYPES[0],
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest_of(CONFIG), "size": 9},
        "layers": [layer_descriptor],
    }
    with pytest.raises(oci_pull.ImageRefused, match=f"the manifest gives blob {digest_of(TOP)} no size") as refused:
        oci_pull.resolve(lambda digest: manifest, DIGEST, "amd64")
    assert refused.value.code == 5


def test_a_token_service_that_answers_no_json_is_named(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP])
    registry.token_answer = b"<html>503 busy</html>"
    assert pull(registry, index, tmp_path / "cache") == 6
    assert f"the token service of {registry.url} answered no JSON token" in capsys.readouterr().err


def test_a_cached_layer_changed_after_the_pull_is_refused_by_the_unpack(registry: Registry, tmp_path: Path) -> None:
    index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP])
    cache, dest = tmp_path / "cache", tmp_path / "image"
    assert pull(registry, index, cache) == 0
    blob = cache / "blobs" / "sha256" / digest_of(BASE)[7:]
    blob.write_bytes(layer(("opt/tritonserver/bin/tritonserver", b"swapped")))
    assert unpack(cache, index, dest) == 9
    assert not dest.exists() and not Path(f"{dest}.tmp").exists()
    assert not blob.exists()  # removed: the next pull fetches it again (the same size would pass for cached)
    assert pull(registry, index, cache) == 0 and unpack(cache, index, dest) == 0


def test_an_api_key_goes_to_the_token_service_alone_and_its_file_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Registry(api_key="nvapi-secret") as registry:
        index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP])
        assert pull(registry, index, tmp_path / "anon") == 6
        assert "set triton_registry_api_key" in capsys.readouterr().err
        key_file = tmp_path / "key"
        key_file.write_text("nvapi-secret\n")
        assert pull(registry, index, tmp_path / "cache", f"@{key_file}") == 0
        assert not key_file.exists()
        basic = [entry for entry in registry.log if entry[3].startswith("Basic ")]
        assert basic and all(path.startswith("/token?") for _, path, _, _ in basic)
    assert "nvapi-secret" not in capsys.readouterr().err


def test_an_image_with_no_entry_for_this_host_is_refused(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, _ = registry.push("25.01-py3-sbsa", CONFIG, [BASE, TOP], arch="riscv64")
    assert pull(registry, index, tmp_path / "cache") == 5
    assert "has no linux/amd64 entry" in capsys.readouterr().err
    assert not [entry for entry in registry.log if entry[1].startswith("/cdn/")]  # no layer fetched


@pytest.mark.parametrize(
    ("members", "refusal"),
    [
        ([("opt/tritonserver/../../etc/cron.d/x", b"x")], "climbs out"),
        ([("opt/tritonserver/lib", "->/usr/lib")], "outside the destination"),
        # a link inside, planted by a lower layer; a whiteout through it
        (
            [("opt/tritonserver/sub/f", b"f"), ("opt/tritonserver/lnk", "->sub"), ("opt/tritonserver/lnk/.wh.f", b"")],
            "through the link",
        ),
    ],
)
def test_a_hostile_layer_is_refused(members: list, refusal: str, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    outside = tmp_path / "etc"
    outside.mkdir()
    with pytest.raises(archive.UnsafeArchive, match=refusal):
        for one in members:  # each in a layer of its own, as images stack them
            archive.apply_layer(io.BytesIO(layer(one)), str(dest), ["opt", "tritonserver"])
    assert outside.exists()


def test_a_link_that_a_later_layer_turns_outside_is_refused_and_nothing_is_written_through_it(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The review's image: layer 1's backends/python climbs through lib/d1..d4 (inside while they do not exist),
    layer 2 makes each of them a link to `.` (inside on its own): the stub's copy would land in etc/cron.d."""
    cron = b"* * * * * root id > /tmp/pwned-by-image\n"
    first = layer(
        ("opt/tritonserver/bin/tritonserver", b"server"),
        ("opt/tritonserver/backends/python", "->../lib/d1/d2/d3/d4/../../../../../etc/cron.d"),
        ("opt/tritonserver/python_backend_stubs/3.11/triton_python_backend_stub", cron),
    )
    second = layer(*((f"opt/tritonserver/lib/{d}", "->.") for d in ("d1", "d2", "d3", "d4")))
    index, _ = registry.push("25.01-py3", CONFIG, [first, second])
    cache, dest = tmp_path / "cache", tmp_path / "x" / "y" / "z" / "build"  # lib/ then five folders up: tmp_path
    dest.parent.mkdir(parents=True)
    (tmp_path / "etc" / "cron.d").mkdir(parents=True)
    assert pull(registry, index, cache) == 0
    assert unpack(cache, index, dest) == 8
    assert "'backends/python' links to" in capsys.readouterr().err
    assert list((tmp_path / "etc" / "cron.d").iterdir()) == []
    assert not dest.exists() and not Path(f"{dest}.tmp").exists()


@pytest.mark.parametrize("name", [".wh...", ".wh..", ".wh."])
def test_a_whiteout_that_names_no_file_is_refused_and_nothing_beside_the_install_is_removed(
    name: str, tmp_path: Path
) -> None:
    versions = tmp_path / "versions"
    (versions / "serving-build").mkdir(parents=True)
    (versions / "serving-build" / "bin").mkdir()
    dest = versions / "new-build.tmp"
    dest.mkdir()
    keep = ["opt", "tritonserver"]
    archive.apply_layer(io.BytesIO(BASE), str(dest), keep)
    with pytest.raises(archive.UnsafeArchive, match="names no file"):
        archive.apply_layer(io.BytesIO(layer((f"opt/tritonserver/{name}", b""))), str(dest), keep)
    assert (versions / "serving-build" / "bin").is_dir() and (dest / "bin" / "tritonserver").exists()


def test_the_unpack_writes_nothing_through_a_link_inside_the_tree(tmp_path: Path) -> None:
    """A tree whose links all stay inside still has its own writes (the stub's copy, TRITON_VERSION, the
    manifest) refused through a link: a link named TRITON_VERSION is replaced, never followed."""
    tree_dir = tmp_path / "t"
    (tree_dir / "real").mkdir(parents=True)
    (tree_dir / "real" / "kept").write_bytes(b"kept")
    (tree_dir / "TRITON_VERSION").symlink_to("real/kept")
    (tree_dir / "backends").symlink_to("real")
    assert archive.write_inside(str(tree_dir), "TRITON_VERSION", b"2.51.0\n") == 7
    assert (tree_dir / "real" / "kept").read_bytes() == b"kept" and not (tree_dir / "TRITON_VERSION").is_symlink()
    with pytest.raises(archive.UnsafeArchive, match="not a real folder"):
        archive.write_inside(str(tree_dir), "backends/python/stub", b"x")
    assert sorted(p.name for p in (tree_dir / "real").iterdir()) == ["kept"]


def test_a_layer_cut_short_is_refused_with_its_reason_and_nothing_is_left(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its digest is right (the registry holds it so: umoci 0.4.7's `insert` writes tars with no end blocks)."""
    whole = io.BytesIO()
    with tarfile.open(fileobj=whole, mode="w") as tar:
        info = tarfile.TarInfo("opt/tritonserver/bin/tritonserver")
        info.size = 4096
        tar.addfile(info, io.BytesIO(b"s" * 4096))
    cut = gzip.compress(whole.getvalue()[:2048], mtime=0)  # the header and half the file
    index, _ = registry.push("25.01-py3", CONFIG, [BASE, cut])
    cache, dest = tmp_path / "cache", tmp_path / "versions" / "build"
    dest.parent.mkdir()
    assert pull(registry, index, cache) == 0
    assert unpack(cache, index, dest) == 8
    err = capsys.readouterr().err
    assert f"{digest_of(cut)} cannot be read as a tar" in err and "Traceback" not in err
    assert list(dest.parent.iterdir()) == []


def test_whiteouts_of_the_folder_or_above_it_empty_it_and_others_are_left_alone(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    keep = ["opt", "tritonserver"]
    archive.apply_layer(io.BytesIO(BASE), str(dest), keep)
    archive.apply_layer(io.BytesIO(layer(("usr/.wh.lib", b""), ("etc/.wh..wh..opq", b""))), str(dest), keep)
    assert (dest / "bin" / "tritonserver").read_bytes() == b"server"  # whiteouts elsewhere touch nothing here
    archive.apply_layer(io.BytesIO(layer(("opt/.wh.tritonserver", b""))), str(dest), keep)
    assert list(dest.iterdir()) == []
    archive.apply_layer(io.BytesIO(BASE), str(dest), keep)
    archive.apply_layer(io.BytesIO(layer(("opt/.wh..wh..opq", b""), ("opt/tritonserver/x", b"x"))), str(dest), keep)
    assert tree(dest) == {"x": b"x"}


DIGEST = "sha256:" + "4f" * 32
IMAGE = {
    "triton_source": "image",
    "triton_image": "nvcr.io/nvidia/tritonserver:25.01-py3",
    "triton_image_digest": DIGEST,
}


def test_the_image_settings_are_checked_before_any_host_is_touched() -> None:
    with pytest.raises(SettingsError, match="triton_source = 'image' needs triton_image and triton_image_digest"):
        load({**IMAGE, "triton_image_digest": ""})
    with pytest.raises(SettingsError, match=r"triton_image = .*must be REGISTRY/REPOSITORY:TAG"):
        load({**IMAGE, "triton_image": "tritonserver:25.01-py3"})  # no registry: no Docker Hub default
    with pytest.raises(SettingsError, match=r"triton_image_digest = .*must be sha256: and 64 hex digits"):
        load({**IMAGE, "triton_image_digest": "sha256:abc"})
    with pytest.raises(SettingsError, match="is plain http: the registry's API key") as err:
        load({**IMAGE, "triton_image_registry_url": "http://registry.corp", "triton_registry_api_key": "nvapi-s3"})
    assert "nvapi-s3" not in str(err.value)
    local = load({**IMAGE, "triton_image_registry_url": "http://127.0.0.1:5000", "triton_registry_api_key": "nvapi-s3"})
    assert "nvapi-s3" not in repr(local)
    assert local.registry_credentials == "$oauthtoken\nnvapi-s3"  # NGC's user where none is named
    harbor = load({**IMAGE, "triton_registry_user": "robot$ci", "triton_registry_api_key": "s3"})
    assert harbor.registry_credentials == "robot$ci\ns3" and load(IMAGE).registry_credentials == ""
    with pytest.raises(SettingsError, match=r"triton_registry_user = .*must be a user name: no spaces or ':'"):
        load({**IMAGE, "triton_registry_user": "ci:pass", "triton_registry_api_key": "s3"})


def test_the_image_is_the_artifact_its_cache_and_its_pin() -> None:
    settings = load(IMAGE)
    artifact = choose_artifact(settings, Layout(settings))
    assert artifact is not None and artifact.image
    assert artifact.url == "https://nvcr.io/v2/nvidia/tritonserver" and artifact.sha256 == "4f" * 32
    assert artifact.version == "25.01-py3" and artifact.archive == "/var/lib/triton-provisioner/downloads/images"
    assert cache_proof(artifact) == f"{artifact.archive}/blobs/sha256/{'4f' * 32}"
    mirror = load({**IMAGE, "triton_image_registry_url": "http://127.0.0.1:5000"})
    assert choose_artifact(mirror, Layout(mirror)).url == "http://127.0.0.1:5000/v2/nvidia/tritonserver"


def test_a_build_that_needs_a_newer_glibc_than_the_hosts_is_refused_before_it_is_installed(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NGC's images are built on the newest Ubuntu: their server asks for a glibc a Debian 12 host lacks."""
    newer = layer(("opt/tritonserver/backends/onnxruntime/libtriton_onnxruntime.so", b"\0GLIBC_2.2.5\0GLIBC_2.99\0"))
    index, _ = registry.push("25.99-py3", CONFIG, [BASE, TOP, newer])
    cache, dest = tmp_path / "cache", tmp_path / "image"
    assert pull(registry, index, cache) == 0
    assert unpack(cache, index, dest) == 10
    err = capsys.readouterr().err
    assert "this build needs glibc 2.99 (backends/onnxruntime/libtriton_onnxruntime.so links GLIBC_2.99)" in err
    assert not dest.exists() and not Path(f"{dest}.tmp").exists()


def test_only_the_backends_the_models_use_are_unpacked(registry: Registry, tmp_path: Path) -> None:
    more = layer(("opt/tritonserver/backends/onnxruntime/libtriton_onnxruntime.so", b"onnx"))
    index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP, more])
    cache = tmp_path / "cache"
    assert pull(registry, index, cache) == 0
    assert unpack(cache, index, tmp_path / "python-only", "python") == 0
    assert sorted(p.name for p in (tmp_path / "python-only" / "backends").iterdir()) == ["python"]
    assert "backends=python\n" in (tmp_path / "python-only" / ".provisioner").read_text()
    assert unpack(cache, index, tmp_path / "both", "onnxruntime,python") == 0
    assert sorted(p.name for p in (tmp_path / "both" / "backends").iterdir()) == ["onnxruntime", "python"]


def test_the_image_keeps_the_backends_of_the_models_and_names_its_folder_by_them(tmp_path: Path) -> None:
    folder = triton_folder(tmp_path, "densenet", ONNX_CONFIG, model_py=False)
    settings = load({**IMAGE, "models": [{"name": "densenet", "source": f"triton:{folder}"}]})
    artifact = choose_artifact(settings, Layout(settings))
    assert artifact is not None and artifact.backends == ("onnxruntime", "python")
    assert version_dir_name(artifact.version, artifact.sha256, "3.12", artifact.backends) == (
        "25.01-py3-4f4f4f4f4f4f-py3.12-onnxruntime-python"
    )
    assert choose_artifact(load(IMAGE), Layout(load(IMAGE))).backends == ("python",)
