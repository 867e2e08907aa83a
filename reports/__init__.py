"""What a run tells its user, rendered from what the planner decided or a host runs, changing nothing:
`assessment.py` (the audit's table and JSON report, the provision's plan), `status.py` (what a provisioned host
runs, gathered from facts) and `status_table.py` (that status shown, and kept as JSON)."""
