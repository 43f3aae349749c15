"""The agent: one per child cluster, applying its Descriptions and reporting its health."""
