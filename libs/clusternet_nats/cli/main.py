"""`cnet` commands: apply, get, describe, delete, with kubectl's flags and output.

Each command is synchronous for Typer and runs one `asyncio.run` of its requests; every
failure is a HubError or ObjectError turned into one clear message and exit code 1 here, in
one place, so no command can leak a traceback.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer
from clusternet_nats.api import KindInfo, ObjectErrors, UnknownKindError, resolve
from clusternet_nats.api.paths import object_path
from clusternet_nats.cli import approval as approval_cli
from clusternet_nats.cli import config as cnet_config
from clusternet_nats.cli import token as token_cli
from clusternet_nats.cli.apply import Target, apply_one, delete_one, load_files
from clusternet_nats.cli.client import HubClient, HubError, Object, ssl_context
from clusternet_nats.cli.columns import resource_name
from clusternet_nats.cli.contexts import config_app
from clusternet_nats.cli.describe import describe as describe_text
from clusternet_nats.cli.get import OUTPUTS, Query, render
from rich.console import Console
from rich.text import Text

T = TypeVar("T")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Clusternet's objects, kubectl-style, through the hub's HTTP API.",
)
_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

FilesOption = Annotated[
    list[Path] | None,
    typer.Option("--filename", "-f", help="A YAML/JSON file or a directory of them; repeatable."),
]
NamespaceOption = Annotated[str | None, typer.Option("--namespace", "-n", help="Namespace (default: default).")]


@dataclass
class Settings:
    """Where the config is and what the flags override; resolved only when a command needs the hub."""

    config_path: Path
    context: str | None
    overrides: cnet_config.Overrides
    _client: cnet_config.ClientSettings | None = None

    def client(self) -> cnet_config.ClientSettings:
        if self._client is None:
            config = cnet_config.load(self.config_path)
            self._client = cnet_config.settings(config, self.config_path, self.context, self.overrides)
        return self._client


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", envvar=cnet_config.ENV, help="cnet config file (default: ~/.cnet/config)."),
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", envvar="CNET_CONTEXT", help="Context of the config to use.")
    ] = None,
    server: Annotated[
        str | None,
        typer.Option("--server", "-s", envvar="CNET_SERVER", help="URL of the hub (default: the context's)."),
    ] = None,
    token: Annotated[str | None, typer.Option("--token", envvar="CNET_TOKEN", help="Bearer token.")] = None,
    certificate_authority: Annotated[
        Path | None, typer.Option("--certificate-authority", help="CA file that signed the hub's certificate.")
    ] = None,
    client_certificate: Annotated[
        Path | None, typer.Option("--client-certificate", help="Client certificate file (CN: user, O: groups).")
    ] = None,
    client_key: Annotated[Path | None, typer.Option("--client-key", help="Key of --client-certificate.")] = None,
    insecure_skip_tls_verify: Annotated[
        bool, typer.Option("--insecure-skip-tls-verify", help="Do not verify the hub's certificate (unsafe).")
    ] = False,
) -> None:
    overrides = cnet_config.Overrides(
        server, certificate_authority, insecure_skip_tls_verify, token, client_certificate, client_key
    )
    ctx.obj = Settings(config or cnet_config.default_path(), context, overrides)


def _error(message: str) -> None:
    _stderr.print(Text(message, style="red"))


def _fail(message: str) -> NoReturn:
    _error(message)
    raise typer.Exit(1)


def _client_settings(ctx: typer.Context) -> cnet_config.ClientSettings:
    try:
        return ctx.ensure_object(Settings).client()
    except cnet_config.ConfigError as err:
        _fail(str(err))


def _run(ctx: typer.Context, work: Callable[[HubClient], Awaitable[T]]) -> T:
    settings = _client_settings(ctx)

    async def main() -> T:
        async with HubClient.connect(settings, tls) as client:
            return await work(client)

    try:
        tls = ssl_context(settings)  # reads certificate files: before the loop, not on it
        return asyncio.run(main())
    except HubError as err:
        _fail(str(err))


def _kind(name: str) -> KindInfo:
    try:
        return resolve(name)
    except UnknownKindError as err:
        _fail(f"error: {err}")


def _load(paths: Sequence[Path]) -> list[Target]:
    try:
        return [Target.of(obj) for obj in load_files(paths)]
    except ObjectErrors as err:
        for error in err.errors:
            _error(f"error: {error}")
        raise typer.Exit(1) from None


def _namespace(info: KindInfo, namespace: str | None) -> str | None:
    return (namespace or "default") if info.namespaced else None


async def _each(lines: Sequence[Callable[[], Awaitable[str]]]) -> bool:
    """Runs requests in order, printing each result or refusal; True if any was refused."""
    failed = False
    for line in lines:
        try:
            typer.echo(await line())
        except HubError as err:
            if not err.code:  # the hub is unreachable: nothing after this can succeed
                raise
            _error(str(err))
            failed = True
    return failed


@app.command()
def apply(
    ctx: typer.Context,
    filenames: FilesOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate locally; send nothing.")] = False,
) -> None:
    """Create or update objects from files (ordinary Kubernetes objects become Manifests)."""
    if not filenames:
        _fail("error: must specify one of -f and --filename")
    targets = _load(filenames)
    if dry_run:
        for target in targets:
            typer.echo(target.validated())
        return
    if _run(ctx, lambda client: _each([functools.partial(apply_one, client, t) for t in targets])):
        raise typer.Exit(1)


@app.command()
def get(
    ctx: typer.Context,
    kinds: Annotated[str, typer.Argument(help="Kind(s), comma-separated: subs, mcls, desc, chart, ...")],
    names: Annotated[list[str] | None, typer.Argument(help="Names; all objects when none.")] = None,
    namespace: NamespaceOption = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Across all namespaces.")] = False,
    output: Annotated[str | None, typer.Option("--output", "-o", help="wide, yaml, json or name.")] = None,
    selector: Annotated[str, typer.Option("--selector", "-l", help="Label selector, e.g. app=web,env!=dev.")] = "",
) -> None:
    """Show objects as tables, or as YAML/JSON."""
    infos = [_kind(kind) for kind in kinds.split(",") if kind]
    if output is not None and output not in OUTPUTS:
        _fail(f"error: unable to match a printer suitable for the output format {output!r}; use {', '.join(OUTPUTS)}")
    if names and all_namespaces:
        _fail("error: a resource cannot be retrieved by name across all namespaces")
    query = Query(infos, names or [], None if all_namespaces else namespace or "default", selector)
    results = _run(ctx, query.fetch)
    text = render(results, output, all_namespaces, single=len(infos) == 1 and len(query.names) == 1)
    if text:
        typer.echo(text)
    elif not names and output not in ("yaml", "json"):
        scoped = not all_namespaces and any(i.namespaced for i in infos)
        _stderr.print(f"No resources found{f' in {query.namespace} namespace' if scoped else ''}.")
    missing = [err for result in results for err in result.missing]
    for err in missing:
        _error(str(err))
    if missing:
        raise typer.Exit(1)


@app.command()
def describe(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(help="Kind: subs, mcls, desc, chart, ...")],
    name: Annotated[str, typer.Argument(help="Name of the object.")],
    namespace: NamespaceOption = None,
) -> None:
    """Show one object in detail, with its Events."""
    info = _kind(kind)
    ns = _namespace(info, namespace)

    async def fetch(client: HubClient) -> tuple[Object, list[Object]]:
        obj, events = await asyncio.gather(client.get(object_path(info, ns, name)), client.events(info.kind, ns, name))
        return obj, events

    obj, events = _run(ctx, fetch)
    typer.echo(describe_text(obj, events, datetime.now(UTC)))


@app.command()
def delete(
    ctx: typer.Context,
    args: Annotated[list[str] | None, typer.Argument(metavar="[KIND NAME...]", help="Kind and name(s).")] = None,
    filenames: FilesOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Delete objects by kind and name, or those described in files."""
    if bool(filenames) == bool(args):
        _fail("error: give either KIND NAME... or -f FILE, not both and not neither")
    if filenames:
        items = [(t.path, t.resource, t.name) for t in _load(filenames)]
    else:
        assert args is not None
        if len(args) < 2:
            _fail(f"error: give the name(s) of the {args[0]} to delete")
        info = _kind(args[0])
        ns = _namespace(info, namespace)
        items = [(object_path(info, ns, name), resource_name(info), name) for name in args[1:]]
    if _run(ctx, lambda client: _each([functools.partial(delete_one, client, *i) for i in items])):
        raise typer.Exit(1)


