"""The engines: the vectorised chain Monte Carlo and its dispatch (simulator), exact values
(exact, sequence_dp), the stepwise engine of K policies and its exact program, token
trees, and the per-token reference loop."""
