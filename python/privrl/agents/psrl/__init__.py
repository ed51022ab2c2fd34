"""Private tabular PSRL on a time-homogeneous release (work in progress, branch psrl): its formulas,
release plan and calibration, and the numpy reference; no agent and no public export yet."""
