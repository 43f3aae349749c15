"""What every service process shares: settings, logging, the NATS connection, health, lifecycle."""
