"""`cnet` commands: apply, get, describe, delete, with kubectl's flags and output.

Each command is synchronous for Typer and runs one `asyncio.run` of its requests; every
failure is a HubError or ObjectError turned into one clear message and exit code 1 here, in
one place, so no command can leak a traceback.

A command imports what only it uses when it runs (get's templates, proxy, tokens, approvals,
wait, the package version, rich for errors), so `cnet apply` starts without them; the tracing
of the store layer is imported only when spans are recorded (`_command_span`). No `from __future__
import annotations` here: Typer reads every command's annotations at each start, and as strings
they would be compiled and evaluated each time (twice as long).
"""

import asyncio
import contextlib
import functools
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer
from clusternet_nats.api import KindInfo, ObjectErrors, UnknownKindError, all_kinds, resolve
from clusternet_nats.api.paths import object_path
from clusternet_nats.api.registry import CATEGORIES
from clusternet_nats.cli import config as cnet_config
from clusternet_nats.cli.apply import Target, apply_all, delete_one, load_files, outcome
from clusternet_nats.cli.client import HubClient, HubError, Object, ssl_context
from clusternet_nats.cli.contexts import config_app
from opentelemetry import trace

if TYPE_CHECKING:
    from clusternet_nats.cli.get import Fetched, Request
    from rich.console import Console

T = TypeVar("T")

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    help="Clusternet's objects, kubectl-style, through the hub's HTTP API.",
)

FilesOption = Annotated[
    list[Path] | None,
    typer.Option("--filename", "-f", help="A YAML/JSON file or a directory of them; repeatable."),
]
NamespaceOption = Annotated[str | None, typer.Option("--namespace", "-n", help="Namespace (default: default).")]
RecursiveOption = Annotated[
    bool, typer.Option("--recursive", "-R", help="Also the files in the directories' subdirectories.")
]
SelectorOption = Annotated[str, typer.Option("--selector", "-l", help="Label selector, e.g. app=web,env!=dev.")]


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


def complete_kind(incomplete: str) -> list[str]:
    """Shell completion of a kind: every name of our kinds (the shadow kinds need the hub; not here)."""
    names = {name for info in all_kinds() for name in info.names()} | {"all", *CATEGORIES}
    return sorted(name for name in names if name.startswith(incomplete.lower()))


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


@functools.cache
def _stderr() -> "Console":
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _error(message: str) -> None:
    from rich.text import Text

    _stderr().print(Text(message, style="red"))


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
        with _command_span(ctx.command_path):  # the root of the trace its requests start
            return asyncio.run(main())
    except HubError as err:
        _fail(str(err))
    except KeyboardInterrupt:  # Ctrl-C ends `get -w` and `wait` as it ends kubectl's
        raise typer.Exit(130) from None


def _command_span(name: str) -> contextlib.AbstractContextManager[object]:
    """The command's CLIENT span when spans are recorded: a tracer provider is set (main's, from
    the OTEL_* variables) or a test put one in place (store.tracecontext.use_provider, so that
    module is loaded). Else nothing: that module loads the whole store package (nats, structlog,
    ~40% of `cnet apply`'s imports) to make a span no one records."""
    if "clusternet_nats.store.tracecontext" not in sys.modules and isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider
    ):
        return contextlib.nullcontext()
    from clusternet_nats.store.tracecontext import span

    return span(name, kind=trace.SpanKind.CLIENT)


def _kind(name: str) -> KindInfo:
    try:
        return resolve(name)
    except UnknownKindError as err:
        _fail(f"error: {err}")


def _load(paths: Sequence[Path], recursive: bool) -> list[Target]:
    try:
        return [Target.of(obj) for obj in load_files(paths, recursive)]
    except ObjectErrors as err:
        for error in err.errors:
            _error(f"error: {error}")
        raise typer.Exit(1) from None


def _namespace(info: KindInfo, namespace: str | None) -> str | None:
    return (namespace or "default") if info.namespaced else None


