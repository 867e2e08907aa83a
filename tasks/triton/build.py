"""The Triton build against the host: which build and artifact the settings name, and whether the
host's OS, C runtime and libraries can run it."""

from __future__ import annotations

import re

from config.layout import Layout
from config.ports import FRONT_PACKAGE
from config.settings import Settings
from config.versions import version_key
from facts.image import ImageConfigData
from planner import tables
from planner.assessment import Artifact, HostFacts
from planner.items import Item, blocker, missing, ok
from tasks.apt.distro import distro_key, package_for, unknown_package_fix
from tasks.models.serving import model_backends
from tasks.venv.torch_choice import driver_cuda


def wanted_build(
    settings: Settings, image: ImageConfigData | None = None
) -> tuple[tables.TritonBuild | None, tables.PytritonRelease | None]:
    """The Triton build the settings ask for: of an image, what its config says (image: read before the pull);
    None for a tarball (known only once unpacked) or an image whose config could not be read."""
    if settings.triton_source == "image" and image:
        return image_build(image)[0], None
    if settings.triton_source != "pytriton":
        return None, None
    release = tables.PYTRITON_RELEASES.get(settings.triton_pytriton_version)
    if release is None:
        return None, None
    return tables.TRITON_BUILDS.get(release.triton), release


_VERSION = r"[0-9]{1,4}(\.[0-9]{1,6}){0,3}"  # 2.51.0, 24.10, 12.6.2.004


def _minor(version: str) -> str:
    """ "12.6.2.004" -> "12.6"."""
    return ".".join(version.split(".")[:2])


def image_build(image: ImageConfigData) -> tuple[tables.TritonBuild | None, str]:
    """The build an image's config describes (its Triton from TRITON_SERVER_VERSION, as NVIDIA's build.py
    sets it; its CUDA from CUDA_VERSION; its OS from Ubuntu's labels): (the build, "") or (None, what the
    config lacks for the rules to check it)."""
    labels, env = image["labels"], image["env"]

    def plain(text: str, pattern: str = _VERSION) -> str:
        """An image's value as the rules take it: only where it is of the expected form (an image's text is
        hostile until checked: it is printed, compared, split), else ""."""
        return text if re.fullmatch(pattern, text) else ""

    version = plain(env.get("TRITON_SERVER_VERSION") or labels.get("com.nvidia.tritonserver.version", ""))
    base_key = (
        plain(labels.get("org.opencontainers.image.ref.name", ""), r"[a-z][a-z0-9-]{0,30}"),
        plain(labels.get("org.opencontainers.image.version", ""), _VERSION),
    )
    base = tables.IMAGE_BASES.get(base_key)
    if not version:
        return None, "its config names no Triton version (TRITON_SERVER_VERSION)"
    if base is None:
        named = " ".join(base_key).strip() or "an OS its labels do not name"
        return None, f"it is built on {named}, which the table of image bases (planner/tables.py) lacks"
    low, high = tables.NUMPY_LT2_TRITON
    known = tables.TRITON_BUILDS.get(version)
    return tables.TritonBuild(
        version=version,
        release=plain(env.get("NVIDIA_TRITON_SERVER_VERSION", "")),
        min_glibc=base.glibc,
        min_glibcxx=base.glibcxx,
        cuda=_minor(plain(env.get("CUDA_VERSION") or labels.get("com.nvidia.cuda.version", ""))),
        min_compute_capability=known.min_compute_capability if known else "",
        numpy_spec="<2" if version_key(low) <= version_key(_minor(version)) <= version_key(high) else "",
        host_sonames=base.host_sonames,
    ), ""


