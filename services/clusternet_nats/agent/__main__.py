"""`python -m clusternet_nats.agent`: the agent of one child cluster, or of N simulated ones."""

from pathlib import Path
from typing import Annotated, Any

import typer
from clusternet_nats.agent.backends.sim import Sizing
from clusternet_nats.agent.heartbeat import DEFAULT_REPORT_FREQUENCY
from clusternet_nats.agent.identity import parse_labels, parse_labels_cycle
from clusternet_nats.agent.service import SERVICE, Agent, AgentOptions
from clusternet_nats.api.clusters import ClusterSyncMode
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


def _option(flag: str, help_: str) -> Any:
    env = "CNET_AGENT_" + flag.removeprefix("--").upper().replace("-", "_")
    return typer.Option(flag, envvar=env, help=help_)


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
    report_frequency: Annotated[
        float, _option("--report-frequency", "Seconds between cluster status reports.")
    ] = DEFAULT_REPORT_FREQUENCY,
) -> None:
    options = AgentOptions(
        cluster_name=cluster_name,
        cluster_id=cluster_id,
        cluster_labels=_labels(cluster_labels),
        sync_mode=sync_mode,
        sim_clusters=sim_clusters,
        sim_labels_cycle=_labels_cycle(sim_labels_cycle),
        sizing=Sizing(sim_nodes, sim_node_cpu, sim_node_memory),
        state_dir=state_dir,
        report_frequency=report_frequency,
    )
    try:
        built = Agent(options)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    run(SERVICE, common, built.build)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