async def _print(outcomes: AsyncGenerator[str | HubError]) -> bool:
    """Prints each request's line or refusal as it comes; True if any was refused."""
    failed = False
    async with contextlib.aclosing(outcomes):
        async for result in outcomes:
            if isinstance(result, HubError):
                _error(str(result))
                failed = True
            elif result:
                typer.echo(result)
    return failed


async def _in_order(lines: Sequence[Callable[[], Awaitable[str]]]) -> AsyncGenerator[str | HubError]:
    """Runs requests one after another (deletes: the order given)."""
    for line in lines:
        yield await outcome(line())


@app.command()
def apply(
    ctx: typer.Context,
    filenames: FilesOption = None,
    recursive: RecursiveOption = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate locally; send nothing.")] = False,
) -> None:
    """Create or update objects from files or stdin (`-f -`); ordinary Kubernetes objects become Manifests."""
    if not filenames:
        _fail("error: must specify one of -f and --filename")
    targets = _load(filenames, recursive)
    if dry_run:
        for target in targets:
            typer.echo(target.validated())
        return

    async def work(client: HubClient) -> bool:
        return await _print(apply_all(client, targets))

    if _run(ctx, work):
        raise typer.Exit(1)


@app.command()
def get(
    ctx: typer.Context,
    args: Annotated[
        list[str],
        typer.Argument(
            metavar="KIND[,KIND...] [NAME...] | KIND/NAME...",
            autocompletion=complete_kind,
            help="subs, mcls, desc, deploy (applied kinds), subscriptions.apps.clusternet.io, all, clusternet...",
        ),
    ],
    namespace: NamespaceOption = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Across all namespaces.")] = False,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="wide, yaml, json, name, jsonpath=TEMPLATE, custom-columns=SPEC."),
    ] = None,
    selector: SelectorOption = "",
    watch: Annotated[bool, typer.Option("--watch", "-w", help="After the list, print each change.")] = False,
) -> None:
    """Show objects as tables, or as YAML/JSON/templates; -w follows changes."""
    from clusternet_nats.cli.get import check_output, follow
    from clusternet_nats.cli.templates import TemplateError

    try:
        check_output(output)
    except TemplateError as err:
        _fail(f"error: {err}")
    request = _request(args, None if all_namespaces else namespace or "default", selector)
    if request.named and all_namespaces:
        _fail("error: a resource cannot be retrieved by name across all namespaces")

    async def work(client: HubClient) -> "list[Fetched]":
        results = await request.fetch(client)
        _show(results, request, output, all_namespaces)
        if watch:
            if len(results) != 1:
                raise HubError("you may only specify a single resource type to watch")
            await follow(client, request, results[0], output, typer.echo)
        return results

    missing = [missed for result in _run(ctx, work) for missed in result.missing]
    for missed in missing:
        _error(str(missed))
    if missing:
        raise typer.Exit(1)


def _request(args: list[str], namespace: str | None, selector: str = "") -> "Request":
    from clusternet_nats.cli.get import Request

    try:
        return Request.parse(args, namespace, selector)
    except HubError as err:
        _fail(str(err))


def _show(results: "list[Fetched]", request: "Request", output: str | None, all_namespaces: bool) -> None:
    from clusternet_nats.cli.get import render
    from clusternet_nats.cli.templates import TemplateError

    try:
        text = render(results, output, all_namespaces, single=request.single)
    except TemplateError as err:
        _fail(f"error: {err}")
    if text:
        typer.echo(text)
    elif not request.named and output not in ("yaml", "json"):
        scoped = not all_namespaces and any(r.resource.namespaced for r in results)
        _stderr().print(f"No resources found{f' in {request.namespace} namespace' if scoped else ''}.")


