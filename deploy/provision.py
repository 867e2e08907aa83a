"""Provision Triton Inference Server on every host of the inventory (not yet implemented)."""

from pyinfra import logger

logger.error("provision: not yet. Run `pyinfra INVENTORY deploy/audit.py -y` to audit a host.")
raise SystemExit(2)
