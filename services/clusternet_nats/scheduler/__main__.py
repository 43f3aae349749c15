"""`python -m clusternet_nats.scheduler` / `clusternet-scheduler`: run the scheduler."""

from clusternet_nats.runtime.options import service_main
from clusternet_nats.scheduler.service import build

main = service_main("clusternet-scheduler", build, "Binds Subscriptions to clusters and divides their replicas.")

if __name__ == "__main__":
    main()
