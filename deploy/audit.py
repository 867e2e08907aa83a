"""Audit hosts without changing them: what is OK, missing or incompatible, and the fix for each.

    pyinfra INVENTORY deploy/audit.py -y

Prints a table per host and writes all hosts to `audit_report_path` (JSON). A host with any
missing or incompatible item fails the run, so the exit status is non-zero.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state
from pyinfra.operations import python

from compat import report
from compat.reading import read_host
from config.secrets import mask_output

mask_output()  # URL passwords are masked in every line pyinfra prints

reading = read_host(host, state.inventory)
settings, assessment = reading.settings, reading.assessment
print(report.table(host.name, assessment), flush=True)
report_path = report.record(host.name, assessment, settings.audit_report_path)

if assessment.problems:
    count = len(assessment.problems)

    def fail(state, host) -> bool:
        host.log(f"audit: {count} item(s) missing or incompatible; see the table above and {report_path}")
        return False

    python.call(name=f"Audit result: {count} problem(s)", function=fail)
