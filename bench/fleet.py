"""Benchmark: a fleet registering at once, then heartbeating, against the hub side as deployed.

A secured hub nats-server (auth callout, TLS leaf port: testing/securehub.py), the hub in
registration mode (`--hub-replicas` of them sharing the work through queue groups), the scheduler,
deployer and predictor, each its own process as deployed, and `--agents` agent processes started
together, each hosting its share of `--clusters` simulated clusters that hold only a bootstrap
token. Two phases:

1. Registration: from the agents' start until every cluster is Ready (bootstrap token ->
   ClusterRegistrationRequest -> approved ManagedCluster -> its own credentials -> a heartbeat
   reporting Ready), seen on the cluster-status bucket's subjects; beside it, when every cluster
   was approved (its first status, filed with its ManagedCluster). CPU seconds each process spent.
2. Heartbeats: for `--window` seconds (default: one `--report-frequency`, the shortest window in
   which every cluster reports once), the CPU of nats-server and of each hub-side service, and the
   heartbeats the agents sent (their status reports to the intake, counted on the wire). Clusternet's
   default `--report-frequency` is 180 s; a shorter one makes the load visible, and the CPU per
   heartbeat and the CPU it implies at 180 s are printed beside it (every CPU second of the window
   taken as the heartbeats' and scaled: an estimate; the CPU measured at the shorter period bounds it).

3. With `--rollout`: `cnet apply` (as the hub's admin) of the rollout bench's Replication
   Subscription (bench/rollout.py: MANIFESTS) to every cluster, until its status counts every
   cluster completed, seen in its KV bucket; the Descriptions' write rate from the stream's
   timestamps and each process's CPU meanwhile. Unlike bench/rollout.py (the embedded
   development system) every agent's status write and Event is here a request to the hub's intake.

Then the resident memory of every process (nats-server apart from the services; the agents
added up), and, in the same run, the raw reference: nats-py `publish_async` into a JetStream
stream on the same server (before the rollout, with the fleet heartbeating), with the load
average. `--json PATH` appends the figures in the scale report's format (testing/benchresult.py).

    .venv/bin/python bench/fleet.py --clusters 1000 --agents 4 --report-frequency 30 --window 30
    .venv/bin/python bench/fleet.py --clusters 10000 --agents 8 --report-frequency 60 --window 60
    .venv/bin/python bench/fleet.py --clusters 1000 --window 10 --rollout
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import nats
import psutil
from clusternet_nats.api.apps import Description, Subscription
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.intake import BUCKET_HEADER, PUT
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.subjects import HEARTBEAT, INTAKE
from clusternet_nats.cli import config as cnet_config
from clusternet_nats.domain.readiness import is_ready
from clusternet_nats.hub.registration import jwt
from clusternet_nats.hub.registration.records import ensure_registration_buckets, new_token, token_store
from clusternet_nats.store import ensure_buckets
from clusternet_nats.testing import benchresult
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.reference import load_average, publish_async_rate
from clusternet_nats.testing.securehub import SecureHub
from clusternet_nats.testing.system import ServiceProcess, ensure_admin_token, wait_ready
from cpu import cpu_seconds  # bench/cpu.py, beside this
from nats.aio.msg import Msg
from rollout import (  # bench/rollout.py, beside this
    MANIFESTS,
    SUBSCRIPTION_KEY,
    bucket,
    completed,
    last_sequence,
    written,
)

HUB_SIDE = ("hub", "scheduler", "deployer", "predictor")
CLUSTER_STATUS_BUCKET = by_kind("ManagedCluster").status_bucket
DEFAULT_REPORT_FREQUENCY = 180.0
"""Clusternet's --cluster-status-update-frequency."""


def service(name: str, directory: Path, args: list[str], module: str | None = None) -> ServiceProcess:
    module = module or name
    return ServiceProcess(
        name=name,
        module=f"clusternet_nats.{module}",
        args=[*args, "--log-level", "warning"],
        log_path=directory / f"{name}.log",
        health_port=free_port(),
        simulated_clusters=module == "agent",  # every agent here hosts simulated clusters
    )


