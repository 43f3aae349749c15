"""`python -m clusternet_nats.predictor` / `clusternet-predictor`: run the predictor."""

from clusternet_nats.predictor.service import build
from clusternet_nats.runtime.options import service_main

main = service_main("clusternet-predictor", build, "Answers how many replicas fit in each cluster.")

if __name__ == "__main__":
    main()
