"""Compatibility rules over a table of hosts: what is decided, what is refused, and why."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from config.settings import SettingsError, load
from planner import disk_needs, tables
from planner.rules import HostFacts, assess, package_for

FIX = Path(__file__).parents[1] / "fixtures" / "facts"


def fixture(name: str):
    return json.loads((FIX / f"{name}.json").read_text())["fact"]


def os_release(distro: str, version: str, codename: str, arch: str = "x86_64") -> dict:
    return {
        "id": distro,
        "version_id": version,
        "codename": codename,
        "id_like": "",
        "pretty_name": f"{distro} {version}",
        "arch": arch,
    }


def py(version: str, libpython: bool = True, venv: bool = True) -> dict:
    lib = f"/usr/lib/x86_64-linux-gnu/libpython{version}.so.1.0" if libpython else None
    return {
        version: {
            "version": version,
            "path": f"/usr/bin/python{version}",
            "found_at": f"/usr/bin/python{version}",
            "full_version": f"{version}.1",
            "libpython": lib,
            "can_venv": venv,
            "blocked_by": "",
        }
    }


def space(free_gib: float, mount: str = "/", fs_type: str = "ext4") -> dict:
    return {
        "existing": mount,
        "mount": mount,
        "fs_type": fs_type,
        "free_bytes": int(free_gib * disk_needs.GIB),
        "total_bytes": 100 * disk_needs.GIB,
    }


def host(
    distro=("debian", "12", "bookworm"),
    glibc="2.36",
    glibcxx="3.4.30",
    pythons=None,
    nvidia=None,
    cache_extra=(),
    free=50.0,
    persist_dir=None,
) -> HostFacts:
    cache = {s: [f"/lib/x86_64-linux-gnu/{s}"] for s in ("libz.so.1", "libstdc++.so.6", "libgcc_s.so.1", *cache_extra)}
    pythons = pythons if pythons is not None else py("3.11", libpython=False)
    pythons = list(pythons.values()) if isinstance(pythons, dict) else pythons  # py()'s by version, or a fact
    for p in pythons:
        if p["libpython"]:
            cache[p["libpython"].rsplit("/", 1)[1]] = [p["libpython"]]
    return HostFacts(
        os=os_release(*distro),
        c_runtime={"glibc": glibc, "glibcxx": glibcxx},
        pythons=pythons,
        nvidia=nvidia,
        linker_cache=cache,
        free_install=space(free),
        free_venv=space(free),
        free_persist=space(free, "/persist"),
        persist_dir=persist_dir,
    )


DEFAULT = load({})
GPU_NEW = fixture("nvidia.Nvidia/two-gpus-580")  # driver 580, CUDA 13.0, H100 + RTX 5880
GPU_T4 = fixture("nvidia.Nvidia/colab-t4-550")  # driver 550, CUDA 12.4, T4 (cc 7.5)
GPU_OLD = fixture("nvidia.Nvidia/old-driver-470-no-compute-cap")  # driver 470, CUDA 11.4


def by_name(assessment, name):
    return next(i for i in assessment.items if i.name == name)


def test_fresh_debian12_needs_libpython_and_is_not_blocked() -> None:
    a = assess(host(), DEFAULT)
    assert not a.blockers
    item = by_name(a, "libpython3.11.so.1.0")
    assert (item.status, item.fix) == ("missing", "apt-get install libpython3.11")
    assert a.decisions.python == "3.11"
    assert a.decisions.apt_packages == ["libpython3.11"]
    assert a.decisions.torch_requirement == "torch==2.14.1+cpu"
    assert a.decisions.torch_index == "https://download.pytorch.org/whl/cpu"
    assert by_name(a, "triton server").status == "missing"


def test_what_serving_needs_from_a_provision_is_named_by_the_rules_not_by_item_names() -> None:
    fresh = assess(host(), DEFAULT)
    assert [i.name for i in fresh.not_provisioned] == ["triton server", "venv", "environment"]
    # a missing host library or HF_HOME is a problem, but not a part of the install serve starts from
    problems = {i.name for i in fresh.problems}
    assert {"libpython3.11.so.1.0", "HF_HOME"} <= problems
    assert not {"libpython3.11.so.1.0", "HF_HOME"} & {i.name for i in fresh.not_provisioned}


def test_a_models_own_environment_is_a_part_of_the_install_read_where_the_rules_put_it(tmp_path: Path) -> None:
    """Not built: missing, and serve (which builds none) needs a provision; built with its pins: ok; a pin
    it lacks: missing again."""
    from dataclasses import replace

    from config.layout import Layout
    from tasks.venv.plan import model_env_targets

    folder = tmp_path / "clf"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    config = 'name: "clf" backend: "python" input [ { name: "T" data_type: TYPE_STRING dims: [ 1 ] } ] '
    (folder / "config.pbtxt").write_text(config + 'output [ { name: "L" data_type: TYPE_STRING dims: [ 1 ] } ]')
    (folder / "requirements.txt").write_text("transformers==4.56.2\n")
    settings = load({"models": [{"name": "clf", "source": f"triton:{folder}"}]})
    fresh = assess(host(), settings)
    where = model_env_targets(settings, Layout(settings), fresh.decisions)["clf"]
    assert where.startswith("/opt/triton/venv.model-envs/clf-")
    item = by_name(fresh, "model clf's environment")
    assert (item.status, item.detail) == ("missing", f"not built yet: {where}")
    assert item in fresh.not_provisioned
    pins = fresh.decisions.model_envs["clf"]
    built = assess(replace(host(), model_envs={where: {"python": "3.11.2", "packages": dict(pins)}}), settings)
    assert by_name(built, "model clf's environment").status == "ok"
    older = {**pins, "transformers": "4.57.1"}
    stale = assess(replace(host(), model_envs={where: {"python": "3.11.2", "packages": older}}), settings)
    assert by_name(stale, "model clf's environment").detail == f"{where}: transformers 4.57.1, 4.56.2 wanted"


@pytest.mark.parametrize(
    ("stat", "words"),
    [
        ({"user": "root", "group": "root", "mode": 777}, "mode 777: group or others may write"),
        ({"user": "root", "group": "users", "mode": 775}, "mode 775: group or others may write"),
        ({"user": "colab", "group": "colab", "mode": 755}, "owned by colab"),
    ],
)
def test_a_persist_dir_others_can_write_is_refused(stat, words) -> None:
    item = by_name(assess(host(persist_dir=stat), DEFAULT), "persist_dir")
    assert item.blocker and words in item.detail and "chmod go-w" in item.fix


def test_a_root_only_or_absent_persist_dir_is_fine() -> None:
    assert by_name(assess(host(persist_dir={"user": "root", "mode": 755}), DEFAULT), "persist_dir").status == "ok"
    assert by_name(assess(host(), DEFAULT), "persist_dir").status == "ok"


def test_ubuntu2204_python310_with_libpython_needs_nothing_from_apt() -> None:
    a = assess(host(("ubuntu", "22.04", "jammy"), glibc="2.35", pythons=py("3.10")), DEFAULT)
    assert not a.blockers and a.decisions.python == "3.10" and a.decisions.apt_packages == []


def test_ubuntu2404_python312_missing_venv_module_is_installed() -> None:
    a = assess(
        host(
            ("ubuntu", "24.04", "noble"),
            glibc="2.39",
            glibcxx="3.4.33",
            pythons=py("3.12", libpython=False, venv=False),
        ),
        DEFAULT,
    )
    assert not a.blockers
    # Ubuntu 24.04 renamed the library package for 64-bit time_t; the venv package kept its name
    assert a.decisions.apt_packages == ["libpython3.12t64", "python3.12-venv"]


def test_debian11_glibc_too_old_is_a_blocker_naming_the_fix() -> None:
    a = assess(host(("debian", "11", "bullseye"), glibc="2.31", glibcxx="3.4.28", pythons=py("3.9")), DEFAULT)
    glibc = by_name(a, "glibc")
    assert glibc.blocker and "2.31" in glibc.detail and "2.35" in glibc.detail
    assert "Debian 12" in glibc.fix
    assert by_name(a, "libstdc++").blocker


def test_debian13_python313_only_takes_a_standalone_cpython_uv_installs() -> None:
    """No Python setting at all: the newest minor the 2.51 stub takes (3.12), installed by the pinned uv."""
    a = assess(host(("debian", "13", "trixie"), glibc="2.41", glibcxx="3.4.34", pythons=py("3.13")), DEFAULT)
    assert not a.blockers
    d = a.decisions
    home = "/opt/triton/python/uv/cpython-3.12-linux-x86_64-gnu"
    assert (d.python, d.python_source, d.python_path, d.libpython_dir) == (
        "3.12",
        "uv",
        f"{home}/bin/python3.12",
        f"{home}/lib",
    )
    assert d.script_python == "/usr/bin/python3.13"  # the host's own Python runs the installer's steps
    item = by_name(a, "python")
    assert item.status == "missing" and "numpy<2" in item.detail
    assert f"installed by uv {tables.UV_VERSION} from python-build-standalone" in item.detail
    a = assess(
        host(("debian", "13", "trixie"), glibc="2.41", pythons=py("3.13")), load({"python_standalone_version": "3.11"})
    )
    assert a.decisions.python_path == "/opt/triton/python/uv/cpython-3.11-linux-x86_64-gnu/bin/python3.11"
    facts = host(("debian", "13", "trixie"), glibc="2.41", pythons=py("3.13"))
    facts.uv_pythons = ["3.12"]  # installed and checked: nothing left to do
    assert by_name(assess(facts, DEFAULT), "python").status == "ok"


def test_a_standalone_minor_the_stub_cannot_take_is_refused() -> None:
    a = assess(host(("debian", "13", "trixie"), pythons=py("3.13")), load({"python_standalone_version": "3.13"}))
    item = by_name(a, "python")
    assert item.blocker and "3.8-3.12" in item.detail and 'python_standalone_version = "3.12"' in item.fix


def test_no_python_with_a_stub_is_a_blocker() -> None:
    a = assess(host(pythons={}), DEFAULT)
    item = by_name(a, "python")
    assert item.blocker and "python3.11-venv" in item.fix and "libpython3.11" in item.fix


def test_pyenv_python_with_own_libpython_goes_on_the_library_path() -> None:
    facts = host(pythons=fixture("python.PythonInterpreters/controller-user-root"))  # root reaches both
    facts.linker_cache.pop("libpython3.11.so.1.0")
    facts.system_ca_bundle = True
    a = assess(facts, load({"triton_user": "root"}))
    assert not a.blockers
    d = a.decisions
    assert d.python_path == "/root/.pyenv/versions/3.11.7/bin/python3.11"  # first on PATH
    assert d.libpython_dir == "/root/.pyenv/versions/3.11.7/lib"
    assert d.apt_packages == []
    assert d.pip_cert == tables.SYSTEM_CA_BUNDLE  # pyenv's pip would trust certifi's bundle, not the host's


# The controller itself: a pyenv CPython under /root (0700) first on PATH, Debian's python3.11 beside it.
PYENV_FIRST = "python.PythonInterpreters/controller-pyenv"
PYENV_EXE = "/root/.pyenv/versions/3.11.7/bin/python3.11"


def test_a_python_the_server_user_cannot_run_is_passed_over_for_one_it_can() -> None:
    facts = host(pythons=fixture(PYENV_FIRST))
    facts.system_ca_bundle = True
    a = assess(facts, DEFAULT)
    assert not a.blockers
    d = a.decisions
    assert (d.python, d.python_path, d.python_source) == ("3.11", "/usr/bin/python3.11", "host")
    assert d.libpython_dir is None and d.pip_cert == ""  # Debian's own: in the loader's cache, its pip reads the CA
    item = by_name(a, "python")
    assert "/usr/bin/python3.11" in item.detail and "triton-server can run it" in item.detail
    assert f"passed over {PYENV_EXE}: triton-server cannot enter /root" in item.detail


def only_unreachable() -> list[dict]:
    return [p for p in fixture(PYENV_FIRST) if p["blocked_by"]]


def test_only_an_unreachable_python_is_refused_naming_it_the_directory_and_the_fixes() -> None:
    a = assess(host(pythons=only_unreachable()), load({"triton_python": "3.11"}))
    item = by_name(a, "python")
    assert item.blocker
    assert f"triton-server can run none that fits (passed over {PYENV_EXE}: triton-server cannot enter /root)" in (
        item.detail
    )
    assert "apt-get install python3.11 python3.11-venv libpython3.11" in item.fix
    assert f"let triton-server reach {PYENV_EXE} (it is blocked at /root)" in item.fix


def test_only_an_unreachable_python_takes_a_standalone_uv_installs_by_default() -> None:
    a = assess(host(pythons=only_unreachable()), DEFAULT)
    assert not a.blockers and a.decisions.python_source == "uv"
    assert a.decisions.python_passed_over == (f"{PYENV_EXE} (triton-server cannot enter /root)",)


def test_only_an_unreachable_python_takes_the_standalone_where_one_is_set() -> None:
    a = assess(host(pythons=only_unreachable()), load(STANDALONE))
    assert not a.blockers
    assert (a.decisions.python_source, a.decisions.python) == ("standalone", "3.12")
    assert a.decisions.script_python == PYENV_EXE  # root still runs the installer's scripts with it
    assert "can run none that fits" in by_name(a, "python").detail


def test_the_server_user_root_reaches_every_python() -> None:
    a = assess(host(pythons=only_unreachable()), load({"triton_user": "root"}))
    assert not a.blockers and a.decisions.python_path == PYENV_EXE


def test_python_without_shared_libpython_outside_the_distro_is_a_blocker() -> None:
    pythons = py("3.12", libpython=False)
    a = assess(host(pythons=pythons), DEFAULT)  # Debian 12 ships 3.11 only
    item = by_name(a, "libpython3.12.so.1.0")
    assert item.blocker and "--enable-shared" in item.fix


def test_new_driver_picks_the_newest_cuda_variant_it_supports() -> None:
    a = assess(host(nvidia=GPU_NEW), load({"torch_version": "2.8.0"}))  # cu126, cu128, cu129; CUDA 13.0
    assert a.decisions.torch_variant == "cu129"
    assert a.decisions.torch_index == "https://download.pytorch.org/whl/cu129"
    assert "runs cu129 fully" in by_name(a, "torch").detail


def test_t4_on_cuda_124_driver_runs_torch_28_by_minor_version_compatibility() -> None:
    a = assess(host(nvidia=GPU_T4), load({"torch_version": "2.8.0"}))  # no variant <= 12.4
    assert not a.blockers and a.decisions.torch_variant == "cu126"  # of cu126, cu128, cu129: the closest
    detail = by_name(a, "torch").detail
    assert "CUDA minor-version compatibility" in detail and "cu126 is the closest" in detail
    assert "kernels for sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90" in detail  # the audit row says


def test_cuda12_driver_and_a_torch_without_cuda12_names_the_last_torch_that_has_it() -> None:
    a = assess(host(nvidia=GPU_T4), load({"torch_version": "2.15.0"}))  # cu130, cu132 only
    item = by_name(a, "torch")
    assert item.blocker and "none of CUDA 12.x" in item.detail
    assert "torch_version 2.14.x" in item.fix and "driver >= 580.0" in item.fix and "torch_variant = cpu" in item.fix


def test_t4_with_torch_25_gets_cu124() -> None:
    a = assess(host(nvidia=GPU_T4), load({"torch_version": "2.5.1"}))
    assert a.decisions.torch_requirement == "torch==2.5.1+cu124"


def test_cuda13_wheels_skip_gpus_below_compute_75() -> None:
    nv = copy.deepcopy(GPU_NEW)
    nv["gpus"][1]["compute_capability"] = "7.0"
    a = assess(host(nvidia=nv), load({"torch_version": "2.12.0"}))  # cu126, cu130, cu132
    assert a.decisions.torch_variant == "cu126"


def test_old_driver_is_a_blocker_for_gpu_mode_but_cpu_works() -> None:
    a = assess(host(nvidia=GPU_OLD), DEFAULT)
    assert by_name(a, "torch").blocker
    a = assess(host(nvidia=GPU_OLD), load({"torch_variant": "cpu"}))
    assert not a.blockers and a.decisions.torch_variant == "cpu"


def test_explicit_cuda_variant_without_gpu_is_a_blocker() -> None:
    a = assess(host(), load({"torch_variant": "cu126"}))
    assert "no usable GPU" in by_name(a, "torch").detail


def test_too_little_disk_names_needed_and_free() -> None:
    a = assess(host(free=1.0), DEFAULT)
    item = by_name(a, "disk /")
    assert item.blocker and "1.00 GiB free" in item.detail and "2.29 GiB needed" in item.detail


def test_aarch64_has_no_pytriton_build() -> None:
    a = assess(host(("ubuntu", "22.04", "jammy", "aarch64"), glibc="2.35", pythons=py("3.10")), DEFAULT)
    assert by_name(a, "triton build").blocker


def test_tarball_source_checks_container_runtime_libraries() -> None:
    s = load(
        {"triton_source": "tarball", "triton_tarball_url": "http://127.0.0.1/t.tgz", "triton_tarball_sha256": "0" * 64}
    )
    a = assess(host(("ubuntu", "24.04", "noble"), glibc="2.39", pythons=py("3.12")), s)
    re2 = by_name(a, "libre2.so.9")
    assert re2.blocker and "never symlink" in re2.fix
    assert "libb64-0d" in a.decisions.apt_packages


@pytest.mark.parametrize(
    ("soname", "distro", "package"),
    [
        ("libre2.so.9", ("debian", "12"), "libre2-9"),
        ("libcurl.so.4", ("ubuntu", "24.04"), "libcurl4t64"),
        ("libcurl.so.4", ("debian", "12"), "libcurl4"),
        ("libpython3.10.so.1.0", ("ubuntu", "22.04"), "libpython3.10"),
        ("libre2.so.9", ("ubuntu", "24.04"), None),
        ("libunknown.so.1", ("debian", "12"), None),
    ],
)
def test_package_for(soname, distro, package) -> None:
    assert package_for(soname, os_release(distro[0], distro[1], "")) == package


def test_port_held_by_another_process_is_named() -> None:
    facts = host()
    facts.ports = {8000: [{"address": "0.0.0.0", "port": 8000, "pid": 77, "process": "python3"}]}
    item = by_name(assess(facts, DEFAULT), "port 8000")
    assert item.status == "incompatible" and "python3 (pid 77)" in item.detail


def test_behind_the_front_its_haproxy_holds_the_ports_and_another_on_a_slot_port_is_named() -> None:
    front = load({"triton_upgrade": "front"})
    facts = host()
    haproxy = [{"address": "127.0.0.1", "port": 8000, "pid": 55, "process": "haproxy"}]
    facts.ports = {8000: haproxy, 8011: [{"address": "127.0.0.1", "port": 8011, "pid": 88, "process": "nginx"}]}
    facts.front_pid = 55
    a = assess(facts, front)
    assert by_name(a, "port 8000").status == "ok" and "the front (HAProxy pid 55)" in by_name(a, "port 8000").detail
    slot = by_name(a, "port 8011")
    assert slot.status == "incompatible" and "grpc (slot a) port 8011 is held by nginx (pid 88)" in slot.detail
    assert "set triton_grpc_port to a free port" in slot.fix
    facts.front_pid = None  # another HAProxy (Debian's own haproxy.service, a user's) is not ours
    assert by_name(assess(facts, front), "port 8000").status == "incompatible"
    assert "port 8011" not in [i.name for i in assess(host(), DEFAULT).items]  # no slots without the front


def test_installed_triton_with_numpy2_in_venv_is_flagged() -> None:
    facts = host(pythons=py("3.11"))
    facts.triton = fixture("triton.TritonInstall/installed")
    facts.venv = {"python": "3.11.2", "packages": {"torch": "2.14.1+cpu", "numpy": "2.1.0"}}
    a = assess(facts, DEFAULT)
    assert by_name(a, "venv numpy<2").status == "incompatible"
    assert by_name(a, "venv torch").status == "ok"
    assert by_name(a, "triton server").status == "ok"


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"triton_http_port": "eighty"}, "triton_http_port"),
        ({"triton_http_port": True}, "true/false"),
        ({"torch_versoin": "2.8.0"}, "did you mean torch_version"),
        ({"triton_pytriton_sha256": "ABC"}, "64 lower-case"),
        ({"torch_version": "2.8"}, "torch_version"),
        ({"triton_tarball_url": "ftp://x"}, "http(s)"),
        ({"triton_home": "opt/triton"}, "absolute"),
        ({"triton_home": "/opt/tri ton"}, "must not hold space: Triton's python backend starts"),
        ({"triton_home": "/opt/$HOME"}, "must not hold '$'"),
        ({"http_proxy": "proxy.corp:3128"}, "must be a proxy URL"),
        ({"https_proxy": "http://proxy:port"}, "port that is not a number"),
        ({"no_proxy": "localhost, .corp"}, "separated by commas, no spaces"),
        ({"triton_source": "docker"}, "pytriton, tarball"),
        ({"triton_source": "tarball"}, "needs triton_tarball_url"),
        ({"triton_grpc_port": 8000}, "must differ"),
        ({"persist_dir": "/opt/triton/cache"}, "must not be inside"),
        ({"triton_http_address": "localhost"}, "IP"),
        ({"venv_snapshot": "maybe"}, "must be true or false"),
        ({"venv_snapshot": 1}, "must be true or false"),
    ],
)
def test_bad_settings_are_refused_with_the_key_and_fix(data, needle) -> None:
    with pytest.raises(SettingsError) as err:
        load(data, "h1")
    assert needle in str(err.value) and "nothing was changed" in str(err.value)


def test_proxy_settings_become_both_spellings_of_the_proxy_variables() -> None:
    s = load({"http_proxy": "http://10.0.0.1:3128", "no_proxy": "localhost,.corp"})
    assert s.proxy_env == {
        "http_proxy": "http://10.0.0.1:3128",
        "HTTP_PROXY": "http://10.0.0.1:3128",
        "no_proxy": "localhost,.corp",
        "NO_PROXY": "localhost,.corp",
    }
    assert load({}).proxy_env == {}


def test_cli_strings_for_ints_are_accepted() -> None:
    assert load({"triton_http_port": "9000"}).triton_http_port == 9000


def test_cli_strings_for_bools_are_accepted() -> None:
    assert load({"venv_snapshot": "False"}).venv_snapshot is False
    assert load({"venv_snapshot": True}).venv_snapshot is True


def test_venv_snapshot_needs_its_space_on_the_persistent_path() -> None:
    """pip cache 1 GiB + snapshot 1.5 GiB + download cache on /persist; without the snapshot 1.5 GiB less."""
    a = assess(host(free=2.0), DEFAULT)
    item = by_name(a, "disk /persist")
    assert item.blocker and "pip cache, venv snapshot" in item.detail and "2.56 GiB needed" in item.detail
    a = assess(host(free=2.0), load({"venv_snapshot": False}))
    assert by_name(a, "disk /persist").status == "ok"


# --- GPU hosts as they are: real nvidia-smi output (sources in each fixture) -> torch variant

GPU_TABLE: list[tuple[str, str, str | None, str]] = [
    # fixture, torch, expected variant, the rule that chose it
    ("colab-t4-550", "2.14.1", "cu126", "minor-version"),  # CUDA 12.4 driver: no variant <= 12.4
    ("a10g-535-aws", "2.14.1", "cu126", "minor-version"),
    ("h100-535", "2.14.1", "cu126", "minor-version"),
    ("l4-570", "2.14.1", "cu126", "fully"),  # 12.8 driver runs cu126 fully; cu13x need 580
    ("rtx4090d-550", "2.14.1", "cu126", "minor-version"),
    ("a100-580-bottlerocket", "2.14.1", "cu130", "fully"),
    ("rtx5090-595", "2.14.1", "cu132", "fully"),  # Blackwell, CUDA 13.2 driver
    ("b200-610", "2.14.1", "cu132", "fully"),  # driver 610's "CUDA UMD Version" header
    ("colab-t4-550", "2.8.0", "cu126", "minor-version"),  # the closest to 12.4 of cu126/cu128/cu129
    ("l4-570", "2.8.0", "cu128", "fully"),
    ("a100-580-bottlerocket", "2.15.0", "cu130", "fully"),
    ("b200-610", "2.15.0", "cu132", "fully"),
    ("old-driver-470-no-compute-cap", "2.7.0", "cu118", "minor-version"),  # CUDA 11.4 driver, cu118
    # every architecture across releases: only variants with kernels for the GPU count [torch-archs]
    ("p100-535", "2.14.1", "cu126", "minor-version"),  # Pascal sm_60: only cu126 carries it
    ("p100-535", "2.8.0", "cu126", "minor-version"),  # 2.8 took Maxwell and Pascal out of cu128/cu129
    ("v100-535", "2.14.1", "cu126", "minor-version"),  # Volta sm_70
    ("v100-535", "2.11.0", "cu126", "minor-version"),  # 2.11 took Volta out of cu128
    ("colab-t4-550", "2.11.0", "cu126", "minor-version"),  # Turing sm_75: cu126 and cu128 carry it
    ("a100-580-bottlerocket", "2.11.0", "cu130", "fully"),  # Ampere sm_80
    ("h100-535", "2.8.0", "cu126", "minor-version"),  # Hopper sm_90, CUDA 12.2 driver: the closest
    ("rtx5090-595", "2.8.0", "cu129", "fully"),  # Blackwell sm_120: not in cu126
    ("b200-610", "2.7.0", "cu128", "fully"),  # Blackwell sm_100: only 2.7's cu128 carries it
    ("b200-610", "2.6.0", None, ""),  # no 2.6 wheel carries sm_100
    ("p100-535", "2.15.0", None, ""),  # cu130/cu132 only (and a CUDA 12 driver)
]


@pytest.mark.parametrize(("case", "torch", "variant", "rule"), GPU_TABLE)
def test_gpu_table_driver_to_torch_variant(case: str, torch: str, variant: str, rule: str) -> None:
    from facts.nvidia import Nvidia

    spec = json.loads((FIX / "nvidia.Nvidia" / f"{case}.json").read_text())
    nvidia = Nvidia().process(spec["output"])  # through the fact's parser, as a run reads it
    a = assess(host(nvidia=nvidia), load({"torch_version": torch}))
    assert a.decisions.torch_variant == variant
    detail = by_name(a, "torch").detail
    if variant is None:
        assert by_name(a, "torch").blocker, detail
        return
    assert not a.blockers, a.blockers
    assert ("CUDA minor-version compatibility" in detail) == (rule == "minor-version"), detail


def test_a_gpu_no_variant_has_kernels_for_is_refused_naming_the_last_torch_that_has() -> None:
    """A P100 (sm_60) on a 580 driver with torch 2.15 (cu130, cu132: 7.5 and up): refused before any change,
    naming 2.14 whose cu126 carries sm_60; never the CUDA 13 wheel that installs and then fails."""
    nvidia = fixture("nvidia.Nvidia/p100-535")
    nvidia.update(driver_version="580.65.06", cuda_version="13.0")
    item = by_name(assess(host(nvidia=nvidia), load({"torch_version": "2.15.0"})), "torch")
    assert item.blocker
    assert "cu130, cu132 carry no kernels for this GPU (sm_60)" in item.detail
    assert item.fix.startswith("use torch_version 2.14.x (its cu126 carries sm_50, sm_60,")


def test_blackwell_on_a_cuda_128_driver_is_sent_to_the_last_torch_with_a_cu128_wheel() -> None:
    """An RTX 5090 (sm_120) on driver 570 (CUDA 12.8) with torch 2.14: cu126 has no sm_120 and the cu13x
    wheels need driver 580; torch 2.11's cu128 carries sm_120, or a newer driver."""
    nvidia = fixture("nvidia.Nvidia/rtx5090-595")
    nvidia.update(driver_version="570.133.07", cuda_version="12.8")
    item = by_name(assess(host(nvidia=nvidia), load({"torch_version": "2.14.1"})), "torch")
    assert item.blocker and "cu126 carry no kernels for this GPU (sm_120)" in item.detail
    assert "torch_version 2.11.x (its cu128 carries" in item.fix and "sm_120" in item.fix
    assert "an NVIDIA driver >= 580.0" in item.fix


