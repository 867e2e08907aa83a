"""The compatibility rules as data: every number here has its source beside it.

Sources, cited by key below:
  [pytriton-0.7.0]  the nvidia-pytriton 0.7.0 wheel itself, inspected with readelf/objdump
                    (../shared/notes/triton-native.md, checked on Debian 12)
  [pytriton-log]    pytriton CHANGELOG: which Triton each pytriton release carries
  [build.py]        triton-inference-server/server build.py: base OS, stub Python, glibc
  [relnotes]        NVIDIA Triton release notes: CUDA per release, minimum compute capability
  [cuda-compat]     NVIDIA CUDA compatibility guide: minimum driver per CUDA version
  [torch-matrix]    pytorch RELEASE.md release compatibility matrix
  [apt]             package contents (packages.debian.org, packages.ubuntu.com); Debian's
                    checked with apt-cache on bookworm and trixie test hosts (2026-12-01)
  [cuda-minor]      NVIDIA CUDA compatibility guide, "minor version compatibility": an
                    application built with any CUDA X.y runs on any driver of CUDA major X
                    that meets the major's minimum; pytorch/pytorch#155141 (torch 2.8 cu12x
                    on driver 550 / CUDA 12.4), eullm/eullm#428 (cu130 refused by a 12.x driver)
  [torch-cuda12-end] PyTorch dev-discuss notice (Sep 2026): 2.15 publishes no CUDA 12 wheels,
                    2.14 is the last release with a CUDA 12.x variant
  [torch-archs]     the GPU architectures (compute capabilities) each official x86_64 wheel carries
                    kernels for: pytorch/pytorch .ci/manywheel/build_cuda.sh TORCH_CUDA_ARCH_LIST per
                    release (2.8-2.10 read: base 7.0-9.0, 12.6 adds 5.0 and 6.0, 12.8/12.9 add 10.0
                    and 12.0, 13.0 is 7.5-12.0+PTX); 2.4-2.7 from the published packages' arch lists
                    (moi90/pytorch_compute_capabilities); 2.9 restated in Comfy-Org/ComfyUI#16438
                    (2026-09); 2.10 cu128 without sm_60 seen in Kaggle/kaggle-cli#1151; Volta out of
                    cu128 from 2.11 (PyTorch 2.11 release notes)
  [cuda-arch]       NVIDIA CUDA C++ Programming Guide, "binary compatibility": a cubin for compute
                    capability X.y runs on X.z with z >= y only; PTX is compiled for any newer GPU
  [pbs]             astral-sh/python-build-standalone: `install_only` CPython builds (python/bin,
                    python/lib/libpython3.X.so.1.0, RUNPATH $ORIGIN/../lib), the Pythons uv installs
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TritonBuild:
    """What one Triton server build needs from a host."""

    version: str  # server version, "2.51.0"
    release: str  # NGC release it matches, "24.10"
    min_glibc: str
    min_glibcxx: str
    cuda: str  # CUDA the build was made with
    min_compute_capability: str
    numpy_spec: str  # what the python backend stub's numpy must satisfy
    host_sonames: tuple[str, ...]  # sonames taken from the host (beyond glibc's own)


@dataclass(frozen=True)
class PytritonRelease:
    """An nvidia-pytriton wheel on PyPI that carries a Triton build."""

    version: str
    triton: str  # server version inside
    url: str  # where PyPI serves the wheel
    sha256: str
    stub_pythons: tuple[str, ...]  # python_backend_stubs/<minor>/ in the wheel
    bundled_libpython: tuple[str, ...]  # stubs whose libpython ships in the wheel's libs
    archs: tuple[str, ...]


# Sonames every glibc host has with libc6 itself; never reported, never installed.
GLIBC_SONAMES = frozenset(
    {
        "libc.so.6",
        "libm.so.6",
        "libdl.so.2",
        "libpthread.so.0",
        "librt.so.1",
        "libresolv.so.2",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    }
)

TRITON_BUILDS: dict[str, TritonBuild] = {
    # [pytriton-0.7.0]: highest GLIBC_2.35 / GLIBCXX_3.4.30 over every ELF file in the wheel;
    # the only NEEDED sonames not bundled are libz, libstdc++ and libgcc_s (and libc's own).
    # [relnotes] 24.10 = CUDA 12.6, compute capability >= 6.0; [build.py] numpy<2 for 2.49-2.71
    # (the 2.51 stub dies on BYTES tensors with numpy 2, checked).
    "2.51.0": TritonBuild(
        version="2.51.0",
        release="24.10",
        min_glibc="2.35",
        min_glibcxx="3.4.30",
        cuda="12.6",
        min_compute_capability="6.0",
        numpy_spec="<2",
        host_sonames=("libz.so.1", "libstdc++.so.6", "libgcc_s.so.1"),
    ),
    # [pytriton-log] 0.5.12 carries 2.50.0, 0.5.11 carries 2.49.0; same Ubuntu 22.04 base [build.py].
    "2.50.0": TritonBuild(
        version="2.50.0",
        release="24.09",
        min_glibc="2.35",
        min_glibcxx="3.4.30",
        cuda="12.6",
        min_compute_capability="6.0",
        numpy_spec="<2",
        host_sonames=("libz.so.1", "libstdc++.so.6", "libgcc_s.so.1"),
    ),
}

# The runtime libraries of a Triton copied out of a 22.04-based NGC container (tarball
# source), which bundles none of them [build.py, notes]. Boost/rapidjson are header-only.
CONTAINER_HOST_SONAMES: tuple[str, ...] = (
    "libb64.so.0d",
    "libre2.so.9",
    "libnuma.so.1",
    "libjemalloc.so.2",
    "libtcmalloc.so.4",
    "libcurl.so.4",
    "libgomp.so.1",
    "libarchive.so.13",
    "libz.so.1",
    "libstdc++.so.6",
    "libgcc_s.so.1",
)


@dataclass(frozen=True)
class ImageBase:
    """What the OS an NGC image is built on gives its Triton, which a host must give it instead."""

    glibc: str  # the glibc its binaries were linked against: they run on it and newer only
    glibcxx: str  # the newest GLIBCXX_ version of its libstdc++
    host_sonames: tuple[str, ...]  # the libraries its Triton takes from the image's OS (its apt-get installs)


# An image's OS, as the org.opencontainers.image.ref.name / .version labels of Ubuntu's official images
# (which NGC's images are built on) name it. [apt]: libc6 2.35 and libstdc++6 of gcc 12 (GLIBCXX_3.4.30) on
# 22.04, libc6 2.39 and gcc 14's (GLIBCXX_3.4.33) on 24.04; a binary linked against glibc X runs on X and
# newer only (PEP 600, the manylinux rule). [build.py]: the server image's apt-get installs libb64-0d,
# libcurl4, libgoogle-perftools, libjemalloc, libnuma, libarchive (python backend) and libgomp1
# (onnxruntime, pytorch): the same sonames on both, but re2 (libre2-9 on 22.04, libre2-10 on 24.04).
IMAGE_BASES: dict[tuple[str, str], ImageBase] = {
    ("ubuntu", "22.04"): ImageBase("2.35", "3.4.30", CONTAINER_HOST_SONAMES),
    ("ubuntu", "24.04"): ImageBase(
        "2.39", "3.4.33", tuple("libre2.so.10" if s == "libre2.so.9" else s for s in CONTAINER_HOST_SONAMES)
    ),
}

# The Triton releases whose python backend stub needs numpy<2 [build.py: "numpy<2" pinned for 2.49-2.71]:
# a build the tables do not list (an image's) is checked against this range.
NUMPY_LT2_TRITON = ("2.49", "2.71")

# The backends a pytriton wheel's Triton carries: tritonserver/backends/ holds python/ only (`unzip -l`
# of nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl, 2026-12-01). NGC's tarball carries more.
PYTRITON_BACKENDS = ("python",)

PYTRITON_RELEASES: dict[str, PytritonRelease] = {
    # [pytriton-0.7.0] checked: 55 MB wheel, sha256 below, stubs 3.8-3.13, the 3.13 stub links
    # a libpython3.13 shipped in nvidia_pytriton.libs; manylinux_2_35_x86_64 only.
    "0.7.0": PytritonRelease(
        version="0.7.0",
        triton="2.51.0",
        url="https://files.pythonhosted.org/packages/65/15/9192f7ffe7fab32f545d2a51bdde01e8a50363b8694f0d441efe0cc5310d/"
        "nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl",
        sha256="21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df",
        stub_pythons=("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"),
        bundled_libpython=("3.13",),
        archs=("x86_64",),
    ),
}

# Minimum Linux driver per CUDA major (minor-version compatibility) [cuda-compat], [cuda-minor].
CUDA_MAJOR_MIN_DRIVER = {"11": "450.80.02", "12": "525.60.13", "13": "580.0"}
# Driver that ships with each toolkit: full feature support [cuda-compat].
CUDA_TOOLKIT_DRIVER = {
    "11.8": "520.61.05",
    "12.1": "530.30.02",
    "12.4": "550.54.14",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
}

# CUDA variants of the official PyTorch wheels per minor version [torch-matrix]; "cpu" always.
TORCH_CUDA_VARIANTS: dict[str, tuple[str, ...]] = {
    "2.4": ("cu118", "cu121", "cu124"),
    "2.5": ("cu118", "cu121", "cu124"),
    "2.6": ("cu118", "cu124", "cu126"),
    "2.7": ("cu118", "cu126", "cu128"),
    "2.8": ("cu126", "cu128", "cu129"),
    "2.9": ("cu126", "cu128", "cu130"),
    "2.10": ("cu126", "cu128", "cu130"),
    "2.11": ("cu126", "cu128", "cu130"),
    "2.12": ("cu126", "cu130", "cu132"),
    # 2.13 and 2.14 keep 2.12's set [torch-matrix]; 2.14 is the last with CUDA 12 [torch-cuda12-end].
    # Not re-checked against download.pytorch.org from here (no network to it): see the notes.
    "2.13": ("cu126", "cu130", "cu132"),
    "2.14": ("cu126", "cu130", "cu132"),
    "2.15": ("cu130", "cu132"),  # [torch-cuda12-end]
}
# CUDA 13 builds drop GPUs below compute capability 7.5 [torch-matrix] (the rule where a torch minor
# has no TORCH_CUDA_ARCHS entry).
CUDA13_MIN_COMPUTE_CAPABILITY = "7.5"

# The architectures each x86_64 wheel variant carries kernels for, per torch minor [torch-archs];
# "+PTX" also carries PTX for it, which newer GPUs compile at load [cuda-arch]. A wheel without a
# kernel for the GPU installs and then fails at the first CUDA call ("no kernel image is available").
_CUDA11_ARCHS = ("3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")
_LEGACY_ARCHS = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")  # 12.1-12.6: Maxwell to Hopper
_CU128_27 = (*_LEGACY_ARCHS, "10.0", "12.0")  # 2.7's 12.8 build still carried Maxwell and Pascal
_CU128_28 = ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0")  # Maxwell and Pascal out from 2.8
_CU129 = ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX")
_CU128_211 = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")  # Volta out of 12.8 from 2.11
_CU13 = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX")
TORCH_CUDA_ARCHS: dict[str, dict[str, tuple[str, ...]]] = {
    "2.4": {"cu118": _CUDA11_ARCHS, "cu121": _LEGACY_ARCHS, "cu124": _LEGACY_ARCHS},
    "2.5": {"cu118": _CUDA11_ARCHS, "cu121": _LEGACY_ARCHS, "cu124": _LEGACY_ARCHS},
    "2.6": {"cu118": _CUDA11_ARCHS, "cu124": _LEGACY_ARCHS, "cu126": _LEGACY_ARCHS},
    "2.7": {"cu118": _CUDA11_ARCHS, "cu126": _LEGACY_ARCHS, "cu128": _CU128_27},
    "2.8": {"cu126": _LEGACY_ARCHS, "cu128": _CU128_28, "cu129": _CU129},
    "2.9": {"cu126": _LEGACY_ARCHS, "cu128": _CU128_28, "cu130": _CU13},
    "2.10": {"cu126": _LEGACY_ARCHS, "cu128": _CU128_28, "cu130": _CU13},
    "2.11": {"cu126": _LEGACY_ARCHS, "cu128": _CU128_211, "cu130": _CU13},
    # 2.12-2.15: 2.11's lists carried forward, cu132 as cu130 (not re-read from here: no network to
    # the build scripts of those releases); cu126 stays the only build with Maxwell, Pascal and Volta.
    "2.12": {"cu126": _LEGACY_ARCHS, "cu130": _CU13, "cu132": _CU13},
    "2.13": {"cu126": _LEGACY_ARCHS, "cu130": _CU13, "cu132": _CU13},
    "2.14": {"cu126": _LEGACY_ARCHS, "cu130": _CU13, "cu132": _CU13},
    "2.15": {"cu130": _CU13, "cu132": _CU13},
}

# soname -> apt package, per distro release. Only releases listed in KNOWN_RELEASES are
# answered; for any other the audit says the name is not known rather than guess one.
# None = that release has no package with this soname (never symlink another soname to it).
# [apt]: Debian 13 and Ubuntu 24.04 renamed several libraries for the 64-bit time_t change
# (the "t64" suffix: libcurl4t64, libarchive13t64, libgoogle-perftools4t64 ...).
KNOWN_RELEASES: tuple[tuple[str, str], ...] = (
    ("debian", "11"),
    ("debian", "12"),
    ("debian", "13"),
    ("ubuntu", "20.04"),
    ("ubuntu", "22.04"),
    ("ubuntu", "24.04"),
)
_SAME_EVERYWHERE = dict.fromkeys(KNOWN_RELEASES)
_T64 = (("debian", "13"), ("ubuntu", "24.04"))


def _everywhere(package: str) -> dict[tuple[str, str], str | None]:
    return {release: package for release in _SAME_EVERYWHERE}


def _t64(package: str) -> dict[tuple[str, str], str | None]:
    """A library renamed <name>t64 on the 64-bit time_t releases [apt]."""
    return {release: package + ("t64" if release in _T64 else "") for release in _SAME_EVERYWHERE}


SONAME_PACKAGES: dict[str, dict[tuple[str, str], str | None]] = {
    "libz.so.1": _everywhere("zlib1g"),
    "libstdc++.so.6": _everywhere("libstdc++6"),
    "libgcc_s.so.1": _everywhere("libgcc-s1"),
    "libb64.so.0d": _everywhere("libb64-0d"),
    "libnuma.so.1": _everywhere("libnuma1"),
    "libjemalloc.so.2": _everywhere("libjemalloc2"),
    "libgomp.so.1": _everywhere("libgomp1"),
    # libre2.so.9 is libre2-9 up to Debian 12 / Ubuntu 22.04; Debian 13 ships libre2-11
    # (libre2.so.11), Ubuntu 24.04 libre2-10 (libre2.so.10): neither has .so.9 [apt].
    "libre2.so.9": {
        ("debian", "11"): "libre2-9",
        ("debian", "12"): "libre2-9",
        ("debian", "13"): None,
        ("ubuntu", "20.04"): None,  # libre2-5
        ("ubuntu", "22.04"): "libre2-9",
        ("ubuntu", "24.04"): None,
    },
    "libre2.so.10": {**dict.fromkeys(KNOWN_RELEASES), ("ubuntu", "24.04"): "libre2-10"},  # an image on 24.04
    "libtcmalloc.so.4": _t64("libgoogle-perftools4"),
    "libcurl.so.4": _t64("libcurl4"),
    "libarchive.so.13": _t64("libarchive13"),
}
# The Python minor versions each release ships, with their libpython and venv packages [apt]:
# libpython3.X (Ubuntu 24.04: libpython3.12t64, the time_t rename) and python3.X-venv.
DISTRO_PYTHONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("debian", "11"): ("3.9",),
    ("debian", "12"): ("3.11",),
    ("debian", "13"): ("3.13",),
    ("ubuntu", "20.04"): ("3.8",),
    ("ubuntu", "22.04"): ("3.10",),
    ("ubuntu", "24.04"): ("3.12",),
}
LIBPYTHON_PACKAGE_SUFFIX: dict[tuple[str, str], str] = {("ubuntu", "24.04"): "t64"}

# uv, the installer that puts the wheelhouse into the venv (venv_installer = "uv") and installs a
# standalone CPython where no host Python fits: one pinned release, its wheel's URL and sha256 per
# machine [pypi-uv: https://pypi.org/pypi/uv/0.13.9/json, checked 2026-12-01: manylinux_2_17_x86_64 and
# manylinux_2_28_aarch64; the URLs as pip download reports them]. The venv step has pip download it into
# the wheelhouse (its tools/ folder) with --require-hashes; the standalone step fetches the file itself.
UV_VERSION = "0.13.9"
_PYPI = "https://files.pythonhosted.org/packages"
UV_WHEELS: dict[str, tuple[str, str]] = {
    "x86_64": (
        f"{_PYPI}/3d/aa/26d64642d808de4a652579ef950d7cd2d37f080a8babf9c67c6b75fc4c3f/"
        "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
    ),
    "aarch64": (
        f"{_PYPI}/fe/2f/51a5de367c602592c018a42a23d57fba5f2689fe6c3bf025dcf043b39c61/"
        "uv-0.13.9-py3-none-manylinux_2_28_aarch64.whl",
        "ecb6028d79dc96fbeafffe5c8af62a7099487ebc05a701e76714eebcffd06375",
    ),
}
UV_SHA256 = tuple(sha for _, sha in UV_WHEELS.values())

# The pip that downloads a wheelhouse (tasks/venv/wheelhouse.py): the venv's own pip fetches it into the
# wheelhouse's tools/ folder and installs it from there, --require-hashes both times [pypi-pip:
# https://pypi.org/simple/pip/, checked 2026-12-06: pip-26.0-py3-none-any.whl and its sha256, Requires-Python
# >=3.9]. The pip a venv starts with on Debian 12 (23) spends most of a download judging every file its
# index pages list (cProfile: Wheel.supported): a lock's 43 files (79 MB) from the test bed's PyPI took 9.4 s
# of CPU with pip 23.2, 4.0 s with 26.0 (BENCHMARKS.md section 25). An older Python keeps its own pip.
PIP_DOWNLOADER_VERSION = "26.0"
PIP_DOWNLOADER_SHA256 = "98436feffb9e31bc9339cf369fd55d3331b1580b6a6f1173bacacddcf9c34754"
PIP_DOWNLOADER_PYTHON = (3, 9)

# Serving defaults where a model's entry does not set them (tasks/models/serving.py), measured on the test
# host's 2 CPUs with a DistilBERT-base-sized classifier (BENCHMARKS.md, section 8; bench/serving_defaults.py,
# 2026-12-01): one copy with torch's threads = the CPUs, batches up to 16, served 107 texts/s at
# concurrency 32 (117% of the in-process loop at batch 8; batch 8: 83, 91%) and the same as batch 8
# at concurrency 8 (77). Two copies of one thread each served 115 at concurrency 32 but 70 at
# concurrency 8 (one thread per request when few come): a user with many concurrent clients sets
# instance_count = 2. Copies that ask for more threads than there are CPUs lose most (2 x 2: 36).
# On a GPU: one copy, batches up to 8 (the earlier default; not measured here).
CPU_INSTANCES = 1
CPU_MAX_BATCH_SIZE = 16
GPU_INSTANCES = 1
GPU_MAX_BATCH_SIZE = 8

# The system CA bundle of Debian and Ubuntu (package ca-certificates). A standalone CPython's
# pip trusts only its own certifi bundle; pointed here it trusts what the host trusts (a
# corporate proxy's CA, a private mirror's), as the distribution's own pip does [apt].
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

# The Python minor versions a python backend stub may be built for (what the audit can name).
STUB_PYTHON_MINORS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")

# numpy<2 (which the 2.49-2.71 stubs need) has wheels up to Python 3.12: numpy 1.26.4 is the
# last 1.x release and supports 3.9-3.12 (numpy release notes); 3.13 needs numpy >= 2.1.
NUMPY_LT2_MAX_PYTHON = "3.12"
