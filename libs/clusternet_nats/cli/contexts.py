"""`cnet config view|get-contexts|current-context|use-context|set-context|delete-context`, as kubectl config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

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
        _fail(str(err))


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
        _fail(f"error: current-context is not set in {path}")
    typer.echo(config.current_context)


@config_app.command("use-context")
def use_context(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Context to make current.")]) -> None:
    """Makes NAME the current context."""
    config, path = _path(ctx)
    if config.context(name) is None:
        _fail(f'error: no context exists with the name: "{name}" in {path}')
    cnet_config.save(path, config.model_copy(update={"current_context": name}))
    typer.echo(f'Switched to context "{name}".')


@config_app.command("set-context")
def set_context(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Context to create or change.")] = None,
    current: Annotated[bool, typer.Option("--current", help="Change the current context.")] = False,
    cluster: Annotated[str | None, typer.Option("--cluster", help="Cluster entry (server) it uses.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="User entry (credentials) it uses.")] = None,
) -> None:
    """Creates or changes a context: which cluster entry and which user entry it pairs."""
    config, path = _path(ctx)
    if current == bool(name):
        _fail("error: give a context NAME or --current (not both)")
    if current and not config.current_context:
        _fail(f"error: current-context is not set in {path}")
    name = name or config.current_context
    before = config.context(name)
    if before is None and not cluster:
        _fail(f'error: context "{name}" does not exist yet: give its --cluster')
    old_cluster, old_user = (before.cluster, before.user) if before else ("", "")
    wanted = cnet_config.Context(cluster=cluster or old_cluster, user=old_user if user is None else user)
    for what, entry in (("cluster", wanted.cluster), ("user", wanted.user)):
        known = config.cluster(entry) if what == "cluster" else config.user(entry)
        if entry and known is None:
            _fail(f'error: no {what} exists with the name: "{entry}" in {path}')
    contexts = [c for c in config.contexts if c.name != name] + [cnet_config.NamedContext(name=name, context=wanted)]
    cnet_config.save(path, config.model_copy(update={"contexts": contexts}))
    typer.echo(f'Context "{name}" {"modified" if before else "created"}.')


@config_app.command("delete-context")
def delete_context(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Context to delete.")]) -> None:
    """Deletes a context (its cluster and user entries stay)."""
    config, path = _path(ctx)
    if config.context(name) is None:
        _fail(f"error: cannot delete context {name}, not in {path}")
    if name == config.current_context:
        typer.echo('warning: this removed your active context; choose another with "cnet config use-context"', err=True)
    update = {"contexts": [c for c in config.contexts if c.name != name]}
    cnet_config.save(path, config.model_copy(update=update))
    typer.echo(f"deleted context {name} from {path}")


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(1)