app.add_typer(config_app, name="config")

token_app = typer.Typer(help="Bootstrap tokens that let a child cluster register.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    ttl: Annotated[
        float | None, typer.Option("--ttl", min=1, help="Seconds until it expires (default: never).")
    ] = None,
    description: Annotated[str, typer.Option("--description", help="What it is for.")] = "",
) -> None:
    """Prints a new token, `[a-z0-9]{6}.[a-z0-9]{16}`; it is shown only now."""
    created = _run(ctx, lambda client: token_cli.create(client, ttl, description))
    typer.echo(created.token)


@token_app.command("list")
def token_list(ctx: typer.Context) -> None:
    typer.echo(token_cli.table(_run(ctx, token_cli.list_tokens)))


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context, token_id: Annotated[str, typer.Argument(help="The token's id (first part).")]
) -> None:
    _run(ctx, lambda client: token_cli.revoke(client, token_id.split(".")[0]))
    typer.echo(f"bootstrap token {token_id.split('.')[0]} revoked")


def _decide(ctx: typer.Context, kind: str, name: str, approved: bool, reason: str = "") -> None:
    try:
        approval_cli.check_kind(kind)
    except (ValueError, UnknownKindError) as err:
        _fail(str(err))
    result = _run(ctx, lambda client: approval_cli.decide(client, name, approved, reason))
    typer.echo(f"clusterregistrationrequest.clusters.clusternet.io/{name} {result.lower()}")


@app.command()
def approve(ctx: typer.Context, kind: Annotated[str, typer.Argument(help="clsrr")], name: str) -> None:
    """Approves a Pending ClusterRegistrationRequest (hub with --manual-approval)."""
    _decide(ctx, kind, name, True)


@app.command()
def deny(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(help="clsrr")],
    name: str,
    reason: Annotated[str, typer.Option("--reason", help="Told to the agent.")] = "",
) -> None:
    """Denies a Pending ClusterRegistrationRequest (hub with --manual-approval)."""
    _decide(ctx, kind, name, False, reason)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