def raise_open_files(needed: int) -> None:
    """Lift the soft limit on open files towards the hard one: nats-server (started from here)
    holds a socket per cluster."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard == resource.RLIM_INFINITY else max(soft, hard), hard))


class Watch:
    """Clusters seen Ready on the status bucket, and their reports, as they happen: a report is a
    status write through the intake when the status changed, else a heartbeat on core NATS."""

    def __init__(self) -> None:
        self.filed: set[str] = set()
        """Clusters whose first status the registrar filed with their ManagedCluster: registered."""
        self.all_filed_at: float | None = None
        self.ready: set[str] = set()
        self.heartbeats = 0
        self.status_writes = 0
        self.all_ready = asyncio.Event()
        self.expected = 0

    async def status_written(self, msg: Msg) -> None:
        key = msg.subject.split(".", 2)[2]
        if key not in self.filed and msg.data:
            self.filed.add(key)
            if len(self.filed) >= self.expected and self.all_filed_at is None:
                self.all_filed_at = time.monotonic()
        if key not in self.ready and msg.data and is_ready(ManagedClusterStatus.model_validate_json(msg.data)):
            self.ready.add(key)
            if len(self.ready) >= self.expected:
                self.all_ready.set()

    async def intake_put(self, msg: Msg) -> None:
        if (msg.headers or {}).get(BUCKET_HEADER) == CLUSTER_STATUS_BUCKET:
            self.status_writes += 1

    async def heartbeat(self, msg: Msg) -> None:
        self.heartbeats += 1


def rss_mib(processes: list[psutil.Process]) -> float:
    return round(float(sum(p.memory_info().rss for p in processes)) / 2**20, 1)


async def main(args: argparse.Namespace) -> int:
    clusters, agents = args.clusters, max(1, min(args.agents, args.clusters))
    # SIGTERM (a timeout, Ctrl-C's sibling) cancels the run, so every process it started is stopped.
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    raise_open_files(clusters + 1000)
    with tempfile.TemporaryDirectory(prefix="cnet-bench-") as tmp:
        directory = Path(tmp)
        seed = jwt.new_account_seed()
        secure = SecureHub(directory, seed, jwt.public_key(seed))
        secure.server.start()
        nc = await nats.connect(secure.url("hub"))
        js = nc.jetstream()
        processes: list[ServiceProcess] = []
        try:
            await ensure_buckets(js)
            await ensure_registration_buckets(js)
            token, record = new_token(timedelta(hours=1))
            await token_store(js).put(record.token_id, record, 0)
            common = ["--nats-url", secure.url("hub"), "--jetstream-domain", "hub"]
            os.environ["XDG_STATE_HOME"] = str(directory)  # where the hub keeps the CA it generates
            hub_port, admin = free_port(), ensure_admin_token(directory / "hub-tokens.csv")
            hub_args = ["--issuer-seed", seed, "--callout-url", secure.url("callout")]
            hub_args += ["--system-url", secure.url("sys")]
            first_hub = ["--listen", f"127.0.0.1:{hub_port}", "--cert-dir", str(directory / "hub-certs")]
            first_hub += ["--token-auth-file", str(directory / "hub-tokens.csv")]
            processes = [service("hub", directory, [*common, *hub_args, *first_hub])]
            for n in range(2, args.hub_replicas + 1):  # their callouts, registrars and intakes share queue groups
                listen = ["--listen", f"127.0.0.1:{free_port()}", "--cert-dir", str(directory / f"hub-{n}-certs")]
                processes.append(service(f"hub-{n}", directory, [*common, *hub_args, *listen], module="hub"))
            processes += [service(name, directory, common) for name in HUB_SIDE[1:]]
            for proc in processes:
                proc.start()
            await asyncio.to_thread(wait_ready, processes, 120)

            watch = Watch()
            watch.expected = clusters
            await nc.subscribe(f"$KV.{CLUSTER_STATUS_BUCKET}.>", cb=watch.status_written)
            shares = [clusters // agents + (1 if i < clusters % agents else 0) for i in range(agents)]
            fleet = [
                service(
                    f"agent-{i}",
                    directory,
                    [
                        *common,
                        *("--cluster-name", f"fleet{i}", "--sim-clusters", str(share)),
                        *("--bootstrap-token", token, "--state-dir", str(directory / f"state-{i}")),
                        *("--cluster-status-update-frequency", str(args.report_frequency)),
                    ],
                    module="agent",
                )
                for i, share in enumerate(shares)
            ]
            processes += fleet
            hub_side = {"nats-server": psutil.Process(secure.server.proc.pid)}  # type: ignore[union-attr]
            hub_side |= {p.name: psutil.Process(p.proc.pid) for p in processes if p.proc and p not in fleet}
            cpu0 = cpu_seconds(hub_side)
            started = time.monotonic()
            for agent in fleet:
                agent.start()
            agent_procs = [psutil.Process(a.proc.pid) for a in fleet if a.proc]
            shown = started
            while not watch.all_ready.is_set():
                now = time.monotonic()
                if now - started > args.timeout or not all(a.running for a in fleet):
                    ready = {key.rsplit(".", 1)[-1] for key in watch.ready}
                    names = [f"fleet{i}-{j}" for i, share in enumerate(shares) for j in range(1, share + 1)]
                    missing = [name for name in names if name not in ready]
                    tails = "\n".join(f"--- {a.name}\n{a.log_tail(10)}" for a in fleet)
                    print(f"FAILED: {len(watch.ready)} of {clusters} clusters Ready; not: {missing[:20]}\n{tails}")
                    return 1
                if now - shown >= 5:
                    shown = now
                    print(f"  {now - started:5.1f} s: {len(watch.ready)} Ready", flush=True)
                await asyncio.sleep(0.1)
            registration = time.monotonic() - started
            spent = {n: round(c - cpu0[n], 1) for n, c in cpu_seconds(hub_side).items()}
            each_agent = [round(c, 1) for c in cpu_seconds({str(p.pid): p for p in agent_procs}).values()]
            agent_cpu = round(sum(each_agent), 1)
            print(f"{clusters} clusters in {agents} agent processes: all Ready {registration:.1f} s after start")
            if watch.all_filed_at is not None:  # approved: ManagedCluster and first status filed
                print(f"  all registered (approved) {watch.all_filed_at - started:.1f} s after start")
            print(f"  {clusters / registration:.0f} clusters/s (load average {load_average()})", flush=True)
            print(f"  CPU seconds: {spent} agents {agent_cpu} ({each_agent}; from their start, imports included)")
            per_thousand = {n: round(c * 1000 / clusters, 2) for n, c in {**spent, "agents": agent_cpu}.items()}
            summed = round(sum(per_thousand.values()), 1)
            print(f"  CPU seconds per 1,000 registrations: {per_thousand}, all processes {summed}")

            for proc in hub_side.values():
                proc.cpu_percent(None)
            # Reports are counted from here only: during the registration the bench would take
            # a copy of every intake write, from the server and the CPU both, out of the run.
            await nc.subscribe(INTAKE.format(namespace="*", verb=PUT), cb=watch.intake_put)
            await nc.subscribe(HEARTBEAT.format(namespace="*", cluster_id="*"), cb=watch.heartbeat)
            await nc.flush()
            beats0, writes0, t0 = watch.heartbeats, watch.status_writes, time.monotonic()
            await asyncio.sleep(args.window)
            elapsed = time.monotonic() - t0
            cpu = {name: round(proc.cpu_percent(None), 1) for name, proc in hub_side.items()}
            writes = (watch.status_writes - writes0) / elapsed
            rate = (watch.heartbeats - beats0) / elapsed + writes
            total = sum(cpu.values())
            scale = args.report_frequency / DEFAULT_REPORT_FREQUENCY
            expected = clusters / args.report_frequency
            print(f"reports: {rate:.1f}/s (expected {expected:.1f}/s), of which status writes {writes:.1f}/s")
            print(f"hub-side CPU: {total:.1f}% of one core (" + ", ".join(f"{n} {c}%" for n, c in cpu.items()) + ")")
            per_beat = {n: round(c / 100 / rate * 1000, 3) for n, c in cpu.items()} if rate else {}
            at_default = {n: round(c * scale, 2) for n, c in cpu.items()}
            if rate:
                print(f"  CPU per heartbeat: {total / 100 / rate * 1000:.3f} ms ({per_beat})")
            print(f"  implied at {DEFAULT_REPORT_FREQUENCY:.0f} s: {total * scale:.1f}% of one core ({at_default})")

            rss = {name: rss_mib([proc]) for name, proc in hub_side.items()}
            rss["agents"] = rss_mib(agent_procs)
            print(f"RSS MiB: {rss} ({rss['agents'] / clusters * 1024:.0f} KiB per cluster in the agents)")
            # Measured with the fleet idle but for its heartbeats, before the rollout: after it,
            # the agents (yielding the CPU, testing/priority.py) still send their Events when the
            # status already counts every cluster, and the reference shared the server with them.
            reference = await publish_async_rate(secure.url("hub"))
            print(f"reference: nats-py publish_async {reference:.0f} msgs/s on the same server")
            rolled_out = None
            if args.rollout:
                config = directory / "cnet-config"
                hub = cnet_config.Cluster(
                    server=f"https://127.0.0.1:{hub_port}",
                    certificate_authority=str(directory / "hub-certs" / "ca.crt"),
                )
                cnet_config.write_context(config, "fleet", hub, cnet_config.User(token=admin))
                everyone = {**hub_side, **{a.name: p for a, p in zip(fleet, agent_procs, strict=True)}}
                rolled_out = await secured_rollout(secure.url("hub"), config, directory, clusters, everyone, args)
                if rolled_out is None:
                    tails = "\n".join(f"--- {p.name}\n{p.log_tail(10)}" for p in processes)
                    print(f"the services' logs end:\n{tails}")

            print(f"load average: {load_average()}")
            if args.json and rolled_out is not None:
                benchresult.write(
                    args.json,
                    bench="secured-rollout",
                    clusters=clusters,
                    figures=rolled_out,
                    reference=reference,
                )
            if args.json:
                benchresult.write(
                    args.json,
                    bench="fleet",
                    clusters=clusters,
                    figures={
                        "registration_s": round(registration, 2),
                        "registration_cpu_s": {**spent, "agents": agent_cpu},
                        "registration_cpu_s_per_1000": per_thousand,
                        "heartbeats_per_s": round(rate, 2),
                        "status_writes_per_s": round(writes, 2),
                        "hub_cpu_percent": cpu,
                        "hub_cpu_percent_at_180s": at_default,
                        "cpu_ms_per_heartbeat": per_beat,
                        "report_frequency_s": args.report_frequency,
                        "rss_mib": rss,
                        "agent_processes": float(agents),
                    },
                    reference=reference,
                    notes={
                        "hub_cpu_percent_at_180s": "hub_cpu_percent scaled by report_frequency_s/180, every CPU"
                        " second of the window taken as the heartbeats': an estimate (the services' other work"
                        " does not shrink with the rate); the measured hub_cpu_percent is the upper bound",
                        "heartbeats_per_s": "reports sent (heartbeats plus status writes), counted on the wire",
                    },
                )
            if args.rollout and rolled_out is None:
                return 1  # the fleet's own figures are recorded above; the rollout's failure is printed
        finally:
            for proc in reversed(processes):
                await asyncio.to_thread(proc.stop)
            await nc.close()
            secure.server.cleanup()
    return 0


async def rollout_progress(url: str) -> str:
    """What the store holds of the rollout: its Descriptions, their statuses by phase, and the
    Subscription's status, so that a rollout that never completes says where it stopped."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        descriptions = await js.key_value(bucket(Description))
        statuses = await js.key_value(bucket(Description, status=True))
        written_keys = set(await descriptions.keys())
        status_keys = await statuses.keys()
        phases: collections.Counter[str] = collections.Counter()
        for start in range(0, len(status_keys), 256):
            for entry in await asyncio.gather(*(statuses.get(key) for key in status_keys[start : start + 256])):
                phases[json.loads(entry.value or b"{}").get("phase", "none")] += 1
        unreported = sorted(written_keys - set(status_keys))
        subscription = await js.key_value(bucket(Subscription, status=True))
        status = json.loads((await subscription.get(SUBSCRIPTION_KEY)).value or b"{}")
        return (
            f"{len(written_keys)} Descriptions, statuses {dict(phases)}, {len(unreported)} without a status"
            f" {unreported[:10]}; the Subscription's status: completedReleases {status.get('completedReleases')}"
            f" of desiredReleases {status.get('desiredReleases')}"
        )
    except (nats.errors.Error, OSError) as err:
        return f"(not readable: {err!r})"
    finally:
        await nc.close()


