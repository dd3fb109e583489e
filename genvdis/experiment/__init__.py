"""Running the protocol: splits, planning, scoring, parallel blocks, sweeps, theory runs."""
