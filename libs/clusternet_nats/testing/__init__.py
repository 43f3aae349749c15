"""A first-class test environment: real NATS, real service processes, simulated clusters."""
