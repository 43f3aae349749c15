"""`python -m clusternet_nats.hub` / `clusternet-hub`: the common service flags plus where to listen."""

from pathlib import Path
from typing import Annotated

import typer
from clusternet_nats.domain.clusterinit import FEATURE
from clusternet_nats.domain.features import parse_feature_gates
from clusternet_nats.hub.auth.options import SecurityOptions, with_security_options
from clusternet_nats.hub.registration.service import RegistrationOptions, build_registration
from clusternet_nats.hub.service import DEFAULT_LISTEN, build, parse_listen
from clusternet_nats.runtime.options import with_common_options, with_replica_options
from clusternet_nats.runtime.service import CommonOptions, ServiceContext, run

app = typer.Typer(add_completion=False)


def _feature_gates(value: str) -> str:
    try:
        parse_feature_gates(value)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return value


def _listen(value: str) -> str:
    try:
        parse_listen(value)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return value


@app.command()
@with_common_options
@with_replica_options
@with_security_options
def hub(
    common: CommonOptions,
    security: SecurityOptions,
    listen: Annotated[
        str,
        typer.Option("--listen", envvar="CNET_HUB_LISTEN", callback=_listen, help="HOST:PORT of the HTTP API."),
    ] = DEFAULT_LISTEN,
    issuer_seed: Annotated[
        str | None,
        typer.Option(
            "--issuer-seed",
            envvar="CNET_HUB_ISSUER_SEED",
            help="Registration mode: account nkey seed of the server's auth_callout issuer.",
        ),
    ] = None,
    callout_url: Annotated[
        str | None,
        typer.Option("--callout-url", envvar="CNET_HUB_CALLOUT_URL", help="NATS URL of the auth_callout account user."),
    ] = None,
    system_url: Annotated[
        str | None,
        typer.Option("--system-url", envvar="CNET_HUB_SYSTEM_URL", help="NATS URL of a system-account user."),
    ] = None,
    manual_approval: Annotated[
        bool,
        typer.Option(
            "--manual-approval", envvar="CNET_HUB_MANUAL_APPROVAL", help="Hold registrations for cnet approve|deny."
        ),
    ] = False,
    bootstrap_token_file: Annotated[
        Path | None,
        typer.Option(
            "--bootstrap-token-file",
            envvar="CNET_HUB_BOOTSTRAP_TOKEN_FILE",
            help="Registration mode: bootstrap tokens (one a line) to store at start; the file owns them.",
        ),
    ] = None,
    feature_gates: Annotated[
        str,
        typer.Option(
            "--feature-gates",
            envvar="CNET_HUB_FEATURE_GATES",
            callback=_feature_gates,
            help="Clusternet's feature gates, e.g. ClusterInit=true (off by default).",
        ),
    ] = "",
) -> None:
    """Serves Clusternet's API over HTTPS to authenticated users, keeping every object in NATS."""
    if issuer_seed and not callout_url:
        raise typer.BadParameter("--issuer-seed needs --callout-url")
    cluster_init = parse_feature_gates(feature_gates)[FEATURE]
    registration = (
        RegistrationOptions(
            issuer_seed,
            callout_url,
            system_url,
            jetstream_domain=common.jetstream_domain,
            manual_approval=manual_approval,
            bootstrap_token_file=bootstrap_token_file,
            cluster_init=cluster_init,
        )
        if issuer_seed and callout_url
        else None
    )

    async def build_with_listen(ctx: ServiceContext) -> None:
        await build(ctx, listen, security, cluster_init)
        if registration is not None:
            await build_registration(ctx, registration)

    run("clusternet-hub", common, build_with_listen)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
