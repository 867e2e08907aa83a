"""The code is ruff clean (lint and format), as the developers' guide asks."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]


def test_ruff_check_and_format() -> None:
    for args in (["check", "."], ["format", "--check", "."]):
        res = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr


def test_host_shell_scripts_pass_shellcheck() -> None:
    """The shell scripts that run on hosts, as POSIX sh (Debian's dash runs them), includes followed."""
    import os
    import shutil

    import pytest

    import remote

    if not shutil.which("shellcheck"):
        if os.environ.get("CI"):
            pytest.fail("shellcheck is missing: bash scripts/setup.sh --test installs it")
        pytest.skip("shellcheck is not installed (bash scripts/setup.sh --test installs it)")
    shell_scripts = [str(p) for p in remote.scripts() if p.suffix == ".sh"]
    assert len(shell_scripts) >= 20
    res = subprocess.run(
        ["shellcheck", "--shell=sh", "--external-sources", *shell_scripts],
        cwd=remote.REMOTE,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_host_python_scripts_compile_for_python_3_8() -> None:
    """What runs on a host's python3 (3.8+) as sent: shared pieces inlined, no newer syntax."""
    import ast

    import remote

    for path in remote.scripts():
        if path.suffix != ".py":
            continue
        sent = remote.source(path.name)
        assert not re.search(r"^(from|import) _[a-z]", sent, re.M), f"{path.name}: a shared piece was not inlined"
        tree = ast.parse(sent, filename=path.name, feature_version=(3, 8))
        # list[str] or X | None in an annotation is evaluated at def time on 3.8 (TypeError) unless
        # annotations are postponed
        postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body)
        for node in ast.walk(tree):
            annotations = [node.annotation] if isinstance(node, ast.AnnAssign) else []
            if isinstance(node, ast.FunctionDef):
                arguments = node.args.args + node.args.kwonlyargs
                annotations = [a.annotation for a in arguments if a.annotation] + [node.returns]
            for a in filter(None, annotations):
                newer = any(isinstance(x, ast.Subscript | ast.BinOp) for x in ast.walk(a))
                assert postponed or not newer, f"{path.name}:{node.lineno}: an annotation Python 3.8 cannot evaluate"


def test_ci_runs_the_readme_two_commands_verbatim() -> None:
    """README.md starts with two commands (the main job, the tests); CI runs each as written, so the path a
    newcomer takes first cannot break unseen."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL)
    assert block, "README.md has no bash block"
    commands = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2 and "deploy/provision.py" in commands[0] and "pytest" in commands[1]
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if not line.startswith(("#", "echo"))]
    assert commands[0] in ci and commands[1] in ci
    assert ci.index(commands[0]) < ci.index(commands[1])


def test_every_upload_goes_through_a_private_staging_directory() -> None:
    """pyinfra's own uploads (and downloads) under sudo stage at a /tmp name another user can predict and
    swap: no task or deploy uses them; tasks/downloads/private_upload.py is the one way (its behaviour:
    test_host_scripts.py)."""
    own = {"private_upload.py"}
    found = []
    for path in sorted([*(REPO / "tasks").glob("*.py"), *(REPO / "deploy").glob("*.py")]):
        if path.name in own:
            continue
        text = path.read_text()
        for needle in ("FileUploadCommand", "files.put(", "files.template(", ".put_file(", ".get_file(", "files.get("):
            if needle in text:
                found.append(f"{path.relative_to(REPO)}: {needle}")
    assert not found, found