@pytest.mark.parametrize(
    ("archs", "capability", "runs"),
    [
        (("8.0",), "8.6", True),  # a cubin for 8.0 runs on 8.6 and 8.9 (same major, higher minor)
        (("8.6",), "8.0", False),
        (("9.0",), "10.0", False),  # never across majors
        (("7.5", "12.0+PTX"), "12.1", True),  # PTX is compiled for a newer GPU
        (("7.5", "12.0"), "12.1", True),
        (("7.5", "10.0"), "12.0", False),
        (("5.0", "6.0"), "6.1", True),
    ],
)
def test_a_wheel_covers_a_gpu_by_binary_compatibility_within_a_major(archs, capability, runs) -> None:
    from tasks.venv.torch_choice import covers

    assert covers(archs, capability) == runs


@pytest.mark.parametrize(
    ("case", "torch"),
    [("colab-t4-550", "2.15.0"), ("h100-535", "2.15.0"), ("rtx4090d-550", "2.15.0"), ("l4-570", "2.15.0")],
)
def test_cuda12_drivers_are_refused_for_torch_215_with_a_fix(case: str, torch: str) -> None:
    nvidia = fixture(f"nvidia.Nvidia/{case}")
    item = by_name(assess(host(nvidia=nvidia), load({"torch_version": torch})), "torch")
    assert item.blocker and "torch_version 2.14.x" in item.fix


