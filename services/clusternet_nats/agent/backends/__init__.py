"""Where the agent's objects land: a simulated cluster now, a real one (kube) later."""
