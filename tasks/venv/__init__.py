"""The venv: where it is made, in one folder. Its rules (what the planner reads), then its operations.

Rules (RULES: the planner, planner/, imports these; they import no operation):
- `plan.py`: the venv plan from the settings and the rules' decisions (its folder, pins, lock, index,
  wheelhouse, snapshot), and each model's own environment;
- `state.py`: what the venv and wheelhouse facts say of that plan (fresh, restorable, wheels at hand);
- `lock_digests.py`: the lock's sha256 digests, checked against the index (PEP 691 JSON or PEP 503 HTML);
- `torch_choice.py`: which torch wheel: the CUDA variant the host's driver runs (cpu without a GPU).

Operations (pyinfra operations and the commands they send):
- `operations.py`: the venv created, its snapshot restored and saved, its packages installed;
- `wheelhouse.py`: the wheelhouse on the persistent path filled and locked;
- `pip_commands.py`: the pip/uv commands those send (downloads, locked installs);
- `model_envs.py`: the models' own environments, built and snapshotted as the venv is;
- `scripts/`: the host scripts they send (venv_create.sh ... wheel_lock.py), found by name by remote.shell.

What the venv's facts read is pyinfra's room: facts/venv.py (VenvPackages), its probe
remote/probes/venv_packages.sh.
"""

RULES = ("plan", "state", "lock_digests", "torch_choice")
