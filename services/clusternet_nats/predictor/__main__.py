"""`python -m clusternet_nats.predictor` / `clusternet-predictor`: run the predictor."""

import typer
from clusternet_nats.predictor.service import build
from clusternet_nats.runtime.options import with_common_options
from clusternet_nats.runtime.service import CommonOptions, run

app = typer.Typer(add_completion=False)


@app.command()
@with_common_options
def predictor(common: CommonOptions) -> None:
    """Answers how many replicas fit in each cluster."""
    run("clusternet-predictor", common, build)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
