"""`python -m clusternet_nats.bridge` / `clusternet-bridge`: run the bridge to a parent apiserver."""

from pathlib import Path
from typing import Annotated

import typer
from clusternet_nats.bridge.service import builder
from clusternet_nats.runtime.options import with_common_options, with_replica_options
from clusternet_nats.runtime.service import CommonOptions, run

app = typer.Typer(add_completion=False)


@app.command()
@with_common_options
@with_replica_options
def bridge(
    common: CommonOptions,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            "--kubeconfig",
            envvar="CNET_KUBECONFIG",
            help="kubeconfig of the parent apiserver (default: the pod's service account).",
        ),
    ] = None,
) -> None:
    """Keeps Clusternet's CRDs on a parent kube-apiserver in step with NATS."""
    run("clusternet-bridge", common, builder(kubeconfig))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
