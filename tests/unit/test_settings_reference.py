"""The settings reference (config/reference.py, deploy/settings.py): every setting with its default and
comment from group_data/all.py, each host's differing value, secrets masked; run for real on @local."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from config.reference import entries, render
from config.settings import Settings

REPO = Path(__file__).parents[2]


def test_every_setting_is_in_the_reference_with_its_section_and_comment() -> None:
    found = {entry.name: entry for entry in entries()}
    assert set(found) == {f.name for f in fields(Settings)}
    assert found["offline"].section == "Network"
    assert found["triton_home"].comment.startswith("Install root on local disk")
    assert found["hf_token"].section == "Models"


def test_a_written_block_is_read_setting_by_setting() -> None:
    text = (
        '# --- Places\n# Where it goes.\n# Two lines.\nhome = "/opt"\nother = 1\n\n# --- Net\n# A proxy.\nproxy = ""\n'
    )
    assert [(e.section, e.name, e.comment) for e in entries(text)] == [
        ("Places", "home", "Where it goes. Two lines."),
        ("Places", "other", ""),
        ("Net", "proxy", "A proxy."),
    ]


def test_only_differing_values_are_shown_and_secrets_never() -> None:
    text = render(
        {
            "web1": {"triton_http_port": 9000, "hf_token": "hf_abcdef", "http_proxy": "http://u:pw@proxy:3128"},
            "web2": {"triton_http_port": 8000},
        }
    )
    assert "triton_http_port = 8000    [web1: 9000]" in text
    assert 'hf_token = ""    [web1: <set>]' in text
    assert 'http_proxy = ""    [web1: "http://u:***@proxy:3128"]' in text
    assert "hf_abcdef" not in text and "pw@" not in text


def test_the_deploy_prints_it_once_per_run_without_secrets() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pyinfra", "inventories/local.py", "deploy/settings.py", "-y",
         "--data", "hf_token=hf_sekrit", "--data", "triton_http_port=8100"],
        cwd=REPO, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-2000:]
    assert out.count("== settings (group_data/all.py; 1 host(s))") == 1
    assert "triton_http_port = 8000    [@local: 8100]" in out
    assert "hf_sekrit" not in out and 'hf_token = ""    [@local: <set>]' in out
