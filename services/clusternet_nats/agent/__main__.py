"""`python -m clusternet_nats.agent`: the agent of one child cluster, or of N simulated ones."""

import dataclasses
import resource
from pathlib import Path
from typing import Annotated, Any

import typer
from clusternet_nats.agent.backends.sim import Sizing
from clusternet_nats.agent.backends.sim.nodes import parse_taints_cycle
from clusternet_nats.agent.cluster_agent import SERVICE, StatusSettings
from clusternet_nats.agent.collector import (
    DEFAULT_COLLECT_FREQUENCY,
    DEFAULT_LABEL_PREFIXES,
    DEFAULT_LABEL_THRESHOLD,
    LabelAggregation,
)
from clusternet_nats.agent.heartbeat import DEFAULT_REPORT_FREQUENCY
from clusternet_nats.agent.identity import parse_labels, parse_labels_cycle
from clusternet_nats.agent.registration import RegistrationSettings, bootstrap_token_problem, registered_process
from clusternet_nats.agent.service import Agent, AgentOptions, Backend, with_cluster_id
from clusternet_nats.api.clusters import ClusterSyncMode
from clusternet_nats.api.meta import Taint
from clusternet_nats.runtime import eventloop
from clusternet_nats.runtime.options import with_common_options
from clusternet_nats.runtime.service import CommonOptions, run

app = typer.Typer(add_completion=False)


def _labels(text: str) -> dict[str, str]:
    try:
        return parse_labels(text)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def _labels_cycle(text: str) -> list[dict[str, str]]:
    try:
        return parse_labels_cycle(text)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def _taints(text: str) -> tuple[tuple[Taint, ...], ...]:
    try:
        return tuple(parse_taints_cycle(text))
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def _open_files_for(clusters: int) -> None:
    """Lifts the soft limit on open files to the hard one when the clusters need more: each holds
    a NATS connection (and registering, a second for a moment), and soft limits are often 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 2 * clusters + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _bootstrap_token(token: str | None) -> str | None:
    """Checked while the flags are parsed, as Clusternet's agent checks it before anything else."""
    if token and (problem := bootstrap_token_problem(token)):
        raise typer.BadParameter(problem)
    return token


def _option(flag: str, help_: str, callback: Any = None) -> Any:
    env = "CNET_AGENT_" + flag.removeprefix("--").upper().replace("-", "_")
    return typer.Option(flag, envvar=env, help=help_, callback=callback)


