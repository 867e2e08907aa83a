"""The planner: one host read (`reading.py`: its settings and facts) into one assessment (`rules.py`, over
each concern's rules in tasks/<concern>/): what fits it, what is missing or incompatible and the fix, and
the decisions the provision acts on (`assessment.py`). Then what a provision decides before any change
(`preflight.py`, `offline.py`). `tables.py` is the data, with sources; `installed.py` what is on the host
against what is wanted."""