@app.command()
def describe(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(help="Kind: subs, mcls, desc, chart, ... (or KIND/NAME)")],
    name: Annotated[str | None, typer.Argument(help="Name of the object.")] = None,
    namespace: NamespaceOption = None,
) -> None:
    """Show one object in detail, with its Events."""
    from clusternet_nats.cli.describe import bases_of, deleting_subscription
    from clusternet_nats.cli.describe import describe as describe_text

    if name is None:
        kind, _, name = kind.partition("/")
    if not name:
        _fail("error: give the name of the object to describe (KIND NAME or KIND/NAME)")
    info = _kind(kind)
    ns = _namespace(info, namespace)

    async def fetch(client: HubClient) -> tuple[Object, list[Object], list[Object] | None]:
        obj, events = await asyncio.gather(client.get(object_path(info, ns, name)), client.events(info.kind, ns, name))
        uid = deleting_subscription(obj)
        bases = None if uid is None else (await client.list_at(*bases_of(uid))).get("items") or []
        return obj, events, bases

    obj, events, bases = _run(ctx, fetch)
    typer.echo(describe_text(obj, events, datetime.now(UTC), bases))


@app.command()
def delete(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None, typer.Argument(metavar="[KIND NAME... | KIND/NAME...]", help="Kind and name(s).")
    ] = None,
    filenames: FilesOption = None,
    recursive: RecursiveOption = False,
    namespace: NamespaceOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Every object of the kind in the namespace.")] = False,
    selector: SelectorOption = "",
    ignore_not_found: Annotated[
        bool, typer.Option("--ignore-not-found", help="An object that is not there is not an error.")
    ] = False,
) -> None:
    """Delete objects by kind and name, by --all or -l, or those described in files."""
    if bool(filenames) == bool(args):
        _fail("error: give either KIND NAME... or -f FILE, not both and not neither")
    if filenames:
        files = [(t.path, t.resource, t.name) for t in _load(filenames, recursive)]

        async def from_files(client: HubClient) -> bool:
            lines = [functools.partial(delete_one, client, *i, ignore_not_found) for i in files]
            return await _print(_in_order(lines))

        if _run(ctx, from_files):
            raise typer.Exit(1)
        return
    assert args is not None
    request = _request(args, namespace or "default", selector)
    everything = all_ or bool(selector)
    if request.named == everything:
        _fail("error: give the name(s) to delete, or --all, or -l SELECTOR (not with names)")

    async def work(client: HubClient) -> bool:
        items: list[tuple[str, str, str]] = []
        for resource, names in await request.resolve(client):
            if everything:
                listed = await client.list_at(resource.collection(request.namespace), selector)
                names = [obj["metadata"]["name"] for obj in listed.get("items") or []]
            items += [(resource.path(request.namespace, name), resource.name, name) for name in names]
        if not items and not ignore_not_found:
            _stderr().print("No resources found")
        return await _print(_in_order([functools.partial(delete_one, client, *i, ignore_not_found) for i in items]))

    if _run(ctx, work):
        raise typer.Exit(1)


@app.command()
def version(
    ctx: typer.Context,
    client_only: Annotated[bool, typer.Option("--client", help="Only the client's version.")] = False,
    output: Annotated[str | None, typer.Option("--output", "-o", help="yaml or json.")] = None,
) -> None:
    """The client's version and the hub's (`/version`)."""
    from importlib.metadata import version as package_version

    from clusternet_nats.cli.printers import to_json, to_yaml

    client_version = {"gitVersion": f"v{package_version('clusternet-nats')}", "platform": sys.platform}
    data: Object = {"clientVersion": client_version}
    if not client_only:
        data["serverVersion"] = _run(ctx, lambda client: client.get("/version"))
    if output in ("yaml", "json"):
        typer.echo(to_yaml(data).rstrip("\n") if output == "yaml" else to_json(data))
        return
    if output is not None:
        _fail(f"error: --output must be 'yaml' or 'json', not {output!r}")
    typer.echo(f"Client Version: {client_version['gitVersion']}")
    if "serverVersion" in data:
        typer.echo(f"Server Version: {data['serverVersion'].get('gitVersion', '')}")


