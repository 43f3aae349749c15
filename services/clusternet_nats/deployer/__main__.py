"""`python -m clusternet_nats.deployer` / `clusternet-deployer`: run the deployer.

`--feature-gates` takes Clusternet's form (`FeedInUseProtection=true`); FeedInUseProtection is
the one gate the deployer knows, set here as Clusternet sets it on its controller manager.
"""

import functools
from typing import Annotated

import typer
from clusternet_nats.deployer.service import build
from clusternet_nats.domain.finalizers import FEED_IN_USE_PROTECTION
from clusternet_nats.runtime.options import with_common_options, with_replica_options
from clusternet_nats.runtime.service import CommonOptions, run

app = typer.Typer(add_completion=False)


def feature_gates(value: str) -> dict[str, bool]:
    """`A=true,B=false` as Kubernetes components read it; unknown gates and values are refused."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, flag = item.partition("=")
        if not sep or flag.lower() not in ("true", "false"):
            raise typer.BadParameter(f"{item!r}: expected NAME=true|false")
        if name != FEED_IN_USE_PROTECTION:
            raise typer.BadParameter(f"unrecognized feature gate: {name} (known: {FEED_IN_USE_PROTECTION})")
        gates[name] = flag.lower() == "true"
    return gates


@app.command()
@with_common_options
@with_replica_options
def deployer(
    common: CommonOptions,
    gates: Annotated[
        str,
        typer.Option(
            "--feature-gates",
            envvar="CNET_FEATURE_GATES",
            help=f"Clusternet's feature gates, e.g. {FEED_IN_USE_PROTECTION}=true (off by default).",
        ),
    ] = "",
) -> None:
    """Renders scheduled Subscriptions into per-cluster Bases and Descriptions, and aggregates their status."""
    protection = feature_gates(gates).get(FEED_IN_USE_PROTECTION, False)
    run("clusternet-deployer", common, functools.partial(build, feed_in_use_protection=protection))


main = app

if __name__ == "__main__":
    main()
