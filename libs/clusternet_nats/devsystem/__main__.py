"""`python -m clusternet_nats.devsystem demo|up`: an embedded NATS, every service, simulated clusters.

`demo` is the walking skeleton end to end, and exits 0 only if it worked: it applies
examples/replication/, waits until every Description is applied, prints the tables and stops
everything cleanly. `up` runs the same system in the foreground until Ctrl-C so a user can
`cnet apply` from a second terminal: it merges a `clusternet-nats-up` context (the hub's URL, its
generated CA, an admin token) into cnet's config ($CNET_CONFIG or ~/.cnet/config) and makes it
current, so `cnet` needs no flags. The hub serves HTTPS and lets in nobody without credentials.
`up --nats-cluster 3` (`make up NATS_CLUSTER=3`) runs NATS as a 3-node JetStream cluster with R3
buckets, on consecutive ports from `--nats-port`; kill one server and the system carries on.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Annotated

import typer
from clusternet_nats.cli.config import ConfigError, default_path
from clusternet_nats.testing.natsserver import NatsCluster
from clusternet_nats.testing.system import DEFAULT_LABELS_CYCLE, System

app = typer.Typer(add_completion=False, help=__doc__)

REPO_ROOT = Path(__file__).resolve().parents[3]
DESCRIPTIONS = "/apis/apps.clusternet.io/v1alpha1/descriptions"
SUBSCRIPTIONS = "/apis/apps.clusternet.io/v1alpha1/subscriptions"
UP_CONTEXT = "clusternet-nats-up"


def cnet(system: System, *args: str) -> subprocess.CompletedProcess[str]:
    """`cnet` as the user would run it, pointed at the system's own config (admin context)."""
    exe = Path(sys.executable).parent / "cnet"
    return subprocess.run(
        [str(exe), "--config", str(system.cnet_config), *args], capture_output=True, text=True, check=False, timeout=60
    )


def rollout_done(system: System) -> tuple[bool, str]:
    """True when every Subscription is fully released and every Description is Success."""
    subs = system.hub_get(SUBSCRIPTIONS, timeout=5)["items"]
    descs = system.hub_get(DESCRIPTIONS, timeout=5)["items"]
    if not subs:
        return False, "no subscriptions yet"
    for sub in subs:
        status = sub.get("status") or {}
        desired, done = status.get("desiredReleases", 0), status.get("completedReleases", 0)
        if not desired or done < desired:
            return False, f"{sub['metadata']['name']}: {done}/{desired} releases"
    pending = [d["metadata"]["name"] for d in descs if (d.get("status") or {}).get("phase") != "Success"]
    if pending or not descs:
        return False, f"descriptions not applied yet: {pending}"
    return True, f"{len(descs)} descriptions applied"


def echo_run(result: subprocess.CompletedProcess[str]) -> None:
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        raise typer.Exit(result.returncode)


@app.command()
def demo(
    examples: Annotated[Path, typer.Option(help="What to apply.")] = REPO_ROOT / "examples" / "replication",
    clusters: Annotated[int, typer.Option(help="Simulated child clusters.")] = 3,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the rollout.")] = 120.0,
) -> None:
    """Run the walking skeleton once, end to end, and exit 0 if every Description was applied."""
    workdir = Path(tempfile.mkdtemp(prefix="cnet-demo-"))
    system = System(workdir, sim_clusters=clusters, labels_cycle=DEFAULT_LABELS_CYCLE, log_level="warning")
    typer.echo(f"starting NATS and {len(system.services)} service processes ({clusters} simulated clusters)")
    try:
        system.start()
        typer.echo(f"hub at {system.hub_url}, NATS at {system.nats_url}\n")
        shown = examples.relative_to(REPO_ROOT) if examples.is_relative_to(REPO_ROOT) else examples
        typer.echo(f"$ cnet apply -f {shown}")
        started = time.monotonic()
        echo_run(cnet(system, "apply", "-f", str(examples)))
        deadline = started + timeout
        while True:
            done, detail = rollout_done(system)
            if done:
                break
            if time.monotonic() > deadline:
                typer.echo(f"rollout did not finish in {timeout}s: {detail}", err=True)
                raise typer.Exit(1)
            time.sleep(0.2)
        typer.echo(f"\nfrom apply to rolled out: {time.monotonic() - started:.2f}s ({detail})\n")
        typer.echo("$ cnet get subs,mcls,desc -A")
        echo_run(cnet(system, "get", "subs,mcls,desc", "-A"))
    finally:
        codes = system.stop()
        failed = {name: code for name, code in codes.items() if code not in (0, None)}
        if failed:
            typer.echo(f"services did not exit cleanly: {failed}; logs in {workdir}", err=True)
            raise typer.Exit(1)
        shutil.rmtree(workdir, ignore_errors=True)
    typer.echo("\nstopped everything cleanly")


