"""Checking the privacy claims: the privacy report of an agent (the paper's argument and the tight
accountant), empirical audits of the mechanisms and of whole agents, and their confidence intervals."""

from privrl.audit.agent_audit import audit_agent, audit_linucb_agent, audit_psrl_agent, audit_ucrl_vtr_agent
from privrl.audit.intervals import betainc, clopper_pearson
from privrl.audit.mechanism_audit import AuditResult, audit_mechanism, audit_samples
from privrl.audit.shipped import (
    audit_ldp_randomizer,
    audit_lsvi_server,
    audit_lsvi_u_release,
    audit_ucrl_vtr_tree,
)

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "betainc",
    "audit_samples",
    "audit_mechanism",
    "audit_ucrl_vtr_tree",
    "audit_ldp_randomizer",
    "audit_lsvi_u_release",
    "audit_lsvi_server",
    "audit_agent",
    "audit_linucb_agent",
    "audit_psrl_agent",
    "audit_ucrl_vtr_agent",
]
