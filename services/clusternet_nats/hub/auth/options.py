"""The hub's serving and access flags, kube-apiserver's names, and what they build.

`with_security_options` adds the flags to the hub command (as runtime.options does for the common
ones), so `__main__` declares none of them; `Security.load` turns them into the TLS context and
the gate, reading every file before the first request (in a thread, never on the loop).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import structlog
import typer
from clusternet_nats.hub.auth.cache import DEFAULT_TTL
from clusternet_nats.hub.auth.decision import Authorizer
from clusternet_nats.hub.auth.gate import Gate, TokenAuthenticator
from clusternet_nats.hub.auth.policy import MastersAuthorizer, PolicyAuthorizer, parse_policy
from clusternet_nats.hub.auth.publicinfo import DiscoveryAuthorizer
from clusternet_nats.hub.auth.tls import default_cert_dir, server_context, serving_certificate
from clusternet_nats.hub.auth.tokenfile import TokenFileAuthenticator, parse_token_file
from clusternet_nats.runtime import pki

if TYPE_CHECKING:
    from clusternet_nats.kube.rest import KubeApi

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SecurityOptions:
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    cert_dir: Path = field(default_factory=default_cert_dir)
    tls_sans: tuple[str, ...] = ()
    client_ca_file: Path | None = None
    token_auth_file: Path | None = None
    authentication_kubeconfig: Path | None = None
    authorization_kubeconfig: Path | None = None
    authorization_policy_file: Path | None = None
    token_cache_ttl: float = DEFAULT_TTL
    authorized_cache_ttl: float = DEFAULT_TTL
    unauthorized_cache_ttl: float = DEFAULT_TTL

    def check(self) -> None:
        """Refuses settings that cannot work, before the service starts (reads the small files
        once, synchronously: call it from the command line, not the event loop)."""
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        for flag, path in (
            ("--tls-cert-file", self.tls_cert_file),
            ("--tls-private-key-file", self.tls_private_key_file),
            ("--client-ca-file", self.client_ca_file),
            ("--authentication-kubeconfig", self.authentication_kubeconfig),
            ("--authorization-kubeconfig", self.authorization_kubeconfig),
        ):
            if path is not None and not path.is_file():
                raise ValueError(f"{flag}: {path} is not a readable file")
        if self.token_auth_file is not None:
            parse_token_file(_read(self.token_auth_file, "--token-auth-file"), str(self.token_auth_file))
        if self.authorization_policy_file is not None:
            path = self.authorization_policy_file
            parse_policy(_read(path, "--authorization-policy-file"), str(path))


def _read(path: Path, flag: str) -> str:
    try:
        return path.read_text()
    except OSError as err:
        raise ValueError(f"{flag}: cannot read {path}: {err.strerror}") from None


@dataclass
class Security:
    """What serving needs: the TLS context, the gate, the CA clients trust, and clients to close."""

    ssl_context: ssl.SSLContext
    gate: Gate
    ca_file: Path | None
    serving_files: pki.KeyPair
    _apis: list[KubeApi]

    @classmethod
    async def load(cls, options: SecurityOptions, listen_host: str) -> Security:
        serving = await asyncio.to_thread(
            serving_certificate,
            options.tls_cert_file,
            options.tls_private_key_file,
            options.cert_dir,
            options.tls_sans,
            listen_host,
        )
        context = await asyncio.to_thread(server_context, serving.files, options.client_ca_file)
        tokens: list[TokenAuthenticator] = []
        authorizers: list[Authorizer] = [MastersAuthorizer(), DiscoveryAuthorizer()]
        apis: list[KubeApi] = []
        if options.token_auth_file is not None:
            tokens.append(await TokenFileAuthenticator.load(options.token_auth_file))
        if options.authorization_policy_file is not None:
            authorizers.append(await PolicyAuthorizer.load(options.authorization_policy_file))
        if options.authentication_kubeconfig or options.authorization_kubeconfig:
            await _delegate(options, tokens, authorizers, apis)
        log.info(
            "hub.security",
            serving_cert=str(serving.files.cert),
            generated_ca=str(serving.ca) if serving.ca else None,
            client_ca=str(options.client_ca_file) if options.client_ca_file else None,
            token_file=options.token_auth_file is not None,
            token_review=options.authentication_kubeconfig is not None,
            policy_file=options.authorization_policy_file is not None,
            subject_access_review=options.authorization_kubeconfig is not None,
        )
        return cls(context, Gate(tokens, authorizers), serving.ca, serving.files, apis)

    async def close(self) -> None:
        for api in self._apis:
            await api.close()


async def _delegate(
    options: SecurityOptions, tokens: list[TokenAuthenticator], authorizers: list[Authorizer], apis: list[KubeApi]
) -> None:
    """Adds TokenReview and SubjectAccessReview; imported here so that only a delegating hub pays
    for kubernetes-asyncio (about 35 MiB resident)."""
    from clusternet_nats.hub.auth.delegated import SubjectAccessReviewAuthorizer, TokenReviewAuthenticator
    from clusternet_nats.kube.rest import connect

    if options.authentication_kubeconfig is not None:
        api = await connect(options.authentication_kubeconfig)
        apis.append(api)
        tokens.append(TokenReviewAuthenticator(api, options.token_cache_ttl, options.token_cache_ttl))
    if options.authorization_kubeconfig is not None:
        api = await connect(options.authorization_kubeconfig)
        apis.append(api)
        authorizers.append(
            SubjectAccessReviewAuthorizer(api, options.authorized_cache_ttl, options.unauthorized_cache_ttl)
        )


def _option(name: str, default: Any, annotation: Any, *flags: str, envvar: str, help: str) -> inspect.Parameter:
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, typer.Option(*flags, envvar=envvar, help=help)],
    )


_FLAGS: list[inspect.Parameter] = [
    _option(
        "tls_cert_file",
        None,
        Path | None,
        "--tls-cert-file",
        envvar="CNET_HUB_TLS_CERT_FILE",
        help="Serving certificate (PEM). Without it one is generated into --cert-dir.",
    ),
    _option(
        "tls_private_key_file",
        None,
        Path | None,
        "--tls-private-key-file",
        envvar="CNET_HUB_TLS_PRIVATE_KEY_FILE",
        help="Private key of --tls-cert-file.",
    ),
    _option(
        "cert_dir",
        None,
        Path | None,
        "--cert-dir",
        envvar="CNET_HUB_CERT_DIR",
        help="Where the generated CA (ca.crt) and serving certificate are kept "
        "(default: $XDG_STATE_HOME/clusternet-nats/hub-certs).",
    ),
    _option(
        "tls_sans",
        None,
        list[str] | None,
        "--tls-san",
        envvar="CNET_HUB_TLS_SANS",
        help="Extra DNS name or IP of the generated serving certificate; repeatable.",
    ),
    _option(
        "client_ca_file",
        None,
        Path | None,
        "--client-ca-file",
        envvar="CNET_HUB_CLIENT_CA_FILE",
        help="CA bundle of client certificates to accept (CN: user, O: groups).",
    ),
    _option(
        "token_auth_file",
        None,
        Path | None,
        "--token-auth-file",
        envvar="CNET_HUB_TOKEN_AUTH_FILE",
        help='Static bearer tokens, CSV: token,user,uid,"group1,group2".',
    ),
    _option(
        "authentication_kubeconfig",
        None,
        Path | None,
        "--authentication-kubeconfig",
        envvar="CNET_HUB_AUTHENTICATION_KUBECONFIG",
        help="Kubernetes to check bearer tokens with (TokenReview).",
    ),
    _option(
        "authorization_kubeconfig",
        None,
        Path | None,
        "--authorization-kubeconfig",
        envvar="CNET_HUB_AUTHORIZATION_KUBECONFIG",
        help="Kubernetes to authorize requests with (SubjectAccessReview).",
    ),
    _option(
        "authorization_policy_file",
        None,
        Path | None,
        "--authorization-policy-file",
        envvar="CNET_HUB_AUTHORIZATION_POLICY_FILE",
        help="YAML binding users and groups to admin, edit or view (see docs/authentication.md).",
    ),
    _option(
        "token_cache_ttl",
        DEFAULT_TTL,
        float,
        "--authentication-token-webhook-cache-ttl",
        envvar="CNET_HUB_TOKEN_CACHE_TTL",
        help="Seconds a TokenReview answer is kept.",
    ),
    _option(
        "authorized_cache_ttl",
        DEFAULT_TTL,
        float,
        "--authorization-webhook-cache-authorized-ttl",
        envvar="CNET_HUB_AUTHORIZED_CACHE_TTL",
        help="Seconds an allowing SubjectAccessReview is kept.",
    ),
    _option(
        "unauthorized_cache_ttl",
        DEFAULT_TTL,
        float,
        "--authorization-webhook-cache-unauthorized-ttl",
        envvar="CNET_HUB_UNAUTHORIZED_CACHE_TTL",
        help="Seconds a refusing SubjectAccessReview is kept.",
    ),
]


def with_security_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates `def main(..., security: SecurityOptions)` so Typer shows the flags above."""
    signature = inspect.signature(command)
    own = [p for name, p in signature.parameters.items() if name != "security"]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        values = {p.name: kwargs.pop(p.name) for p in _FLAGS}
        values["tls_sans"] = tuple(values["tls_sans"] or ())
        if values["cert_dir"] is None:
            values["cert_dir"] = default_cert_dir()
        security = SecurityOptions(**values)
        try:
            security.check()
        except ValueError as err:  # TokenFileError and PolicyError are ValueErrors naming file and line
            raise typer.BadParameter(str(err)) from None
        return command(security=security, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own + _FLAGS)  # type: ignore[attr-defined]
    return wrapper
