"""`python -m clusternet_nats.deployer` / `clusternet-deployer`: run the deployer."""

from clusternet_nats.deployer.service import build
from clusternet_nats.runtime.options import service_main

main = service_main(
    "clusternet-deployer",
    build,
    "Renders scheduled Subscriptions into per-cluster Bases and Descriptions, and aggregates their status.",
)

if __name__ == "__main__":
    main()
