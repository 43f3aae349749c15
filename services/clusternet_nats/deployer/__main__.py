"""`python -m clusternet_nats.deployer` / `clusternet-deployer`: run the deployer.

`--feature-gates` takes Clusternet's form (`FeedInUseProtection=true`, domain/features.py);
FeedInUseProtection is the one gate the deployer knows, set here as Clusternet sets it on its
controller manager since v0.15.0.
"""

import functools
from collections.abc import Mapping
from typing import Annotated

import typer
from clusternet_nats.deployer.service import build
from clusternet_nats.deployer.writes import PARALLELISM
from clusternet_nats.domain.features import parse_feature_gates
from clusternet_nats.domain.finalizers import FEED_IN_USE_PROTECTION
from clusternet_nats.runtime.options import with_common_options, with_replica_options
from clusternet_nats.runtime.service import CommonOptions, run

GATES: Mapping[str, bool] = {FEED_IN_USE_PROTECTION: False}
"""The deployer's gates and their defaults (Clusternet's: alpha, off)."""

app = typer.Typer(add_completion=False)


def feature_gates(value: str) -> dict[str, bool]:
    """The deployer's gates from the flag; a bad entry is refused naming it."""
    try:
        return parse_feature_gates(value, GATES)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def _checked(value: str) -> str:
    """Refuses a bad --feature-gates when the flag is read, so Typer names the flag."""
    feature_gates(value)
    return value


@app.command()
@with_common_options
@with_replica_options
def deployer(
    common: CommonOptions,
    gates: Annotated[
        str,
        typer.Option(
            "--feature-gates",
            envvar="CNET_DEPLOYER_FEATURE_GATES",
            callback=_checked,
            help=f"Clusternet's feature gates, e.g. {FEED_IN_USE_PROTECTION}=true (off by default).",
        ),
    ] = "",
    parallelism: Annotated[
        int,
        typer.Option(
            "--parallelism",
            envvar="CNET_DEPLOYER_PARALLELISM",
            min=1,
            help="Clusters of one Subscription whose writes are in flight at once.",
        ),
    ] = PARALLELISM,
) -> None:
    """Renders scheduled Subscriptions into per-cluster Bases and Descriptions, and aggregates their status."""
    protection = feature_gates(gates)[FEED_IN_USE_PROTECTION]
    build_it = functools.partial(build, feed_in_use_protection=protection, parallelism=parallelism)
    run("clusternet-deployer", common, build_it)


main = app

if __name__ == "__main__":
    main()
