"""The shipped notebook: valid nbformat 4, outputs cleared, and each code cell exactly as the README shows it."""

import json
from pathlib import Path

REPO = Path(__file__).parents[2]


def test_the_colab_notebook_is_clean_and_its_cells_are_the_readme_s() -> None:
    nb = json.loads((REPO / "notebooks" / "colab.ipynb").read_text())
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 5
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)  # outputs cleared
    readme = (REPO / "README.md").read_text()
    section = readme.split("### A Colab-like notebook", 1)[1].split("\n## ", 1)[0]
    for cell in code:
        assert f"```python\n{''.join(cell['source'])}\n```" in section
    sources = ["".join(c["source"]) for c in code]
    assert sources[0].startswith("from google.colab import drive")  # the drive first, then the rest
    words = ("deploy/provision.py", "/v2/models/", "deploy/status.py", "tritonserver.log", "deploy/stop.py")
    order = [next(i for i, s in enumerate(sources) if word in s) for word in words]
    assert order == sorted(order)  # provision, ask it, then status, the log and stop


def test_the_notebook_inventory_is_valid_settings() -> None:
    from config.settings import load

    nb = json.loads((REPO / "notebooks" / "colab.ipynb").read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith("%%writefile"))
    namespace: dict = {}
    exec(cell.split("\n", 1)[1], namespace)
    (name, data), *_ = namespace["colab"]
    settings = load(data)
    assert name == "@local" and settings.persist_dir.startswith("/content/drive/") and settings.triton_user == "root"
    assert [m.name for m in settings.models] == ["sentiment"]


def test_the_controllers_state_lies_on_the_persistent_path_where_the_controller_is_the_host_as_root() -> None:
    """A notebook's reset wipes the clone: its state (the lock, the snapshot's digest) must outlive it."""
    from config.settings import controller_state_dir, load

    drive = "/content/drive/MyDrive/triton"
    assert controller_state_dir("auto", drive + "/", "@local", euid=0) == f"{drive}/controller"
    assert controller_state_dir("auto", drive, "@local", euid=1000) == str(REPO)  # a user's own machine
    assert controller_state_dir("auto", drive, "vm1", euid=0) == str(REPO)  # the controller is elsewhere
    assert controller_state_dir("/srv/state", drive, "@local", euid=0) == "/srv/state"
    assert controller_state_dir("state", drive, "vm1", euid=0) == str(REPO / "state")
    settings = load({"controller_state_dir": "/srv/state"})
    assert settings.on_controller(settings.venv_lock_dir) == Path("/srv/state/venv-locks")
    assert settings.on_controller("/abs/records") == Path("/abs/records")
    assert load({}).on_controller(load({}).provision_records_dir) == REPO / "provision-records"
