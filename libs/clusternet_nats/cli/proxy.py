"""`cnet kubeconfig CLUSTER...` and `cnet proxy CLUSTER -- KUBECTL-ARGS`: kubectl to child clusters
through the hub's proxy, as Clusternet's `kubectl clusternet --cluster-id` and its kubeconfigs do.

A child is named by its ManagedCluster's name (`NAMESPACE/NAME` when two namespaces hold one
of that name) or its cluster id; each becomes a kubeconfig context of that name whose server is
the hub's `/apis/proxies.clusternet.io/v1alpha1/sockets/<cluster-id>/proxy/direct`, with the
current cnet context's credentials and CA embedded, so the file works on its own (it is written
0600: it holds them). The hub authorises the user for the cluster; the child's RBAC then judges
the user the agent impersonates. `cnet proxy` runs the real kubectl (`--kubectl`, else
`$CNET_KUBECTL`, else `kubectl` on PATH) against such a file in a private temporary directory.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.labels import CLUSTER_ID
from clusternet_nats.api.proxy import DIRECT, PROXY_PREFIX
from clusternet_nats.api.registry import by_kind
from clusternet_nats.cli.client import HubClient, Object
from clusternet_nats.cli.config import ClientSettings, ca_data_pem

KUBECTL_ENV = "CNET_KUBECTL"
USER = "cnet"
"""The kubeconfig's one user: the cnet context's credentials, shared by every child's context."""


class ProxyError(Exception):
    """A cluster or kubectl that cannot be used; `str()` is the line to show."""


def _cluster_id(obj: Object) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str((obj.get("spec") or {}).get("clusterId") or labels.get(CLUSTER_ID) or "")


async def resolve_clusters(client: HubClient, names: Sequence[str]) -> list[tuple[str, str]]:
    """(context name, cluster id) for each of `names`: a ManagedCluster's name, `namespace/name`, or
    a cluster id; raises ProxyError naming each one that matches none, or several."""
    items = await client.list_objects(by_kind(ManagedCluster.KIND), None)
    out: list[tuple[str, str]] = []
    problems: list[str] = []
    for name in names:
        matches = []
        for obj in items:
            meta = obj.get("metadata") or {}
            keys = {meta.get("name"), f"{meta.get('namespace')}/{meta.get('name')}", _cluster_id(obj)}
            if name in keys:
                matches.append(obj)
        if not matches:
            what = "managedclusters.clusters.clusternet.io"
            problems.append(f'error: {what} "{name}" not found (no cluster has that name or id)')
        elif len(matches) > 1:
            where = ", ".join(f"{m['metadata'].get('namespace')}/{m['metadata'].get('name')}" for m in matches)
            problems.append(f'error: cluster "{name}" is ambiguous ({where}): name it NAMESPACE/NAME or by its id')
        elif not _cluster_id(matches[0]):
            problems.append(f'error: cluster "{name}" has no spec.clusterId yet (not registered by its agent)')
        elif (name, _cluster_id(matches[0])) not in out:
            out.append((name, _cluster_id(matches[0])))
    if problems:
        raise ProxyError("\n".join(problems))
    short = [given.rpartition("/")[2] for given, _ in out]
    # A context is named after the cluster; NAMESPACE/NAME stays only where two would share a name.
    return [(s if short.count(s) == 1 else given, cid) for s, (given, cid) in zip(short, out, strict=True)]


def proxy_server(hub: str, cluster_id: str) -> str:
    return f"{hub.rstrip('/')}{PROXY_PREFIX}{cluster_id}/proxy/{DIRECT}"


def _b64_file(path: Path, what: str) -> str:
    try:
        return base64.b64encode(path.read_bytes()).decode()
    except OSError as err:
        raise ProxyError(f"error: cannot read the {what} {path}: {err.strerror}") from None


def kubeconfig(settings: ClientSettings, clusters: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """A kubeconfig with one context per (name, cluster id), the first current."""
    cluster_fields: dict[str, Any] = {}
    if settings.certificate_authority:
        cluster_fields["certificate-authority-data"] = _b64_file(settings.certificate_authority, "CA file")
    elif settings.certificate_authority_data:
        ca_data_pem(settings.certificate_authority_data)  # refuses what is not base64 PEM, naming the field
        cluster_fields["certificate-authority-data"] = settings.certificate_authority_data
    if settings.insecure_skip_tls_verify:
        cluster_fields["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {}
    if settings.token:
        user["token"] = settings.token
    if settings.client_certificate:
        user["client-certificate-data"] = _b64_file(settings.client_certificate, "client certificate")
    if settings.client_key:
        user["client-key-data"] = _b64_file(settings.client_key, "client key")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": proxy_server(settings.server, cid), **cluster_fields}}
            for name, cid in clusters
        ],
        "users": [{"name": USER, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": USER}} for name, _ in clusters],
        "current-context": clusters[0][0] if clusters else "",
    }


def dump(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def write_private(path: Path, text: str) -> None:
    """Writes 0600 from the start: the file holds credentials."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def find_kubectl(explicit: Path | None) -> Path:
    """`--kubectl`, else $CNET_KUBECTL, else kubectl on PATH; ProxyError saying where it looked."""
    named = explicit or (Path(os.environ[KUBECTL_ENV]) if os.environ.get(KUBECTL_ENV) else None)
    if named is not None:
        if not (named.is_file() and os.access(named, os.X_OK)):
            raise ProxyError(f"error: kubectl {named} does not exist or is not executable")
        return named
    found = shutil.which("kubectl")
    if found is None:
        raise ProxyError(f"error: kubectl not found on PATH; install it, set ${KUBECTL_ENV} or pass --kubectl")
    return Path(found)


def run_kubectl(kubectl: Path, config: dict[str, Any], context: str, args: Sequence[str]) -> int:
    """kubectl ARGS against `context` of `config` (written to a private temporary file, removed
    after); its stdin, stdout and stderr are cnet's. Returns kubectl's exit code."""
    with tempfile.TemporaryDirectory(prefix="cnet-proxy-") as tmp:
        path = Path(tmp) / "kubeconfig"
        write_private(path, dump(config))
        argv = [str(kubectl), "--kubeconfig", str(path), "--context", context, *args]
        try:
            return subprocess.run(argv, check=False).returncode
        except OSError as err:
            raise ProxyError(f"error: cannot run {kubectl}: {err.strerror}") from None