@app.command()
def wait(
    ctx: typer.Context,
    args: Annotated[list[str], typer.Argument(metavar="KIND NAME... | KIND/NAME...", help="What to wait for.")],
    for_: Annotated[
        str, typer.Option("--for", help="condition=<Type>[=<status>] (status default True), or delete.")
    ],
    namespace: NamespaceOption = None,
    timeout: Annotated[str, typer.Option("--timeout", help="How long to wait: 30s, 5m, 1h.")] = "30s",
) -> None:
    """Waits until each object has a condition (or is gone), as kubectl wait; exit 1 on timeout."""
    from clusternet_nats.cli import waiting

    seconds = waiting.duration_option("--timeout", timeout)
    try:
        condition = waiting.Condition.parse(for_)
    except ValueError as err:
        _fail(f"error: {err}")
    request = _request(args, namespace or "default")
    if not request.named:
        _fail("error: give the name(s) of the objects to wait for")

    async def work(client: HubClient) -> list[str]:
        lines = []
        for resource, names in await request.resolve(client):
            for name in names:
                lines.append(await waiting.wait(client, resource, request.namespace, name, condition, seconds))
        return lines

    for line in _run(ctx, work):
        typer.echo(line)


def _proxy_config(ctx: typer.Context, clusters: Sequence[str]) -> dict[str, object]:
    from clusternet_nats.cli import proxy as proxy_cli

    async def work(client: HubClient) -> list[tuple[str, str]]:
        return await proxy_cli.resolve_clusters(client, clusters)

    try:
        return proxy_cli.kubeconfig(_client_settings(ctx), _run(ctx, work))
    except proxy_cli.ProxyError as err:
        _fail(str(err))


@app.command("kubeconfig")
def kubeconfig_command(
    ctx: typer.Context,
    clusters: Annotated[list[str], typer.Argument(help="Child clusters: ManagedCluster name, NAMESPACE/NAME or id.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE (0600), not stdout.")] = None,
) -> None:
    """A kubeconfig with one context per child cluster, reaching it through the hub's proxy."""
    from clusternet_nats.cli import proxy as proxy_cli

    text = proxy_cli.dump(_proxy_config(ctx, clusters))
    if output is None:
        typer.echo(text, nl=False)
    else:
        proxy_cli.write_private(output, text)


@app.command("proxy", context_settings={"ignore_unknown_options": True})
def proxy_command(
    ctx: typer.Context,
    cluster: Annotated[str, typer.Argument(help="Child cluster: ManagedCluster name, NAMESPACE/NAME or id.")],
    args: Annotated[list[str] | None, typer.Argument(help="kubectl's arguments, after --.")] = None,
    kubectl: Annotated[Path | None, typer.Option("--kubectl", help="kubectl (else $CNET_KUBECTL, PATH).")] = None,
) -> None:
    """Runs kubectl against a child cluster through the hub: `cnet proxy CLUSTER -- get pods -A`."""
    from clusternet_nats.cli import proxy as proxy_cli

    try:
        binary = proxy_cli.find_kubectl(kubectl)
        config = _proxy_config(ctx, [cluster])
        code = proxy_cli.run_kubectl(binary, config, str(config["current-context"]), args or [])
    except proxy_cli.ProxyError as err:
        _fail(str(err))
    raise typer.Exit(code)


rollout_app = typer.Typer(help="How a Subscription's rollout is going.", no_args_is_help=True)
app.add_typer(rollout_app, name="rollout")