def test_explicit_variant_runs_by_minor_version_compatibility_but_not_across_majors() -> None:
    a = assess(host(nvidia=GPU_T4), load({"torch_variant": "cu128", "torch_version": "2.8.0"}))
    assert not a.blockers and a.decisions.torch_variant == "cu128"
    a = assess(host(nvidia=GPU_T4), load({"torch_variant": "cu130", "torch_version": "2.14.1"}))
    assert by_name(a, "torch").blocker


# --- package names per release


@pytest.mark.parametrize(
    ("soname", "release", "package"),
    [
        ("libpython3.12.so.1.0", ("ubuntu", "24.04"), "libpython3.12t64"),
        ("libpython3.10.so.1.0", ("ubuntu", "22.04"), "libpython3.10"),
        ("libpython3.13.so.1.0", ("debian", "13"), "libpython3.13"),  # checked with apt-cache on trixie
        ("libpython3.11.so.1.0", ("ubuntu", "24.04"), None),  # not a Python that release ships
        ("libcurl.so.4", ("ubuntu", "24.04"), "libcurl4t64"),
        ("libcurl.so.4", ("ubuntu", "22.04"), "libcurl4"),
        ("libcurl.so.4", ("debian", "13"), "libcurl4t64"),
        ("libarchive.so.13", ("debian", "13"), "libarchive13t64"),
        ("libtcmalloc.so.4", ("ubuntu", "24.04"), "libgoogle-perftools4t64"),
        ("libre2.so.9", ("ubuntu", "22.04"), "libre2-9"),
        ("libre2.so.9", ("ubuntu", "24.04"), None),  # libre2-10 there
        ("libre2.so.9", ("debian", "13"), None),  # libre2-11 there
        ("libb64.so.0d", ("ubuntu", "24.04"), "libb64-0d"),
        ("libnuma.so.1", ("ubuntu", "26.04"), None),  # a release the tables do not know
    ],
)
def test_package_names_per_release(soname: str, release: tuple[str, str], package: str | None) -> None:
    assert package_for(soname, os_release(*release, "x")) == package