def check_image(facts: HostFacts, settings: Settings) -> list[Item]:
    """What triton_image's config says, read before any layer is pulled: its Triton, OS and CUDA; a GPU
    whose driver's CUDA major is older than the image's refused (CUDA minor-version compatibility runs a
    12.x build on any 12.x driver [cuda-minor]). Its glibc and libraries are checked as any build's."""
    if settings.triton_source != "image":
        return []
    if facts.image is None:
        return [ok("triton image", f"its config was not read before the pull ({facts.image_read}): "
                   "its glibc is checked at the unpack, before anything is switched")]  # fmt: skip
    build, why = image_build(facts.image)
    if build is None:
        return [ok("triton image", f"{why}: its glibc is checked at the unpack, before anything is switched")]
    labels = facts.image["labels"]
    os_name = f"{labels['org.opencontainers.image.ref.name'].capitalize()} {labels['org.opencontainers.image.version']}"
    release = f" (NGC {build.release})" if build.release else ""
    cuda = f", CUDA {build.cuda}" if build.cuda else ", no CUDA"
    read = f"read from {facts.image_read}"
    items = [ok("triton image", f"Triton {build.version}{release}, built on {os_name}{cuda}; {read}")]
    nvidia = facts.nvidia
    host_cuda = driver_cuda(nvidia) if nvidia and nvidia["gpus"] else None
    if nvidia and build.cuda and host_cuda:
        driver = nvidia["driver_version"] or "?"
        if int(host_cuda.split(".")[0]) < int(build.cuda.split(".")[0]):
            items.append(
                blocker(
                    "cuda",
                    f"the image's Triton is built with CUDA {build.cuda}; "
                    f"driver {driver} runs CUDA {host_cuda} at most",
                    f"pin an image of an NGC release built with CUDA {host_cuda.split('.')[0]}.x, or install an "
                    f"NVIDIA driver for CUDA {build.cuda} or newer",
                )
            )
        else:
            items.append(ok("cuda", f"the image's CUDA {build.cuda} on driver {driver} (CUDA {host_cuda})"))
    return items


def stub_pythons(release: tables.PytritonRelease | None) -> tuple[str, ...]:
    """The Python minors this build ships a python backend stub for."""
    if release:
        return release.stub_pythons
    return tables.PYTRITON_RELEASES["0.7.0"].stub_pythons  # tarball: a layout with python_backend_stubs/


def image_parts(image: str) -> tuple[str, str, str]:
    """("nvcr.io", "nvidia/tritonserver", "25.01-py3") of "nvcr.io/nvidia/tritonserver:25.01-py3" (checked
    by config/checks.py: a registry, a repository, a tag)."""
    registry, _, rest = image.partition("/")
    repository, _, tag = rest.rpartition(":")
    return registry, repository, tag


def image_registry_url(settings: Settings) -> str:
    """Where triton_image's registry answers: triton_image_registry_url where set, else HTTPS at its host."""
    return settings.triton_image_registry_url or f"https://{image_parts(settings.triton_image)[0]}"


def cache_proof(artifact: Artifact) -> str:
    """The file whose sha256 is the artifact's where the cache holds it: the archive, or of an image's cache
    (a folder of blobs) the blob of its pinned digest (its layers then checked as they are pulled)."""
    if artifact.image:
        return f"{artifact.archive}/blobs/sha256/{artifact.sha256}"
    return artifact.archive


def choose_artifact(settings: Settings, layout: Layout) -> Artifact | None:
    """The configured source's URL, sha256, version, cache path and strip count; None for an unknown
    pytriton release (check_platform refuses it)."""
    if settings.triton_source == "pytriton":
        release = tables.PYTRITON_RELEASES.get(settings.triton_pytriton_version)
        if release is None:
            return None
        name = release.url.rsplit("/", 1)[1]
        url = settings.triton_pytriton_url or release.url
        return Artifact(url, settings.triton_pytriton_sha256, release.triton, f"{layout.downloads}/{name}", 0)
    if settings.triton_source == "image":
        _, repository, tag = image_parts(settings.triton_image)
        url = f"{image_registry_url(settings)}/v2/{repository}"
        digest = settings.triton_image_digest.removeprefix("sha256:")
        backends = model_backends(settings.models)  # only those the models use: NGC's image carries GBs of others
        return Artifact(url, digest, tag, layout.images, 0, image=True, backends=backends)
    sha = settings.triton_tarball_sha256
    return Artifact(
        settings.triton_tarball_url,
        sha,
        "",
        f"{layout.downloads}/triton-{sha[:16]}.tar",
        settings.triton_tarball_strip_components,
    )


def check_platform(facts: HostFacts, settings: Settings, release: tables.PytritonRelease | None) -> list[Item]:
    """A Debian or Ubuntu host, and a pytriton release the tables know, for its architecture."""
    items = []
    os_ = facts.os
    distro = distro_key(os_)[0]
    if os_ is None:
        items.append(blocker("os", "no /etc/os-release: cannot tell the distribution", "use Debian or Ubuntu"))
    elif distro not in ("debian", "ubuntu"):
        items.append(
            blocker(
                "os",
                f"{os_['pretty_name'] or distro} is not Debian or Ubuntu",
                "use Debian 12+ or Ubuntu 22.04+ (apt is how runtime libraries are installed)",
            )
        )
    else:
        items.append(ok("os", f"{os_['pretty_name']} ({os_['arch']})"))
    if settings.triton_source != "pytriton":
        return items
    if release is None:
        known = ", ".join(sorted(tables.PYTRITON_RELEASES))
        items.append(
            blocker(
                "triton build",
                f"nvidia-pytriton {settings.triton_pytriton_version} is not in the compatibility table",
                f"set triton_pytriton_version to one of: {known}",
            )
        )
    elif os_ and os_["arch"] not in release.archs:
        items.append(
            blocker(
                "triton build",
                f"nvidia-pytriton {release.version} ships {', '.join(release.archs)} only, host is {os_['arch']}",
                "use triton_source=tarball with a build for this architecture (e.g. a Jetson release)",
            )
        )
    elif release.sha256 != settings.triton_pytriton_sha256:
        items.append(
            blocker(
                "triton build",
                f"triton_pytriton_sha256 differs from the published sha256 of nvidia-pytriton {release.version}",
                f"set triton_pytriton_sha256 = {release.sha256}",
            )
        )
    else:
        items.append(ok("triton build", f"Triton {release.triton} from nvidia-pytriton {release.version}"))
    return items


