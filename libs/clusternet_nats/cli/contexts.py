"""`cnet config view|get-contexts|current-context|use-context`: the config file, as kubectl config shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from clusternet_nats.cli import config as cnet_config

config_app = typer.Typer(
    help="Contexts of the cnet config file (--config, $CNET_CONFIG, ~/.cnet/config).", no_args_is_help=True
)
REDACTED = "REDACTED"


def _path(ctx: typer.Context) -> tuple[cnet_config.CnetConfig, Path]:
    """The config file the root command was pointed at (--config, $CNET_CONFIG or the default)."""
    path = getattr(ctx.find_root().obj, "config_path", None) or cnet_config.default_path()
    try:
        return cnet_config.load(path), path
    except cnet_config.ConfigError as err:
        typer.echo(str(err), err=True)
        raise typer.Exit(1) from None


@config_app.command("view")
def view(
    ctx: typer.Context, raw: Annotated[bool, typer.Option("--raw", help="Show tokens instead of REDACTED.")] = False
) -> None:
    """Prints the config; tokens are redacted unless --raw."""
    config, _ = _path(ctx)
    if not raw:
        users = [
            u.model_copy(update={"user": u.user.model_copy(update={"token": REDACTED})}) if u.user.token else u
            for u in config.users
        ]
        config = config.model_copy(update={"users": users})
    typer.echo(config.dump(), nl=False)


@config_app.command("get-contexts")
def get_contexts(ctx: typer.Context) -> None:
    """Lists the contexts; * marks the current one."""
    config, _ = _path(ctx)
    rows = [("CURRENT", "NAME", "SERVER", "AUTHINFO")]
    for named in config.contexts:
        cluster = config.cluster(named.context.cluster)
        rows.append(
            (
                "*" if named.name == config.current_context else "",
                named.name,
                cluster.server if cluster else "",
                named.context.user,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        typer.echo("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@config_app.command("current-context")
def current_context(ctx: typer.Context) -> None:
    """Prints the current context's name."""
    config, path = _path(ctx)
    if not config.current_context:
        typer.echo(f"error: current-context is not set in {path}", err=True)
        raise typer.Exit(1)
    typer.echo(config.current_context)


@config_app.command("use-context")
def use_context(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Context to make current.")]) -> None:
    """Makes NAME the current context."""
    config, path = _path(ctx)
    if config.context(name) is None:
        typer.echo(f'error: no context exists with the name: "{name}" in {path}', err=True)
        raise typer.Exit(1)
    cnet_config.save(path, config.model_copy(update={"current_context": name}))
    typer.echo(f'Switched to context "{name}".')