@app.command()
def up(
    clusters: Annotated[int, typer.Option(help="Simulated child clusters.")] = 3,
    hub_port: Annotated[int, typer.Option(help="Hub HTTP port.")] = 8080,
    nats_port: Annotated[int, typer.Option(help="NATS client port.")] = 4222,
    workdir: Annotated[Path, typer.Option(help="Where NATS data and logs go.")] = REPO_ROOT / ".cnet-up",
    labels_cycle: Annotated[str, typer.Option(help="Labels of cluster i: entry i mod n.")] = DEFAULT_LABELS_CYCLE,
    nats_cluster: Annotated[
        int, typer.Option(min=1, help="nats-servers in one JetStream cluster (buckets get min(n, 3) replicas).")
    ] = 1,
) -> None:
    """Run the system in the foreground until Ctrl-C."""
    wanted = {hub_port: "the hub (--hub-port)"}
    wanted |= {nats_port + i: f"NATS server {i} (--nats-port {nats_port}..)" for i in range(nats_cluster)}
    busy = [f"port {port} for {what} is already in use" for port, what in wanted.items() if port_taken(port)]
    if busy:
        typer.echo(
            "cannot start: " + "; ".join(busy) + ". Stop what holds it (a previous `make up`?) or choose other "
            "ports: python -m clusternet_nats.devsystem up --hub-port 18080 --nats-port 14222",
            err=True,
        )
        raise typer.Exit(1)
    system = System(
        workdir,
        sim_clusters=clusters,
        labels_cycle=labels_cycle,
        hub_port=hub_port,
        nats_port=nats_port,
        nats_cluster=nats_cluster,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    system.start()
    config = default_path()
    try:
        system.write_cnet_context(config, UP_CONTEXT)
        written = f"cnet context {UP_CONTEXT!r} (admin) written to {config} and made current"
    except ConfigError as err:  # the user's config is broken: leave it alone, point at ours
        config = system.cnet_config
        written = f"{err.args[0].removeprefix('error: ')}; left as it is: use cnet --config {config}"
    health = "\n".join(
        f"  {name:<12} http://127.0.0.1:{service.health_port}/readyz" for name, service in system.services.items()
    )
    typer.echo(
        f"Clusternet-NATS is up: hub {system.hub_url}, NATS {system.nats_url}, {clusters} simulated clusters.\n"
        f"Health (and /metrics) of each service:\n{health}\n"
        f"Admin credentials: {written}; the admin token is also in {system.hub_token_file} "
        f"and the hub's CA is {system.hub_ca}.\n"
        f"In another terminal:  export PATH={Path(sys.executable).parent}:$PATH\n"
        f"                      cnet apply -f examples/replication\n"
        f"                      cnet get subs,mcls,desc -A\n"
        f"                      nats --server {system.nats_url} kv ls\n"
        f"{nats_servers(system)}"
        f"Logs: {workdir}/*.log. Ctrl-C to stop."
    )
    try:
        while not stop.wait(1.0):
            for service in system.services.values():
                if not service.running:
                    typer.echo(f"{service.name} exited; restarting it. Last log lines:\n{service.log_tail(5)}")
                    service.start()
    finally:
        system.stop()
        typer.echo("stopped")


def port_taken(port: int) -> bool:
    """Whether something already listens on `port` (on any address), so `up` can say so before starting."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("0.0.0.0", port))  # checking the port, not serving on it
        except OSError:
            return True
    return False


def nats_servers(system: System) -> str:
    """For a NATS cluster: each server's pid, to kill one and watch the system carry on."""
    if not isinstance(system.nats, NatsCluster):
        return ""
    pids = ", ".join(f"{s.server_name} pid {s.proc.pid}" for s in system.nats.servers if s.proc)
    return f"NATS cluster of {len(system.nats.servers)} (R{system.stream_replicas}): {pids}\n"


def main() -> None:
    app()


if __name__ == "__main__":
    main()