def test_unknown_release_says_the_name_is_not_known_instead_of_guessing() -> None:
    facts = host(("ubuntu", "26.04", "resolute"), glibc="2.42", glibcxx="3.4.34", pythons=py("3.12"))
    facts.linker_cache.pop("libz.so.1")
    a = assess(facts, DEFAULT)
    item = by_name(a, "libz.so.1")
    assert item.blocker and "no package name for libz.so.1 is known for ubuntu 26.04" in item.fix
    assert "apt-get install" not in item.fix


# --- the standalone Python

STANDALONE = {
    "python_standalone_url": "https://mirror.example/cpython-3.12.12-install_only.tar.gz",
    "python_standalone_sha256": "ab" * 32,
    "python_standalone_version": "3.12.12",
}
TRIXIE = (("debian", "13", "trixie"), "2.41", "3.4.34")


def test_debian13_auto_uses_the_standalone_python_and_says_why() -> None:
    distro, glibc, glibcxx = TRIXIE
    pythons = fixture("python.PythonInterpreters/debian13-python313-only")  # read on a fresh Debian 13 host
    a = assess(host(distro, glibc=glibc, glibcxx=glibcxx, pythons=pythons), load(STANDALONE))
    assert not a.blockers
    d = a.decisions
    home = "/opt/triton/python/3.12.12-abababababab"
    assert (d.python, d.python_source, d.python_path, d.libpython_dir) == (
        "3.12",
        "standalone",
        f"{home}/bin/python3.12",
        f"{home}/lib",
    )
    assert d.script_python == "/usr/bin/python3.13"  # the host's own Python runs the installer's scripts
    item = by_name(a, "python")
    assert item.status == "missing" and "no host Python fits" in item.detail and "numpy<2" in item.detail
    assert "libpython3.13" not in " ".join(d.apt_packages)


