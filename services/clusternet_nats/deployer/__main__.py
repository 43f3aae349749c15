"""`clusternet-deployer`: the deployer as a process."""

import typer
from clusternet_nats.deployer.service import build
from clusternet_nats.runtime.options import with_common_options
from clusternet_nats.runtime.service import CommonOptions, run


@with_common_options
def command(common: CommonOptions) -> None:
    """Renders scheduled Subscriptions into per-cluster Bases and Descriptions, and aggregates their status."""
    run("clusternet-deployer", common, build)


def main() -> None:
    typer.run(command)


if __name__ == "__main__":
    main()
