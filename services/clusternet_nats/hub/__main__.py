"""`python -m clusternet_nats.hub` / `clusternet-hub`: the common service flags plus where to listen."""

from typing import Annotated

import typer
from clusternet_nats.hub.service import DEFAULT_LISTEN, build, parse_listen
from clusternet_nats.runtime.options import with_common_options
from clusternet_nats.runtime.service import CommonOptions, ServiceContext, run

app = typer.Typer(add_completion=False)


def _listen(value: str) -> str:
    try:
        parse_listen(value)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return value


@app.command()
@with_common_options
def hub(
    common: CommonOptions,
    listen: Annotated[
        str,
        typer.Option("--listen", envvar="CNET_HUB_LISTEN", callback=_listen, help="HOST:PORT of the HTTP API."),
    ] = DEFAULT_LISTEN,
) -> None:
    """Serves Clusternet's API over HTTP, keeping every object in NATS."""

    async def build_with_listen(ctx: ServiceContext) -> None:
        await build(ctx, listen)

    run("clusternet-hub", common, build_with_listen)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