def check_c_runtime(facts: HostFacts, build: tables.TritonBuild, image: bool = False) -> list[Item]:
    """glibc and libstdc++ at least as new as the build was linked against (image: an image's build, whose
    fix is another image rather than another pytriton release)."""
    fix = (
        f"use a host with glibc >= {build.min_glibc}, or pin an image of an earlier NGC release, built on an older "
        "Ubuntu (22.04: glibc 2.35)"
        if image
        else f"use a host with glibc >= {build.min_glibc} (Debian 12+, Ubuntu 22.04+), or "
        "triton_source=tarball with an older build (Triton 2.30-2.33 needs glibc 2.31)"
    )
    items = []
    glibc = facts.c_runtime.get("glibc")
    if glibc is None:
        items.append(
            blocker("glibc", "no GNU libc found (musl?)", "use a glibc distribution: Debian 12+ or Ubuntu 22.04+")
        )
    elif version_key(glibc) < version_key(build.min_glibc):
        items.append(
            blocker(
                "glibc",
                f"glibc {glibc} is older than {build.min_glibc}, which Triton {build.version} needs",
                fix,
            )
        )
    else:
        items.append(ok("glibc", f"{glibc} >= {build.min_glibc}"))
    glibcxx = facts.c_runtime.get("glibcxx")
    if glibcxx and version_key(glibcxx) < version_key(build.min_glibcxx):
        items.append(
            blocker(
                "libstdc++",
                f"libstdc++ provides GLIBCXX_{glibcxx}; Triton {build.version} needs GLIBCXX_{build.min_glibcxx}",
                f"use a host whose libstdc++6 provides GLIBCXX_{build.min_glibcxx} (gcc 14's: Debian 13, Ubuntu 24.04)"
                if image
                else "use a host whose libstdc++6 comes from gcc 12 or newer (Debian 12+, Ubuntu 22.04+)",
            )
        )
    elif glibcxx:
        items.append(ok("libstdc++", f"GLIBCXX_{glibcxx} >= {build.min_glibcxx}"))
    return items


def check_host_libraries(facts: HostFacts, build: tables.TritonBuild | None) -> tuple[list[Item], list[str]]:
    """The shared libraries the server links from the host: (items, apt packages that add the missing)."""
    sonames = build.host_sonames if build else tables.CONTAINER_HOST_SONAMES
    items, packages = [], []
    for soname in sonames:
        if soname in tables.GLIBC_SONAMES:
            continue
        if soname in facts.linker_cache:
            items.append(ok(soname, facts.linker_cache[soname][0]))
            continue
        why = "needed by the Triton server, not in the linker cache"
        pkg = package_for(soname, facts.os)
        if pkg:
            packages.append(pkg)
            items.append(missing(soname, why, f"apt-get install {pkg}"))
        else:
            items.append(blocker(soname, why, unknown_package_fix(soname, facts.os)))
    return items, packages


def runtime_packages(facts: HostFacts, settings: Settings, python_minor: str) -> list[str]:
    """Every apt package the server's host libraries and the stub's libpython come from on this
    distro, present or not (deploy/uninstall.py lists those it leaves installed)."""
    build, _ = wanted_build(settings, facts.image)
    sonames = [*(build.host_sonames if build else tables.CONTAINER_HOST_SONAMES), f"libpython{python_minor}.so.1.0"]
    wanted = {p for s in sonames if s not in tables.GLIBC_SONAMES and (p := package_for(s, facts.os))}
    return sorted(wanted | {*front_packages(settings)})


def front_packages(settings: Settings) -> list[str]:
    """The front's package where triton_upgrade = "front" (HAProxy: tasks/server/front_plan.py); apt installs it."""
    return [FRONT_PACKAGE] if settings.triton_upgrade == "front" else []