def test_a_host_python_that_fits_is_preferred_to_the_standalone() -> None:
    a = assess(host(pythons=py("3.11")), load(STANDALONE))
    assert a.decisions.python_source == "host" and a.decisions.python == "3.11"
    a = assess(host(pythons=py("3.11")), load({**STANDALONE, "triton_python": "standalone"}))
    assert a.decisions.python_source == "standalone" and a.decisions.python == "3.12"


def test_a_standalone_python_the_stub_cannot_take_is_refused() -> None:
    a = assess(host(pythons=py("3.13")), load({**STANDALONE, "python_standalone_version": "3.13.9"}))
    item = by_name(a, "python")
    assert item.blocker and "3.8-3.12" in item.detail


def test_standalone_settings_go_together() -> None:
    with pytest.raises(SettingsError, match="go together"):
        load({"python_standalone_url": STANDALONE["python_standalone_url"]})
    with pytest.raises(SettingsError, match="go together"):  # an archive names its full version
        load({**STANDALONE, "python_standalone_version": "3.12"})
    assert load({"triton_python": "standalone"}).python_standalone_minor == ""  # uv, the newest minor that fits
    assert load({"python_standalone_version": "3.11"}).python_standalone_minor == "3.11"
    with pytest.raises(SettingsError, match="must be a Python version"):
        load({"python_standalone_version": "3"})
    with pytest.raises(SettingsError, match="must not hold a user or password"):
        load({"python_install_mirror": "https://user:pw@mirror.example/pbs"})


