"""Where the agent's objects land: a simulated cluster (`sim`) or a real one (`kube`)."""