@app.command()
@with_common_options
def agent(
    common: CommonOptions,
    cluster_name: Annotated[
        str | None, _option("--cluster-name", "Cluster name; with --sim-clusters, their name prefix (default sim).")
    ] = None,
    cluster_id: Annotated[str | None, _option("--cluster-id", "Cluster UUID (default: UUIDv5 of the name).")] = None,
    cluster_labels: Annotated[str, _option("--cluster-labels", "Cluster labels, k=v,k2=v2.")] = "",
    sync_mode: Annotated[ClusterSyncMode, _option("--sync-mode", "Push, Pull or Dual.")] = ClusterSyncMode.PULL,
    sim_clusters: Annotated[int, _option("--sim-clusters", "Simulated clusters in this process (0: one).")] = 0,
    sim_labels_cycle: Annotated[
        str, _option("--sim-labels-cycle", "Label sets k=v,...;k=v,... given to clusters in turn.")
    ] = "",
    sim_nodes: Annotated[int, _option("--sim-nodes", "Nodes per simulated cluster.")] = 3,
    sim_node_cpu: Annotated[str, _option("--sim-node-cpu", "CPU of each simulated node.")] = "4",
    sim_node_memory: Annotated[str, _option("--sim-node-memory", "Memory of each simulated node.")] = "8Gi",
    state_dir: Annotated[
        Path | None, _option("--state-dir", "Keep simulated clusters' objects here across restarts.")
    ] = None,
    sim_node_labels: Annotated[
        str, _option("--sim-node-labels", "Label sets k=v,...;k=v,... given to simulated nodes in turn.")
    ] = "",
    sim_node_taints: Annotated[
        str, _option("--sim-node-taints", "Taint sets k=v:Effect,...;... given to simulated nodes in turn.")
    ] = "",
    report_frequency: Annotated[
        float,
        _option("--cluster-status-update-frequency", "Seconds between cluster status reports (heartbeats)."),
    ] = DEFAULT_REPORT_FREQUENCY,
    collect_frequency: Annotated[
        float, _option("--cluster-status-collect-frequency", "Seconds between cluster status collections.")
    ] = DEFAULT_COLLECT_FREQUENCY,
    labels_threshold: Annotated[
        float,
        _option("--labels-aggregate-threshold", "Share of nodes that must carry a label for the cluster to get it."),
    ] = DEFAULT_LABEL_THRESHOLD,
    labels_prefix: Annotated[
        str, _option("--labels-aggregate-prefix", "Comma-separated prefixes of node labels to aggregate.")
    ] = ",".join(DEFAULT_LABEL_PREFIXES),
    app_pusher: Annotated[
        bool, _option("--app-pusher", "Clusternet's AppPusher feature gate: let the hub deploy (Push, Dual).")
    ] = False,
    helm_binary: Annotated[
        Path | None, _option("--helm-binary", "helm for charts: installs (kube), renders (sim). Default: PATH.")
    ] = None,
    backend: Annotated[Backend, _option("--backend", "sim: simulated clusters; kube: a real cluster.")] = Backend.SIM,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(envvar="CNET_KUBECONFIG", help="The kube backend's cluster (default: in-cluster config)."),
    ] = None,
    bootstrap_token: Annotated[
        str | None,
        _option("--bootstrap-token", "Register with this token (needs --state-dir for credentials).", _bootstrap_token),
    ] = None,
    hub_leaf_url: Annotated[
        str | None, _option("--hub-leaf-url", "Run a leaf node per cluster dialling the hub's leaf port (tls://...).")
    ] = None,
    hub_ca: Annotated[Path | None, _option("--hub-ca", "CA of the hub's leaf-node TLS certificate.")] = None,
    leaf_url: Annotated[
        str | None,
        _option("--leaf-url", "A leaf nats-server already running here (a sidecar): connect to it, start none."),
    ] = None,
) -> None:
    if kubeconfig is not None and backend is not Backend.KUBE:
        raise typer.BadParameter("--kubeconfig (CNET_KUBECONFIG) is the kube backend's cluster: add --backend kube")
    if bootstrap_token and state_dir is None:
        raise typer.BadParameter("--bootstrap-token needs --state-dir, where the cluster's credentials are kept")
    if leaf_url and sim_clusters:
        raise typer.BadParameter("--leaf-url is one cluster's leaf; simulated clusters need one each")
    if leaf_url and bootstrap_token and not hub_leaf_url:
        raise typer.BadParameter("--leaf-url with --bootstrap-token needs --hub-leaf-url, the remote it hands the leaf")
    registration = (
        RegistrationSettings(bootstrap_token, state_dir, hub_leaf_url, hub_ca, leaf_url)
        if bootstrap_token and state_dir
        else None
    )
    if leaf_url and registration is None:
        common = dataclasses.replace(common, nats_url=leaf_url)  # the sidecar's own config names its remote
    options = AgentOptions(
        cluster_name=cluster_name,
        cluster_id=cluster_id,
        cluster_labels=_labels(cluster_labels),
        sync_mode=sync_mode,
        sim_clusters=sim_clusters,
        sim_labels_cycle=_labels_cycle(sim_labels_cycle),
        sizing=Sizing(
            sim_nodes, sim_node_cpu, sim_node_memory, tuple(_labels_cycle(sim_node_labels)), _taints(sim_node_taints)
        ),
        state_dir=state_dir,
        report_frequency=report_frequency,
        backend=backend,
        helm_binary=helm_binary,
        kubeconfig=kubeconfig,
        registration=registration,
        status=StatusSettings(
            collect_frequency=collect_frequency,
            app_pusher=app_pusher,
            aggregation=LabelAggregation(labels_threshold, tuple(p for p in labels_prefix.split(",") if p)),
        ),
    )
    _open_files_for(sim_clusters)
    try:
        built = Agent(options)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if registration is not None:
        # Registration files the cluster id, so the kube backend's is read from the cluster first.
        built = Agent(eventloop.run(with_cluster_id(options)))
        first = built.options.enrollment(built.options.identities()[0])
        assert first is not None
        common = eventloop.run(registered_process(common, first))
    run(SERVICE, common, built.build)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