@pytest.mark.parametrize("name", ["python_downloads_json_url", "python_install_mirror"])
def test_a_plain_http_source_of_cpython_archives_and_their_checksums_is_refused_but_on_loopback(name: str) -> None:
    with pytest.raises(SettingsError, match=f"{name} http://mirror.example/pbs is plain http"):
        load({name: "http://mirror.example/pbs"})
    assert getattr(load({name: "http://127.0.0.1:8080/pbs"}), name) == "http://127.0.0.1:8080/pbs"
    assert getattr(load({name: "https://mirror.example/pbs"}), name) == "https://mirror.example/pbs"


# --- a stub built for another Python (a tarball brings one)


def _installed_stub(python: str) -> dict:
    tri = copy.deepcopy(fixture("triton.TritonInstall/pytriton-stub-3.11-trixie"))
    tri["stub_libpython"], tri["stub_python"] = f"libpython{python}.so.1.0", python
    tri["manifest"].update(source="tarball", sha256="cd" * 32)
    return tri


@pytest.mark.parametrize(
    ("distro", "pythons", "fix"),
    [
        (("debian", "12", "bookworm"), py("3.11"), "set triton_python = standalone"),  # no 3.10 in Debian 12
        (("ubuntu", "22.04", "jammy"), py("3.11"), "apt-get install python3.10 python3.10-venv libpython3.10"),
        (("debian", "12", "bookworm"), {**py("3.11"), **py("3.10")}, "set triton_python = 3.10 (/usr/bin/python3.10"),
    ],
)
def test_a_stub_for_another_python_names_a_fix_that_exists_on_that_host(distro, pythons, fix) -> None:
    facts = host(distro, glibc="2.36", pythons=pythons)
    facts.triton = _installed_stub("3.10")
    settings = load(
        {
            "triton_source": "tarball",
            "triton_tarball_url": "https://m.example/t.tar",
            "triton_tarball_sha256": "cd" * 32,
        }
    )
    a = assess(facts, settings)
    item = by_name(a, "python backend stub")
    assert item.detail.startswith("this build's python backend stub is for Python 3.10")
    assert item.fix.startswith(fix)
    assert item.blocker  # the same archive again cannot change its stub
    assert a.decisions.stub_fixes["3.10"] == item.fix


def test_colab_2026_ubuntu2404_with_python313_uses_the_system_python312() -> None:
    """Colab since 2026-09: Ubuntu 24.04 whose own python3.12 has no libpython or venv package yet,
    beside Colab's Python 3.13 (with both). 3.12 is chosen, its packages under 24.04's names."""
    colab313 = py("3.13")
    colab313["3.13"]["path"] = "/usr/local/bin/python3.13"
    pythons = {**py("3.12", libpython=False, venv=False), **colab313}
    facts = host(("ubuntu", "24.04", "noble"), glibc="2.39", glibcxx="3.4.33", pythons=pythons, nvidia=GPU_T4)
    a = assess(facts, DEFAULT)
    assert not a.blockers
    d = a.decisions
    assert (d.python, d.python_source, d.python_path) == ("3.12", "host", "/usr/bin/python3.12")
    assert d.apt_packages == ["libpython3.12t64", "python3.12-venv"]
    assert d.torch_requirement == "torch==2.14.1+cu126"  # T4 on driver 550 / CUDA 12.4


def test_the_plan_says_what_a_provision_will_do_before_it_does_it() -> None:
    from reports import assessment as report

    settings = load(
        {
            "pip_index_url": "https://ops:s3cret@pypi.corp/simple",
            "models": [
                {"name": "clf", "source": "hub:org/clf@main", "task": "text-classification"},
                {"name": "emb", "source": "hub:org/emb@" + "a" * 40, "task": "feature-extraction"},
            ],
        }
    )
    d = assess(host(), settings).decisions
    text = report.plan("tb1", settings, d, artifact_cached=False, server="will start")
    lines = text.splitlines()
    assert lines[0] == "== plan for tb1 (nothing is changed before this)"
    assert "  python   3.11 at /usr/bin/python3.11 (the host's); the python backend stub for 3.11" in lines
    assert "  torch    torch==2.14.1+cpu from https://download.pytorch.org/whl/cpu" in lines
    assert "  apt      libpython3.11 to add" in lines
    assert any(line.startswith("  triton   2.51.0 sha256 21f063ff93bb..., to download from https://") for line in lines)
    assert "  model    clf: hub:org/clf@main (revision not pinned: a branch or tag, it can move)" in lines
    assert f"  model    emb: hub:org/emb@{'a' * 40}" in lines
    assert lines[-1] == "  server   will start"
    assert "s3cret" not in text
    cached = report.plan("tb1", settings, d, artifact_cached=True, server="keeps running (pid 7)")
    assert "2.51.0 sha256 21f063ff93bb..., cached, sha256 verified" in cached
    installed = report.plan("tb1", settings, d, False, "keeps running (pid 7)", artifact_installed=True)
    assert (
        "2.51.0 sha256 21f063ff93bb..., installed (its sha256 checked at the unpack; the cached copy is not read)"
        in (installed)
    )
    sized = report.plan("tb1", settings, d, artifact_cached=False, server="will start", artifact_size=1010213554)
    assert "2.51.0 sha256 21f063ff93bb..., to download (963.4 MiB) from https://" in sized
    big = report.plan("tb1", settings, d, artifact_cached=False, server="will start", artifact_size=5 << 30)
    assert "to download (5.00 GiB) from https://" in big


