"""The audit's verdict: one last line for the whole run (`audit: 5 problems on 1 of 3 hosts; report:
PATH`) and a non-zero exit status when any host has a problem, without an operation that errors (which
pyinfra would answer with `Error: executed 0 commands` and, for the last host, `No hosts remaining!`)."""

from __future__ import annotations

from pyinfra import logger
from pyinfra.api.state import BaseStateCallback, State

from run.run_summary import registered


def verdict_line(problems: dict[str, int], unreached: list[str], reports: list[str]) -> str:
    """The run's last line: problems per audited host, hosts that were not reached, where the reports are."""
    total, failing = sum(problems.values()), sum(1 for count in problems.values() if count)
    hosts = len(problems) + len(unreached)
    line = (
        f"audit: {total} problem{'s' if total != 1 else ''} on {failing} of {hosts} host{'s' if hosts != 1 else ''}"
        if total
        else f"audit: no problems on {len(problems)} of {hosts} host{'s' if hosts != 1 else ''}"
    )
    if unreached:
        line += f"; not reached: {', '.join(sorted(unreached))}"
    return line + (f"; report: {', '.join(sorted(set(reports)))}" if reports else "")


class AuditVerdict(BaseStateCallback):
    """Holds each audited host's count of problems; a host with any is one of the run's failed hosts
    (pyinfra's own exit status is then 1). Prints the verdict once the last host has disconnected."""

    def __init__(self) -> None:
        self.problems: dict[str, int] = {}
        self.reports: dict[str, str] = {}
        self.disconnected = 0

    def found(self, state: State, host, count: int, report_path: str) -> None:
        self.problems[host.name], self.reports[host.name] = count, report_path
        if count:
            # the run failed for this host (no operation of its own errors); the inventory's Host, not the
            # deploy file's context proxy of it, which stops pointing at it once the deploy is done
            state.failed_hosts.add(state.inventory.get_host(host.name))

    def host_disconnect(self, state: State, host) -> None:  # type: ignore[override]  # pyinfra: static, called bound
        self.disconnected += 1
        if self.disconnected < len(state.activated_hosts):
            return
        unreached = [h.name for h in state.failed_hosts if h.name not in self.problems]
        logger.info(verdict_line(self.problems, unreached, list(self.reports.values())))


def verdict(state: State) -> AuditVerdict:
    """The run's AuditVerdict."""
    return registered(state, AuditVerdict)