@rollout_app.command("status")
def rollout_status(
    ctx: typer.Context,
    args: Annotated[list[str], typer.Argument(metavar="subs NAME | subs/NAME", help="The Subscription.")],
    namespace: NamespaceOption = None,
    watch: Annotated[
        str, typer.Option("--watch", "-w", help="true: follow until done or failed; false: print once.")
    ] = "true",
    timeout: Annotated[str, typer.Option("--timeout", help="Give up after this long (0: never).")] = "0s",
) -> None:
    """Per-cluster releases done and failures with their reason, until every release is done."""
    from clusternet_nats.cli import waiting

    seconds = waiting.duration_option("--timeout", timeout)
    if watch.lower() not in ("true", "false"):
        raise typer.BadParameter(f"{watch!r} is not true or false", param_hint="'--watch'")
    request = _request(args, namespace or "default")
    if not (request.single and request.words[0][0].lower() in waiting.SUBSCRIPTION_NAMES):
        _fail("error: rollout status takes one Subscription: cnet rollout status subs NAME")
    name = request.words[0][1][0]
    info = resolve("subscription")

    async def work(client: HubClient) -> bool:
        follow = watch.lower() == "true"
        return await waiting.rollout(client, info, request.namespace, name, typer.echo, follow, seconds)

    if not _run(ctx, work):
        raise typer.Exit(1)


app.add_typer(config_app, name="config")

token_app = typer.Typer(help="Bootstrap tokens that let a child cluster register.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    ttl: Annotated[
        str, typer.Option("--ttl", help="How long it lasts: 24h, 30m, 1h30m; 0 for never (kubeadm's default: 24h).")
    ] = "24h",
    description: Annotated[str, typer.Option("--description", help="What it is for.")] = "",
) -> None:
    """Prints a new token, `[a-z0-9]{6}.[a-z0-9]{16}`; it is shown only now."""
    from clusternet_nats.cli import token as token_cli
    from clusternet_nats.cli.waiting import duration_option

    seconds = duration_option("--ttl", ttl)
    created = _run(ctx, lambda client: token_cli.create(client, seconds, description))
    typer.echo(created.token)


@token_app.command("list")
def token_list(ctx: typer.Context) -> None:
    from clusternet_nats.cli import token as token_cli

    typer.echo(token_cli.table(_run(ctx, token_cli.list_tokens)))


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context, token_id: Annotated[str, typer.Argument(help="The token's id (first part).")]
) -> None:
    from clusternet_nats.cli import token as token_cli

    _run(ctx, lambda client: token_cli.revoke(client, token_id.split(".")[0]))
    typer.echo(f"bootstrap token {token_id.split('.')[0]} revoked")


def _decide(ctx: typer.Context, kind: str, name: str, approved: bool, reason: str = "") -> None:
    from clusternet_nats.cli import approval as approval_cli

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


GLOBAL_OPTIONS = frozenset(
    {
        "--config",
        "--context",
        "--server",
        "-s",
        "--token",
        "--certificate-authority",
        "--client-certificate",
        "--client-key",
    }
)
GLOBAL_FLAGS = frozenset({"--insecure-skip-tls-verify"})


def hoist_global_options(argv: list[str]) -> list[str]:
    """kubectl takes `--server` and its like anywhere on the line; Typer only before the command, so
    they are moved there (`--server=X` and `--server X` alike); nothing after `--` moves."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        name = arg.partition("=")[0]
        if arg in GLOBAL_FLAGS or (name in GLOBAL_OPTIONS and "=" in arg):
            front.append(arg)
        elif arg in GLOBAL_OPTIONS and i + 1 < len(argv):
            front += argv[i : i + 2]
            i += 1
        else:
            rest.append(arg)
        i += 1
    return front + rest


def main() -> None:
    from clusternet_nats.runtime.tracing import TracingConfigError, configure_tracing

    try:
        tracing = configure_tracing("cnet")  # with OTEL_EXPORTER_OTLP_ENDPOINT set: a command is one trace
    except TracingConfigError as err:
        _error(f"error: {err}")
        raise SystemExit(1) from None
    try:
        app(args=hoist_global_options(sys.argv[1:]), prog_name="cnet")
    finally:
        if tracing is not None:
            tracing.shutdown()


if __name__ == "__main__":
    main()
