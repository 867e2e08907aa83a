"""Audit hosts without changing them: what is OK, missing or incompatible, and the fix for each.

    pyinfra INVENTORY deploy/audit.py -y

Prints a table per host and writes all hosts to `audit_report_path` (JSON); its last line counts the
problems of every host (run/audit_verdict.py). A host with any missing or incompatible item fails the
run: the exit status is non-zero.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state

from config.secrets import mask_output
from planner.reading import read_host
from reports import assessment as report
from run import batch
from run.audit_verdict import verdict

mask_output()  # URL passwords are masked in every line pyinfra prints
batch.one_round_trip()  # each host read in one round trip, from the last run's list (run/batch.py)

reading = read_host(host, state.inventory)
settings, assessment = reading.settings, reading.assessment
print(report.table(host.name, assessment), flush=True)
report_path = report.record(host.name, assessment, settings.audit_report_path)

verdict(state).found(state, host, len(assessment.problems), str(report_path))
