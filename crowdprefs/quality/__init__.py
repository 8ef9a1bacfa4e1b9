"""The workers and their answers: the audit, the one set of worker-flag rules, review (approve,
reject, block), the simulated crowd's model and its fit, and campaign planning."""
