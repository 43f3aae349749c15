"""`python -m clusternet_nats.scheduler` / `clusternet-scheduler`: run the scheduler."""

import typer
from clusternet_nats.runtime.options import with_common_options
from clusternet_nats.runtime.service import CommonOptions, run
from clusternet_nats.scheduler.service import build

app = typer.Typer(add_completion=False)


@app.command()
@with_common_options
def scheduler(common: CommonOptions) -> None:
    """Binds Subscriptions to clusters and divides their replicas."""
    run("clusternet-scheduler", common, build)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