def test_the_plan_says_plainly_that_a_drive_holding_the_controller_s_state_is_trusted_as_root(monkeypatch) -> None:
    """A notebook's controller (@local, root) keeps its state on persist_dir: the drive the README calls untrusted."""
    from reports import assessment as report

    monkeypatch.setattr("os.geteuid", lambda: 0)
    notebook = load({"persist_dir": "/content/drive/MyDrive/triton"}, "@local")
    d = assess(host(), notebook).decisions
    lines = report.plan("@local", notebook, d, artifact_cached=True, server="will start").splitlines()
    trust = [line for line in lines if line.startswith("  trust    ")]
    assert trust and "(/content/drive/MyDrive/triton/controller)" in trust[0]
    assert "whoever can write that drive is trusted as root here" in trust[0]
    vm = load({"persist_dir": "/content/drive/MyDrive/triton"}, "tb1")  # its state is in the controller's tree
    assert not [x for x in report.plan("tb1", vm, d, True, "will start").splitlines() if x.startswith("  trust")]


def test_serving_defaults_come_from_the_hosts_cpus_where_a_model_sets_none() -> None:
    from dataclasses import astuple

    from planner import tables
    from reports import assessment as report
    from tasks.models.serving import model_serving

    settings = load(
        {
            "models": [
                {"name": "auto", "source": "hub:org/a@main"},
                {
                    "name": "set",
                    "source": "hub:org/b@main",
                    "instance_count": 3,
                    "intra_op_threads": 2,
                    "max_batch_size": 4,
                },
                {"name": "copies", "source": "hub:org/c@main", "instance_count": 4},
                {"name": "gpu", "source": "hub:org/d@main", "instance_kind": "KIND_GPU"},
            ]
        }
    )
    got = model_serving(settings.models, cpus=8, gpu=False)
    auto = got["auto"]
    assert (auto.instances, auto.threads) == (tables.CPU_INSTANCES, 8 // tables.CPU_INSTANCES)
    assert auto.max_batch_size == tables.CPU_MAX_BATCH_SIZE
    assert auto.preferred_batch_sizes == (tables.CPU_MAX_BATCH_SIZE // 2, tables.CPU_MAX_BATCH_SIZE)
    assert (
        auto.why == f"CPU: one copy, 8 CPUs / {tables.CPU_INSTANCES} copies, batch {tables.CPU_MAX_BATCH_SIZE} on CPU"
    )
    assert (
        astuple(got["set"])[:4] == (3, 2, 4, (2, 4))
        and got["set"].why == "instance_count, intra_op_threads, max_batch_size"
    )
    assert (got["copies"].instances, got["copies"].threads) == (4, 2)  # the CPUs shared among the copies
    assert (got["gpu"].instances, got["gpu"].max_batch_size) == (tables.GPU_INSTANCES, tables.GPU_MAX_BATCH_SIZE)
    assert model_serving(settings.models, cpus=None, gpu=False)["auto"].threads == 1  # unknown CPUs: one
    # what the rules decided for this host is what the plan shows
    d = assess(host(), settings).decisions
    text = report.plan("tb1", settings, d, artifact_cached=True, server="will start")
    assert (
        "           3 instance(s) x 2 torch thread(s), batches up to 4"
        " (instance_count, intra_op_threads, max_batch_size)" in text
    )


# --- notebooks used from inside: the persistent path

COLAB_INIT = {"pid1": "docker-init", "systemd": False, "notebook": "colab", "content_dir": True}
# Colab's Google Drive as it presents itself: root's, 0700 directories (googlecolab/colabtools#3162)
DRIVE_DIR = {"user": "root", "group": "root", "mode": 700}


def notebook(persist: str, mount: str, blocked: str = "", init: dict | None = COLAB_INIT) -> HostFacts:
    facts = host(("ubuntu", "24.04", "noble"), glibc="2.39", glibcxx="3.4.33", pythons=py("3.12"))
    facts.init = init
    facts.free_persist = space(50, mount, "fuse.drive" if mount == "/content/drive" else "overlay")
    facts.persist_blocked = blocked
    facts.persist_dir = DRIVE_DIR if persist.startswith("/content/drive") else None
    return facts


def test_a_notebook_persist_dir_a_reset_wipes_is_the_first_thing_to_fix() -> None:
    a = assess(notebook("/var/lib/triton-provisioner", "/"), DEFAULT)
    first = a.items[0]
    assert first.name == "persistent path" and first.status == "incompatible" and not first.blocker
    assert "on the disk a notebook reset wipes" in first.detail
    assert "drive.mount('/content/drive')" in first.fix and "persist_dir = /content/drive/MyDrive/triton" in first.fix
    assert a.decisions.first_fixes and a.decisions.first_fixes[0].startswith("persistent path: /var/lib/")
    assert not a.blockers  # it still runs: merely slow after each reset
    content = assess(notebook("/content/cache", "/"), load({"persist_dir": "/content/cache"}))
    assert content.items[0].name == "persistent path"


def test_a_persist_dir_on_the_drive_or_off_a_notebook_is_not_flagged() -> None:
    on_drive = load({"persist_dir": "/content/drive/MyDrive/triton", "triton_user": "root"})
    a = assess(notebook("/content/drive/MyDrive/triton", "/content/drive"), on_drive)
    assert "persistent path" not in [i.name for i in a.items] and not a.blockers
    assert "owned by root, mode 700" in by_name(a, "persist_dir").detail  # the drive's modes are safe for root
    vm = assess(notebook("/var/lib/triton-provisioner", "/", init={"pid1": "systemd", "systemd": True}), DEFAULT)
    assert "persistent path" not in [i.name for i in vm.items]


def test_the_audit_names_a_persist_dir_on_a_drive_that_takes_no_links_nor_modes_and_what_the_provision_does() -> None:
    on_drive = load({"persist_dir": "/content/drive/MyDrive/triton", "triton_user": "root"})
    item = by_name(assess(notebook("/content/drive/MyDrive/triton", "/content/drive"), on_drive), "persist drive")
    assert item.status == "ok" and "Google Drive as Colab mounts it (fuse.drive)" in item.detail
    assert "no symbolic or hard links" in item.detail and "keeps no modes" in item.detail
    assert "the hub cache keeps the files themselves" in item.detail  # what the provision does about it
    local = assess(notebook("/var/lib/triton-provisioner", "/"), DEFAULT)
    assert "persist drive" not in [i.name for i in local.items]


def test_a_persist_dir_the_server_user_cannot_enter_is_refused_with_the_notebook_fix() -> None:
    settings = load({"persist_dir": "/content/drive/MyDrive/triton"})
    a = assess(notebook("/content/drive/MyDrive/triton", "/content/drive", blocked="/content/drive"), settings)
    item = by_name(a, "persist_dir")
    assert item.blocker and "triton-server cannot enter /content/drive" in item.detail
    assert "set triton_user = root" in item.fix
    facts = notebook("/var/lib/triton-provisioner", "/", blocked="/var/lib", init=None)
    vm_item = by_name(assess(facts, DEFAULT), "persist_dir")
    assert vm_item.blocker and "triton_user = root" not in vm_item.fix and "chmod o+x" in vm_item.fix


# --- where root installs: no part on the way another user may change


@pytest.mark.parametrize(
    ("setting", "path", "why"),
    [
        ("triton_home", "/usr/share/triton", "a directory the system owns"),
        ("triton_home", "/usr/bin", "a directory the system owns"),
        ("triton_home", "/etc/ssl/triton", "a directory the system owns"),
        ("persist_dir", "/var/log/triton", "a directory the system owns"),
        ("triton_home", "/tmp/triton", "anyone may write"),
        ("venv_dir", "/var/tmp/venv", "anyone may write"),
        ("triton_home", "/opt", "a top-level directory"),
        ("persist_dir", "/home/alice", "a top-level directory"),
        ("triton_home", "/usr/local/bin/triton", "a directory the system owns"),
    ],
)
def test_an_install_path_in_a_system_tree_or_a_world_writable_one_is_refused(setting, path, why) -> None:
    with pytest.raises(SettingsError, match=f"{setting} = '{path}': .*{why}"):
        load({setting: path})


def test_an_install_path_of_its_own_is_taken() -> None:
    for path in ("/opt/triton", "/usr/local/triton", "/srv/ml/triton", "/home/alice/triton"):
        assert load({"triton_home": path, "venv_dir": f"{path}/venv"}).triton_home == path


def test_an_install_path_under_a_directory_another_user_can_write_is_a_blocker() -> None:
    facts = host()
    facts.unsafe_paths = {
        "/opt/triton": {"part": "/opt", "uid": 1000, "mode": "755", "kind": "directory"},
        "/var/lib/triton-provisioner": {"part": "/var/lib", "uid": 0, "mode": "777", "kind": "directory"},
    }
    a = assess(facts, DEFAULT)
    items = [i for i in a.blockers if i.name in ("triton_home", "persist_dir")]
    assert [i.name for i in items] == ["triton_home", "persist_dir"]
    assert "/opt/triton: /opt is owned by uid 1000; another user could plant" in items[0].detail
    assert "mode 777: anyone may write it" in items[1].detail and "chmod go-w /var/lib" in items[1].fix


def test_a_triton_home_the_server_user_cannot_enter_is_a_blocker() -> None:
    facts = host()
    facts.home_blocked = "/srv/private"
    item = next(
        i for i in assess(facts, load({"triton_home": "/srv/private/triton"})).blockers if i.name == "triton_home"
    )
    assert "triton-server cannot enter /srv/private" in item.detail
    facts.home_blocked = ""
    assert not [i for i in assess(facts, DEFAULT).blockers if i.name == "triton_home"]


# --- users the provisioner did not make are never changed or removed

ALICE = {"uid": 1000, "home": "/home/alice", "shell": "/bin/bash", "made": False}
LEGACY = {"uid": 999, "home": "/nonexistent", "shell": "/usr/sbin/nologin", "made": False}


@pytest.mark.parametrize(
    ("user", "account", "refused"),
    [
        ("triton-server", None, False),  # absent: the provisioner makes it
        ("triton-server", {**LEGACY, "made": True}, False),  # recorded
        ("triton-server", LEGACY, False),  # made by an earlier version, as it made it: adopted
        ("alice", ALICE, True),  # a login account
        ("messagebus", {**LEGACY, "uid": 101}, True),  # a system user of the distribution's
        ("triton-server", {**LEGACY, "uid": 1001, "shell": "/bin/bash"}, True),  # the name, someone else's account
        ("root", {"uid": 0, "home": "/root", "shell": "/bin/bash", "made": False}, False),
    ],
)
def test_only_a_user_the_provisioner_made_may_be_the_server_s(user: str, account, refused: bool) -> None:
    facts = host()
    facts.server_account = account
    item = by_name(assess(facts, load({"triton_user": user})), "server user")
    assert item.blocker == refused, item
    # only an absent user is missing (provision makes it); one the audit accepts is there already
    assert item.status == ("missing" if account is None else "incompatible" if refused else "ok"), item
    if refused:
        assert f"triton_user {user} is an account the provisioner did not make" in item.detail
        assert "uninstall would remove it" in item.detail and "set triton_user to a name of its own" in item.fix


def test_an_unpack_cut_off_before_it_finished_is_named_by_the_audit_with_what_removes_it() -> None:
    """A `.tmp` install in versions/ (the unpack killed, or refused by an older provisioner that left it): 105 MB
    the audit never mentioned. Named now, with the fix (provisioning's last step removes it)."""
    from dataclasses import replace

    clean = assess(host(), DEFAULT)
    assert not [i for i in clean.items if i.name == "leftover install"]
    left = assess(replace(host(), leftover_installs=["2.51.0-21f063ff93bb-py3.11.tmp"]), DEFAULT)
    (item,) = [i for i in left.items if i.name == "leftover install"]
    assert item.status == "incompatible" and not item.blocker
    assert item.detail == "/opt/triton/versions/2.51.0-21f063ff93bb-py3.11.tmp: an unpack cut off before it finished"
    assert "provision removes it" in item.fix


def test_the_front_asks_apt_for_haproxy_and_only_with_triton_upgrade_front() -> None:
    jammy = host(("ubuntu", "22.04", "jammy"), glibc="2.35", pythons=py("3.10"))
    front = load({"triton_upgrade": "front"})
    assert assess(jammy, front).decisions.apt_packages == ["haproxy"]
    assert assess(jammy, DEFAULT).decisions.apt_packages == []