async def secured_rollout(
    url: str,
    config: Path,
    directory: Path,
    clusters: int,
    processes: dict[str, psutil.Process],
    args: argparse.Namespace,
) -> dict[str, benchresult.Figure] | None:
    """`cnet apply` of the rollout bench's Replication Subscription on the secured hub, then the
    time until its status counts every cluster completed; its figures, or None (printed why)."""
    manifest = directory / "rollout.yaml"
    manifest.write_text(MANIFESTS)
    descriptions = bucket(Description)
    before = await last_sequence(url, descriptions)
    cpu0 = cpu_seconds(processes)
    started = time.monotonic()
    cnet = Path(sys.executable).parent / "cnet"
    await asyncio.to_thread(
        subprocess.run, [str(cnet), "--config", str(config), "apply", "-f", str(manifest)], check=True
    )
    outcome = await completed(url, clusters, started + args.timeout)
    if outcome is None:
        print(f"FAILED: the Subscription's status did not count {clusters} clusters completed in {args.timeout:.0f} s")
        print(f"  the store shows {await rollout_progress(url)}")
        return None
    seconds = outcome[0] - started
    spent = {name: c - cpu0[name] for name, c in cpu_seconds(processes).items()}
    stamps = await written(url, descriptions, before)
    span = (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else 0.0
    rate = len(stamps) / span if span else 0.0
    agents = round(sum(c for name, c in spent.items() if name.startswith("agent")), 2)
    hub_side = {name: round(c, 2) for name, c in spent.items() if not name.startswith("agent")}
    print(f"secured rollout: apply -> all {outcome[1]} Descriptions Success: {seconds:.2f} s (load {load_average()})")
    print(f"  Descriptions written: {len(stamps)}, {rate:,.0f}/s over {span:.2f} s")
    print(f"  CPU seconds meanwhile: {hub_side} agents {agents}")
    return {
        "rollout_s": round(seconds, 2),
        "descriptions_per_s": round(rate, 1),
        "rollout_cpu_s": {**hub_side, "agents": agents},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=4, help="agent processes sharing the clusters")
    parser.add_argument("--report-frequency", type=float, default=DEFAULT_REPORT_FREQUENCY, help="heartbeat seconds")
    parser.add_argument(
        "--window", type=float, default=None, help="seconds of heartbeats measured (default: --report-frequency)"
    )
    parser.add_argument("--hub-replicas", type=int, default=1, help="hub processes (hub, hub-2, ...)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up registration after this")
    parser.add_argument("--json", type=Path, help="append the figures here (testing/benchresult.py)")
    parser.add_argument("--rollout", action="store_true", help="then roll a Subscription out to every cluster")
    args = parser.parse_args()
    if args.window is None:
        args.window = args.report_frequency
    sys.exit(asyncio.run(main(args)))
