"""Flags every service shares, read from the command line or CNET_* variables alike.

`with_common_options` adds them to a Typer command's signature and hands the command one
`CommonOptions`, so each service declares only its own flags and no service repeats these.
`with_replica_options` adds what hub-side services take besides: how their replicas share the
work (runtime/partitions.py); agents do not take them, since each agent owns its clusters.
"""

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from clusternet_nats.runtime.logging import configure_logging
from clusternet_nats.runtime.partitions import DEFAULT_LEASE_DURATION, DEFAULT_PARTITIONS, ReplicaOptions
from clusternet_nats.runtime.service import Builder, CommonOptions, run

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"

_COMMON: list[inspect.Parameter] = [
    inspect.Parameter(
        "nats_url",
        inspect.Parameter.KEYWORD_ONLY,
        default=DEFAULT_NATS_URL,
        annotation=Annotated[
            str, typer.Option("--nats-url", envvar="CNET_NATS_URL", help="NATS server URL(s), comma-separated.")
        ],
    ),
    inspect.Parameter(
        "nats_creds",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None, typer.Option("--nats-creds", envvar="CNET_NATS_CREDS", help="NATS credentials file.")
        ],
    ),
    inspect.Parameter(
        "log_level",
        inspect.Parameter.KEYWORD_ONLY,
        default="info",
        annotation=Annotated[
            str, typer.Option("--log-level", envvar="CNET_LOG_LEVEL", help="debug, info, warning or error.")
        ],
    ),
    inspect.Parameter(
        "health_host",
        inspect.Parameter.KEYWORD_ONLY,
        default="127.0.0.1",
        annotation=Annotated[
            str, typer.Option("--health-host", envvar="CNET_HEALTH_HOST", help="Address of the health server.")
        ],
    ),
    inspect.Parameter(
        "health_port",
        inspect.Parameter.KEYWORD_ONLY,
        default=0,
        annotation=Annotated[
            int,
            typer.Option(
                "--health-port",
                envvar="CNET_HEALTH_PORT",
                help="Port of /healthz, /readyz and /metrics (0: any free port, -1: none).",
            ),
        ],
    ),
    inspect.Parameter(
        "stream_replicas",
        inspect.Parameter.KEYWORD_ONLY,
        default=1,
        annotation=Annotated[
            int,
            typer.Option(
                "--stream-replicas", envvar="CNET_STREAM_REPLICAS", help="Replicas of the buckets it creates."
            ),
        ],
    ),
    inspect.Parameter(
        "jetstream_domain",
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option(
                "--jetstream-domain",
                envvar="CNET_JETSTREAM_DOMAIN",
                help="The hub's JetStream domain (set when connected through a leaf node).",
            ),
        ],
    ),
]

def _flag(name: str, default: Any, kind: Any, flag: str, env: str, help_: str) -> inspect.Parameter:
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[kind, typer.Option(flag, envvar=env, help=help_)],
    )


_REPLICA: list[inspect.Parameter] = [
    _flag(
        "replica_id",
        None,
        str | None,
        "--replica-id",
        "CNET_REPLICA_ID",
        "This replica's id, unique among the service's replicas (default: host name + random).",
    ),
    _flag(
        "partitions",
        DEFAULT_PARTITIONS,
        int,
        "--partitions",
        "CNET_PARTITIONS",
        "Partitions the replicas share keys by (same in each).",
    ),
    _flag(
        "lease_duration",
        DEFAULT_LEASE_DURATION,
        float,
        "--lease-duration",
        "CNET_LEASE_DURATION",
        "Seconds after which a silent replica's partitions are taken over.",
    ),
]

F = TypeVar("F", bound=Callable[..., Any])


def with_common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates `def main(..., common: CommonOptions)` so Typer shows the shared flags too."""
    signature = inspect.signature(command)
    own = [p for name, p in signature.parameters.items() if name != "common"]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        common = CommonOptions(**{p.name: kwargs.pop(p.name) for p in _COMMON})
        configure_logging(common.log_level)  # before the command logs anything (an agent registers first)
        return command(common=common, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own + _COMMON)  # type: ignore[attr-defined]
    return wrapper


def with_replica_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates a command that takes `common: CommonOptions` (put it under `with_common_options`):
    adds the replica flags and sets `common.replicas`, so the service's replicas share its keys."""
    signature = inspect.signature(command)

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        values = {p.name: kwargs.pop(p.name) for p in _REPLICA}
        replicas = ReplicaOptions(
            **({"replica_id": values["replica_id"]} if values["replica_id"] else {}),
            partitions=values["partitions"],
            lease_duration=values["lease_duration"],
        )
        try:
            replicas.check()
        except ValueError as err:
            raise typer.BadParameter(str(err)) from None
        common: CommonOptions = kwargs.pop("common")
        return command(common=dataclasses.replace(common, replicas=replicas), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *_REPLICA])  # type: ignore[attr-defined]
    return wrapper


def service_main(name: str, build: Builder, summary: str) -> Callable[[], None]:
    """The `main()` of a hub-side service whose only flags are the shared and replica ones;
    `summary` is its --help."""

    def command(common: CommonOptions) -> None:
        run(name, common, build)

    command.__doc__ = summary
    app = typer.Typer(add_completion=False)
    app.command(name=name)(with_common_options(with_replica_options(command)))
    return app
