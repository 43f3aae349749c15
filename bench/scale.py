"""The scale report: docs/scale.md and docs/scale-*.png, from the benches at 100 to 10,000 clusters.

Runs each bench that yields a figure of the report (the rollout bench per strategy, the fleet
bench) as a subprocess with `--json`, one cluster count at a time, each under its own timeout so
one hung size is reported as such and the rest still run. Keeps every raw result (JSON Lines of
clusternet_nats.testing.benchresult) and each run's output in --results, then renders the report
from what is there: a figure that was not measured says why (timeout, failure, bench missing, the
bench did not report it), never a guess. The machine is shared, so one size may be run again: the
figures are the last attempt's, and a target (a time, the Description rate) shows every finished
run of that code beside it (at that commit, or any that changed only the docs or this renderer),
met only if each run met it.

    .venv/bin/python bench/scale.py                               # 100, 1,000, 5,000, 10,000
    .venv/bin/python bench/scale.py --clusters 100,1000 --results /root/scratch/results
    .venv/bin/python bench/scale.py --report-only                 # redraw docs from saved results

`make scale` installs the bench extra (matplotlib, psutil) and runs the first form.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
from clusternet_nats.testing.benchresult import BenchResult, BenchResultError, Figure, read

if TYPE_CHECKING:
    from matplotlib.axes import Axes

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
DEFAULT_RESULTS = DOCS / "scale-results"
DEFAULT_CLUSTERS = (100, 1000, 5000, 10000)
RUNS_FILE = "runs.jsonl"
HUB_SERVICES = ("hub", "scheduler", "deployer", "predictor")
STATUS_FREQUENCY_S = 180.0  # Clusternet's default --cluster-status-update-frequency (3 minutes)


# ---------------------------------------------------------------------------------------------
# Running the benches


@dataclass(frozen=True)
class Invocation:
    """One way of running a bench: the script (relative to the repo), the arguments it must take,
    and tuning (an option and its values) passed only if its --help lists the option."""

    script: str
    args: tuple[str, ...] = ()
    tuning: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Bench:
    """A bench of the report. The first candidate whose script exists and takes `--json` runs."""

    name: str
    candidates: tuple[Invocation, ...]
    fixed_s: float = 0.0
    """Seconds it runs whatever the fleet's size (a measuring window), added to its timeout."""


BENCHES = (
    Bench("rollout-Replication", (Invocation("bench/rollout.py", ("--strategy", "Replication")),)),
    # The Globalization update is reported from the Replication run; the Dividing one skips it.
    Bench(
        "rollout-Dividing",
        (Invocation("bench/rollout.py", ("--strategy", "Dividing"), tuning=(("--no-globalization",),)),),
    ),
    # The fleet registers and heartbeats at Clusternet's default 180 s (fleet.py's default), as a
    # fleet left at its defaults does, and the heartbeats are measured over one 180 s window right
    # after registration: each cluster's second report falls in it, so the 3-minute figure is
    # measured, not derived. (At 60 s a 10,000-cluster registration carried three times the
    # heartbeats, about 15 % more CPU on this machine.) Then the same Replication rollout as
    # bench/rollout.py's, on the secured hub (`--rollout`).
    Bench("fleet", (Invocation("bench/fleet.py", tuning=(("--rollout",),)),), fixed_s=STATUS_FREQUENCY_S),
)


@dataclass(frozen=True)
class Run:
    """What happened when one bench ran at one cluster count (kept in runs.jsonl)."""

    bench: str
    clusters: int
    status: str  # ok | failed | timeout | missing | not run
    reason: str = ""
    command: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    timeout_s: float = 0.0
    started_at: str = ""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    others_running: tuple[str, ...] = ()  # bench processes not ours seen when the run started
    results_file: str = ""
    log_file: str = ""

    @classmethod
    def from_json(cls, raw: dict[str, object]) -> Run:
        fields = dict(raw)
        for key in ("command", "load_before", "others_running"):
            value = fields.get(key)
            if isinstance(value, list):
                fields[key] = tuple(value)
        return cls(**fields)  # type: ignore[arg-type]


def choose(bench: Bench) -> Invocation | str:
    """The invocation to run (tuning the script does not take left out), or why none can."""
    missing = []
    for candidate in bench.candidates:
        script = REPO / candidate.script
        if not script.exists():
            missing.append(f"{candidate.script} does not exist")
            continue
        helped = subprocess.run(
            [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=REPO
        )
        if "--json" not in helped.stdout:
            missing.append(f"{candidate.script} has no --json option")
            continue
        if candidate.args and candidate.args[0] not in helped.stdout:
            missing.append(f"{candidate.script} has no {candidate.args[0]} option")
            continue
        tuning = tuple(option for option in candidate.tuning if option[0] in helped.stdout)
        return Invocation(candidate.script, candidate.args + tuple(x for option in tuning for x in option))
    return "; ".join(missing)


def other_benches() -> tuple[str, ...]:
    """Command lines of bench processes not started by this one: figures measured beside them are noisy."""
    me = psutil.Process()
    mine = {me.pid, *(p.pid for p in me.children(recursive=True)), *(p.pid for p in me.parents())}
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["pid"] in mine or not any("bench/" in part and part.endswith(".py") for part in cmdline):
            continue
        found.append(" ".join(cmdline)[:160])
    return tuple(found)


def stop_tree(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGINT the bench (its `finally` stops the system it started), then kill whatever of its
    process tree is still alive after `grace`: services run in sessions of their own."""
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _, alive = psutil.wait_procs(tree, timeout=5)
    for leftover in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            leftover.kill()
    psutil.wait_procs(alive, timeout=10)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def run_one(bench: Bench, clusters: int, results: Path, timeout: float, cut: str = "") -> Run:
    """Run `bench` at `clusters`, its raw results into results/<bench>-<clusters>.jsonl."""
    chosen = choose(bench)
    if isinstance(chosen, str):
        return Run(bench.name, clusters, "missing", reason=chosen, started_at=now())
    # A size run again keeps the earlier attempt's files: the report lists every attempt.
    stem, attempt = f"{bench.name}-{clusters}", 1
    while (results / f"{stem}.log").exists():
        attempt += 1
        stem = f"{bench.name}-{clusters}-{attempt}"
    out, log = results / f"{stem}.jsonl", results / f"{stem}.log"
    command = (sys.executable, chosen.script, *chosen.args, "--clusters", str(clusters), "--json", str(out))
    load = os.getloadavg()
    base = Run(
        bench.name,
        clusters,
        "ok",
        command=command,
        timeout_s=timeout,
        started_at=now(),
        load_before=(round(load[0], 2), round(load[1], 2), round(load[2], 2)),
        others_running=other_benches(),
        results_file=out.name,
        log_file=log.name,
    )
    print(f"[{base.started_at}] {bench.name} at {clusters} clusters (timeout {timeout:.0f}s): {' '.join(command)}")
    started = time.monotonic()
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            stop_tree(proc, grace=60)
            code = None
        except KeyboardInterrupt:
            stop_tree(proc, grace=60)
            raise
    elapsed = round(time.monotonic() - started, 1)
    if code is None:
        status, reason = "timeout", f"did not finish within {timeout:.0f} s{cut}; last output: "
    elif code != 0:
        status, reason = "failed", f"exit code {code}: "
    elif not out.exists():
        status, reason = "failed", "wrote no results: "
    else:
        status, reason = "ok", ""
    run = explain(replace(base, status=status, reason=reason, elapsed_s=elapsed), log)
    print(f"  -> {run.status} in {elapsed:.0f}s {run.reason}")
    return run


TRACEBACK = "Traceback (most recent call last):"
EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b")


def tail(log: Path, lines: int = 2, interrupted: bool = False) -> str:
    """What a run's output says about how it ended: the bench's own lines (the services' JSON log
    lines left out), the last `lines` of them printed before any traceback (how far it got) and,
    unless it was `interrupted` by the timeout, the exception it ended with."""
    raw = log.read_text(errors="replace").splitlines() if log.exists() else []
    text = [line for line in raw if line.strip() and not line.lstrip().startswith("{")]
    before = text[: text.index(TRACEBACK)] if TRACEBACK in text else text
    said = " | ".join(line.strip() for line in before[-lines:])
    raised = [line.strip() for line in text[len(before):] if EXCEPTION.match(line)]
    if raised and not interrupted:
        said = f"{raised[-1]}" + (f"; before it: {said}" if said else "")
    return said[:500]


def explain(run: Run, log: Path) -> Run:
    """`run` with its reason (re)written from its log, so a report redrawn from saved results
    says what the log says."""
    if run.status == "timeout" and "; last output: " in run.reason:
        head = run.reason.split("; last output: ")[0]
        return replace(run, reason=f"{head}; last output: {tail(log, interrupted=True) or 'none'}")
    if run.status == "failed" and (ended := re.match(r"(exit code -?\d+|wrote no results): ", run.reason)):
        return replace(run, reason=f"{ended.group(1)}: {tail(log)}")
    return run


def record_run(results: Path, run: Run) -> None:
    with (results / RUNS_FILE).open("a", encoding="utf-8") as out:
        out.write(json.dumps(asdict(run)) + "\n")


# ---------------------------------------------------------------------------------------------
# Reading results


@dataclass
class Outcome:
    """The latest run of each (bench, cluster count) in a results directory, with its records."""

    runs: dict[tuple[str, int], Run] = field(default_factory=dict)
    records: dict[tuple[str, int], list[BenchResult]] = field(default_factory=dict)
    history: list[Run] = field(default_factory=list)  # every run, earlier attempts included
    attempts: dict[tuple[str, int], list[list[BenchResult]]] = field(default_factory=dict)
    """The records of every run that finished, the latest among them, oldest first."""

    @property
    def sizes(self) -> list[int]:
        return sorted({n for _, n in self.runs})


def load(results: Path) -> Outcome:
    outcome = Outcome()
    runs_file = results / RUNS_FILE
    if not runs_file.exists():
        return outcome
    for line in runs_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            outcome.history.append(Run.from_json(json.loads(line)))
    for index, run in enumerate(outcome.history):
        later_logs = {r.log_file for r in outcome.history[index + 1 :]}
        if run.log_file and run.log_file not in later_logs:
            run = explain(run, results / run.log_file)
        elif run.log_file:  # overwritten by a later attempt (before attempts had files of their own)
            kept = [s.split("{")[0].strip() for s in run.reason.split(" | ")]
            said = " | ".join(s for s in kept if s).rstrip(":")
            run = replace(run, reason=f"{said} (its output was overwritten by the later attempt)")
        outcome.history[index] = run
        outcome.runs[(run.bench, run.clusters)] = run
    read_files: set[str] = set()
    for run in outcome.history:
        if run.status != "ok" or not run.results_file or run.results_file in read_files:
            continue
        read_files.add(run.results_file)  # before attempts had files of their own, a later one wrote over it
        with contextlib.suppress(OSError, BenchResultError):
            outcome.attempts.setdefault((run.bench, run.clusters), []).append(read(results / run.results_file))
    for key, run in list(outcome.runs.items()):
        path = results / run.results_file if run.results_file else None
        if path is None or not path.exists():
            continue
        try:
            outcome.records[key] = read(path)
        except BenchResultError as exc:
            outcome.runs[key] = Run(**{**asdict(run), "status": "failed", "reason": str(exc)})
    return outcome


# ---------------------------------------------------------------------------------------------
# Figures


@dataclass(frozen=True)
class Point:
    """One figure at one cluster count, or why there is none."""

    clusters: int
    value: float | dict[str, float] | None
    record: BenchResult | None = None
    missing: str = ""


def number(figure: Figure | None) -> float | None:
    return float(figure) if isinstance(figure, int | float) and not isinstance(figure, bool) else None


def mapping(figure: Figure | None) -> dict[str, float] | None:
    return dict(figure) if isinstance(figure, dict) else None


@dataclass(frozen=True)
class Series:
    """Where a figure comes from: the benches that report it, which of their records hold it
    (a rollout bench writes one record per phase), and the figure's name."""

    benches: tuple[str, ...]
    figure: str
    match: Callable[[BenchResult], bool] = lambda _: True

    def points(self, outcome: Outcome, convert: Callable[[Figure | None], object] = number) -> list[Point]:
        points = []
        for n in outcome.sizes:
            found: Point | None = None
            reasons = []
            for bench in self.benches:
                run = outcome.runs.get((bench, n))
                if run is None:
                    continue
                for record in outcome.records.get((bench, n), []):
                    if not self.match(record):
                        continue
                    value = convert(record.figures.get(self.figure))
                    if value is not None:
                        found = Point(n, value, record)  # type: ignore[arg-type]
                        break
                    note = record.notes.get(self.figure)
                    reasons.append(f"{bench}: {note}" if note else f"{bench} did not report {self.figure}")
                if found:
                    break
                if run.status == "ok" and not outcome.records.get((bench, n)):
                    reasons.append(f"{bench} wrote no records")
                elif run.status != "ok":
                    reasons.append(f"{bench} {run.status}: {run.reason}")
            if found:
                points.append(found)
            elif reasons:
                points.append(Point(n, None, missing="; ".join(dict.fromkeys(reasons))))
        return points

    def repeats(self, outcome: Outcome, point: Point | None) -> list[tuple[float, BenchResult]]:
        """The figure in every finished run at `point`'s size that measured the code its record
        measured (`code_of`), oldest first (its own included), each with its record (its raw
        reference): how far one machine's noise spreads it."""
        if point is None or point.record is None:
            return []
        code = code_of(point.record.machine.git_commit)
        found: list[tuple[float, BenchResult]] = []
        for bench in self.benches:
            for records in outcome.attempts.get((bench, point.clusters), []):
                matching = [r for r in records if code_of(r.machine.git_commit) == code and self.match(r)]
                value = next(((v, r) for r in matching if (v := number(r.figures.get(self.figure))) is not None), None)
                if value is not None:
                    found.append(value)
        return found


CODE_PATHS = ("libs", "services", "bench", "pyproject.toml")
"""What a run measures. Commits that changed nothing here (docs, the report's own results) ran
the same code, so their runs repeat one another: a target is judged over all of them."""
NOT_MEASURED = ("bench/scale.py",)
"""This report's own renderer, which no figure depends on."""


@functools.cache
def code_of(commit: str | None) -> str | None:
    """The code a run at `commit` measured: a digest of the files of CODE_PATHS there (but
    NOT_MEASURED). A commit with edits ("+dirty"), or one this checkout does not have (a shallow
    clone), is only itself."""
    if commit is None or commit.endswith("+dirty"):
        return commit
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "ls-tree", "-r", commit, "--", *CODE_PATHS],
            capture_output=True, text=True, timeout=30, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return commit
    files = [line for line in done.stdout.splitlines() if line.partition("\t")[2] not in NOT_MEASURED]
    return hashlib.sha256("\n".join(files).encode()).hexdigest()


def strategy(name: str) -> Callable[[BenchResult], bool]:
    return lambda record: record.figures.get("strategy", "Replication") == name


ROLLOUT = {s: ("rollout-" + s,) for s in ("Replication", "Dividing")}
FLEET = ("fleet",)


GLOBAL_BENCHES = (*ROLLOUT["Replication"], "globalization")


def globalization_phase(record: BenchResult) -> bool:
    return "globalization_update_s" in record.figures


def rollout_phase(name: str) -> Callable[[BenchResult], bool]:
    return lambda record: strategy(name)(record) and not globalization_phase(record)


APPLY = {s: Series(ROLLOUT[s], "apply_to_success_s", rollout_phase(s)) for s in ROLLOUT}
WRITE_RATE = {s: Series(ROLLOUT[s], "descriptions_per_s", rollout_phase(s)) for s in ROLLOUT}
GLOBALIZATION = Series(GLOBAL_BENCHES, "globalization_update_s")
GLOBAL_UPDATED = Series(GLOBAL_BENCHES, "descriptions_updated", globalization_phase)
GLOBAL_RATE = Series(GLOBAL_BENCHES, "descriptions_per_s", globalization_phase)
REGISTRATION = Series(FLEET, "registration_s")
REGISTRATION_CPU = Series(FLEET, "registration_cpu_s_per_1000")
SECURED_ROLLOUT = Series(FLEET, "rollout_s")
SECURED_RATE = Series(FLEET, "descriptions_per_s")
HEARTBEAT_CPU = Series(FLEET, "hub_cpu_percent")
MEMORY_TITLES = {
    "rollout": "after the Replication rollout (every cluster has its Base and Description)",
    "fleet": "with every cluster registered and heartbeating",
}
MEMORY = {
    "rollout": Series(ROLLOUT["Replication"], "rss_mib", rollout_phase("Replication")),
    "fleet": Series(FLEET, "rss_mib"),
}


# ---------------------------------------------------------------------------------------------
# Rendering


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def cluster_label(n: int) -> str:
    return f"{n:,}"


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares line y = slope * x + intercept, None with fewer than two distinct xs."""
    if len(set(xs)) < 2:
        return None
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return slope, mean_y - slope * mean_x


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def load_of(record: BenchResult | None) -> str:
    return " ".join(f"{x:.2f}" for x in record.load_average) if record else "—"


def ref_of(record: BenchResult | None) -> str:
    return f"{record.reference_msgs_per_s:,.0f}" if record else "—"


def verdict(met: bool | None) -> str:
    return {True: "met", False: "**not met**", None: "not measured"}[met]


def verdict_over(runs: Sequence[bool]) -> str:
    """Met only if every run met it; where some did, how many."""
    meeting = sum(runs)
    return verdict(meeting == len(runs)) if meeting in (0, len(runs)) else f"**met in {meeting} of {len(runs)} runs**"


def at(points: Sequence[Point], n: int) -> Point | None:
    return next((p for p in points if p.clusters == n), None)


def time_section(
    title: str, points: list[Point], rate_figure: list[Point] | None, targets: dict[int, float]
) -> list[str]:
    """A table of a time figure: seconds, per-cluster rate, the same run's reference and ratio."""
    lines = [f"### {title}", ""]
    rows = []
    for p in points:
        if p.value is None or isinstance(p.value, dict):
            rows.append([cluster_label(p.clusters), f"not measured: {p.missing}", "—", "—", "—", "—", "—"])
            continue
        rate = None
        if rate_figure is not None:
            rp = at(rate_figure, p.clusters)
            rate = rp.value if rp and isinstance(rp.value, float) else None
        if rate is None and p.value > 0:
            rate = p.clusters / p.value
        ratio = rate / p.record.reference_msgs_per_s if p.record and rate and p.record.reference_msgs_per_s else None
        target = targets.get(p.clusters)
        met = "—" if target is None else verdict(p.value < target) + f" (< {target:g} s)"
        rows.append([
            cluster_label(p.clusters), fmt(p.value), fmt(rate, 0), ref_of(p.record), fmt(ratio, 3), met,
            load_of(p.record),
        ])
    header = ["clusters", "seconds", "per second", "raw publish_async msgs/s", "ratio", "target", "load 1/5/15"]
    return [*lines, *table(header, rows), ""]


def hub_service(process: str) -> bool:
    """A hub-side service, replicas included ("hub-2", "deployer-3")."""
    return process.split("-")[0] in HUB_SERVICES


@dataclass(frozen=True)
class HeartbeatCpu:
    """Percent of one core at the 3-minute frequency, derived from a run at `frequency` seconds.

    Derived = measured x frequency / 180, as if every CPU second of the window were heartbeat
    work. The services' other work does not shrink with the heartbeat rate, so the true figure
    lies between the derived one and the measured one (which had 180 / frequency times the
    heartbeats): `services` is the estimate, `services_bound` the upper bound.
    """

    services: float
    nats: float
    frequency: float
    services_bound: float
    nats_bound: float

    @property
    def derived(self) -> bool:
        return self.frequency < STATUS_FREQUENCY_S

    def verdict(self, limit: float) -> str:
        if self.services_bound < limit:
            return verdict(True)
        if self.services >= limit:
            return verdict(False)
        return f"met by the derived figure; the upper bound {self.services_bound:.1f} % is not"


def cpu_at_default(point: Point) -> HeartbeatCpu | None:
    if not isinstance(point.value, dict) or point.record is None:
        return None
    frequency = number(point.record.figures.get("report_frequency_s")) or STATUS_FREQUENCY_S
    scale = min(1.0, frequency / STATUS_FREQUENCY_S)
    services = sum(v for k, v in point.value.items() if hub_service(k))
    nats = point.value.get("nats-server", 0.0)
    return HeartbeatCpu(services * scale, nats * scale, frequency, services, nats)


def memory_split(rss: dict[str, float]) -> tuple[float, float]:
    """(hub-side services MiB, nats-server MiB); nats-server of a cluster is every `nats*` entry."""
    services = sum(v for k, v in rss.items() if hub_service(k))
    nats = sum(v for k, v in rss.items() if k.startswith("nats"))
    return services, nats


@dataclass
class Report:
    """docs/scale.md's text and the data of its plots."""

    outcome: Outcome
    results: Path
    command: str

    def markdown(self) -> str:
        o = self.outcome
        apply = {s: APPLY[s].points(o) for s in APPLY}
        write_rate = {s: WRITE_RATE[s].points(o) for s in WRITE_RATE}
        glob, glob_n, glob_rate = GLOBALIZATION.points(o), GLOBAL_UPDATED.points(o), GLOBAL_RATE.points(o)
        registration = REGISTRATION.points(o)
        secured, secured_rate = SECURED_ROLLOUT.points(o), SECURED_RATE.points(o)
        cpu = HEARTBEAT_CPU.points(o, mapping)
        memory = {k: s.points(o, mapping) for k, s in MEMORY.items()}
        lines = ["# Scale report", ""]
        lines += [
            "Generated by `bench/scale.py` from the raw results in "
            f"`{self.results_rel()}`; do not edit by hand. Every figure is printed beside the raw "
            "nats-py `publish_async` rate into a JetStream stream on the same server measured in the "
            "same run (`clusternet_nats/testing/reference.py`) and the load average when the run "
            "ended: the machine is shared and figures mean something only next to those.",
            "",
            "Regenerate (about an hour on 2 cores): `make scale`, or",
            "",
            "```",
            self.command,
            ".venv/bin/python bench/scale.py --report-only   # redraw from the saved results",
            "```",
            "",
        ]
        lines += self.machine_section()
        lines += self.targets_section(apply, write_rate, registration, cpu, memory)
        lines += ["## Figures", ""]
        lines += ["Per second: Descriptions written per second where the bench counts them from the KV stream, "
                  "otherwise clusters divided by the seconds. Ratio: that rate divided by the raw "
                  "publish_async rate of the same run, which factors out how fast the bus was then.", ""]
        lines += time_section("Registration: bootstrap token → approved → own credentials → Ready",
                              registration, None, {10000: 60})
        spread = [(p.clusters, number(p.record.figures.get("agent_processes"))) for p in registration if p.record]
        if any(n for _, n in spread):
            lines += ["Simulated clusters spread over agent processes, all started at once: " + ", ".join(
                f"{fmt(n, 0)} at {cluster_label(c)}" for c, n in spread if n) + ".", ""]
        lines += self.registration_cpu_section(registration)
        lines += ["What the two kinds of bench run (read them apart): registration and heartbeats "
                  "(`bench/fleet.py`) on the secured hub as shipped, every connection through the auth callout "
                  "and every agent write a request to the hub's intake; the rollouts and the Globalization "
                  "(`bench/rollout.py`) on the embedded development system (`testing/system.py`: one nats-server "
                  "without the callout, the simulated agents writing their Descriptions' statuses straight to "
                  "JetStream), applied once the hub side has finished setting the fleet up (its services under 5 % "
                  "of a core: the hub initialises each newly Ready cluster after the system reports it ready). "
                  "The fleet bench then rolls the same Replication Subscription out on the secured hub "
                  "(`--rollout`), where every status write and Event of an agent is a request to the hub's "
                  "intake: its own table below. In both, the processes hosting the simulated clusters run at the "
                  "lowest CPU priority, as processes and as autogroups (`testing/priority.py`), since a real "
                  "cluster's agent runs on machines of its own; runs recorded before 2026-12-03 gave them an equal "
                  "share, which took most of the two cores from the hub side (docs/architecture.md).", ""]
        for s in APPLY:
            lines += time_section(f"`cnet apply` of a {s} Subscription → every Description Success",
                                  apply[s], write_rate[s], {1000: 3, 10000: 20} if s == "Replication" else {})
            bound = [(p.clusters, number(p.record.figures.get("clusters_bound"))) for p in apply[s] if p.record]
            if any(n is not None and n != c for c, n in bound):
                lines += ["Clusters the scheduler bound (a Dividing Subscription over more than 100 clusters is "
                          "bound to an adaptive share of them, as in Clusternet; the time is until those are "
                          "Success): " + ", ".join(f"{fmt(n, 0)} of {cluster_label(c)}" for c, n in bound
                                                   if n is not None) + ".", ""]
        if any(p.value is not None for p in secured):
            lines += time_section("Secured hub: `cnet apply` of the Replication Subscription → every Description "
                                  "Success (bench/fleet.py --rollout, the fleet registered above)",
                                  secured, secured_rate, {})
        lines += time_section("Globalization touching every cluster changed → every Description updated",
                              glob, glob_rate, {})
        updated = [(p.clusters, p.value) for p in glob_n if isinstance(p.value, float)]
        if updated:
            lines += ["Descriptions updated: " + ", ".join(
                f"{fmt(value, 0)} at {cluster_label(n)}" for n, value in updated) + ".", ""]
        lines += self.cpu_section(cpu)
        lines += self.memory_section(memory)
        lines += self.runs_section()
        lines += self.notes_section()
        return "\n".join(lines).rstrip() + "\n"

    def results_rel(self) -> str:
        try:
            return str(self.results.resolve().relative_to(REPO))
        except ValueError:
            return str(self.results)

    def machine_section(self) -> list[str]:
        records = [r for rs in self.outcome.records.values() for r in rs]
        lines = ["## Machine", ""]
        if not records:
            return [*lines, "No bench wrote results.", ""]
        machines = {r.machine.model_dump_json(): r.machine for r in records}
        for m in machines.values():
            lines += [
                f"- CPU: {m.cpu_model}, {m.cores} cores; memory {m.memory_mib / 1024:.1f} GiB",
                f"- {m.platform}; Python {m.python}; {m.nats_server}",
                f"- commit {m.git_commit or 'unknown'}",
            ]
        first = min(r.recorded_at for r in records)
        last = max(r.recorded_at for r in records)
        lines += [f"- runs recorded from {first} to {last} (UTC); the load average of each run is in its table", ""]
        if len(machines) > 1:
            lines += ["The results come from more than one machine or commit (listed above).", ""]
        return lines

    def targets_section(
        self,
        apply: dict[str, list[Point]],
        write_rate: dict[str, list[Point]],
        registration: list[Point],
        cpu: list[Point],
        memory: dict[str, list[Point]],
    ) -> list[str]:
        rows = []

        def seconds(series: Series, points: list[Point], n: int, limit: float, what: str) -> None:
            p = at(points, n)
            value = p.value if p and isinstance(p.value, float) else None
            measured = f"{fmt(value)} s" if value is not None else "not measured" + (f": {p.missing}" if p else "")
            met = verdict(None if value is None else value < limit)
            # The machine is shared: where a size was run more than once on this code, every
            # run is shown, and the target is met only if it was met in each.
            repeats = [v for v, _ in series.repeats(self.outcome, p)] if value is not None else []
            if len(repeats) > 1:
                measured += f" (every run of this code: {', '.join(fmt(v) for v in repeats)} s)"
                met = verdict_over([v < limit for v in repeats])
            rows.append([what, f"< {limit:g} s", measured, met])

        def throughput(series: Series, points: list[Point], what: str, required: bool) -> None:
            rates = [p for p in points if isinstance(p.value, float) and p.record]
            if not rates:
                if required:
                    rows.append([what, "≥ 2,000/s and ≥ 0.15 x raw", "not measured", verdict(None)])
                return
            largest = max(rates, key=lambda p: p.clusters)
            runs = series.repeats(self.outcome, largest) or [(float(largest.value), largest.record)]
            measured = f"{cluster_label(largest.clusters)}: " + ", ".join(
                f"{rate:,.0f}/s = {rate / record.reference_msgs_per_s:.3f} x {ref_of(record)}" for rate, record in runs)
            met = verdict_over([rate >= 2000 and rate / record.reference_msgs_per_s >= 0.15 for rate, record in runs])
            rows.append([what, "≥ 2,000/s and ≥ 0.15 x raw", measured, met])

        seconds(APPLY["Replication"], apply["Replication"], 1000, 3, "1,000 clusters: apply Replication → all Success")
        seconds(APPLY["Replication"], apply["Replication"], 10000, 20,
                "10,000 clusters: apply Replication → all Success")
        # At the largest size measured: at 100 clusters the rate is of a burst of a fraction of a second.
        throughput(WRITE_RATE["Replication"], write_rate["Replication"],
                   "Description throughput, Replication rollout at the largest size measured", required=True)
        throughput(SECURED_RATE, SECURED_RATE.points(self.outcome),
                   "the same, on the secured hub as shipped (bench/fleet.py --rollout)", required=False)
        seconds(REGISTRATION, registration, 10000, 60, "10,000 clusters registered → Ready")
        heartbeat = at(cpu, 10000)
        hb = cpu_at_default(heartbeat) if heartbeat else None
        if hb:
            how = f"derived from heartbeats every {hb.frequency:g} s, at most {hb.services_bound:.1f} %" \
                if hb.derived else "measured"
            rows.append([
                "10,000 clusters: heartbeat CPU, hub side, 3-minute frequency", "< 20 % of one core",
                f"services {hb.services:.1f} % ({how}); nats-server {hb.nats:.1f} %", hb.verdict(20),
            ])
        else:
            rows.append(["10,000 clusters: heartbeat CPU at 3 minutes", "< 20 % of one core",
                         "not measured" + (f": {heartbeat.missing}" if heartbeat else ""), verdict(None)])
        slope = self.memory_fit(memory["rollout"]) or self.memory_fit(memory["fleet"])
        if slope:
            kib, base, source = slope
            rows.append(["Hub-side services memory per managed cluster", "≤ 50 KiB",
                         f"{kib:.1f} KiB/cluster above a {base:.0f} MiB baseline ({source})", verdict(kib <= 50)])
        else:
            rows.append(["Hub-side services memory per cluster", "≤ 50 KiB", "not measured (needs two sizes)",
                         verdict(None)])
        return ["## Targets (issue 15)", "", *table(["target", "limit", "measured", ""], rows), ""]

    def memory_fit(self, points: list[Point]) -> tuple[float, float, str] | None:
        data = [(p.clusters, memory_split(p.value)[0]) for p in points if isinstance(p.value, dict)]
        line = fit([float(n) for n, _ in data], [mib for _, mib in data])
        if line is None:
            return None
        source = f"fit over {', '.join(cluster_label(n) for n, _ in data)} clusters"
        return line[0] * 1024, line[1], source

    def registration_cpu_section(self, registration: list[Point]) -> list[str]:
        """What a registration costs every process, and so the least time the machine's cores need
        for the fleet: the storm is bound by the CPU of all of them (the simulated agents' too), so
        a run's seconds follow its CPU seconds, which follow how fast the shared machine ran then."""
        rows = []
        for p in registration:
            for seconds, record in REGISTRATION.repeats(self.outcome, p):
                per_thousand = mapping(record.figures.get(REGISTRATION_CPU.figure))
                if not per_thousand:
                    continue
                total = sum(per_thousand.values())
                cores = record.machine.cores or 1
                rows.append([
                    cluster_label(p.clusters), fmt(seconds), fmt(total, 1),
                    ", ".join(f"{k} {v:.2f}" for k, v in per_thousand.items()),
                    fmt(total * p.clusters / 1000 / cores, 1), ref_of(record), load_of(record),
                ])
        if not rows:
            return []
        header = ["clusters", "seconds", "CPU s per 1,000 (all)", "CPU s per 1,000 by process",
                  f"all CPU / {self.cores()} cores, s", "raw publish_async msgs/s", "load 1/5/15"]
        return ["#### Registration: CPU seconds per 1,000 clusters, every run of the code measured", "",
                "The registration storm is bound by the CPU of every process on the machine, the simulated "
                "agents' included (they start all at once, at the lowest priority): its seconds follow the CPU "
                "seconds it took, divided by the cores, plus the processes' start. The CPU seconds of one piece "
                "of code vary from run to run as fast as the shared machine ran then.", "",
                *table(header, rows), ""]

    def cores(self) -> str:
        cores = {r.machine.cores for rs in self.outcome.records.values() for r in rs if r.machine.cores}
        return "/".join(str(c) for c in sorted(cores)) or "its"

    def cpu_section(self, cpu: list[Point]) -> list[str]:
        lines = ["### Heartbeat CPU of the hub side", ""]
        rows = []
        notes = set()
        for p in cpu:
            hb = cpu_at_default(p)
            if hb is None or not isinstance(p.value, dict):
                rows.append([cluster_label(p.clusters), f"not measured: {p.missing}", *["—"] * 6])
                continue
            measured = ", ".join(f"{k} {v:.1f}" for k, v in sorted(p.value.items()))
            beats = number(p.record.figures.get("heartbeats_per_s")) if p.record else None
            if hb.derived:
                notes.add(hb.frequency)
            per_beat = f"{hb.services_bound / 100 / beats * 1000:.2f}" if beats else "—"
            rows.append([
                cluster_label(p.clusters), f"{measured} (every {hb.frequency:g} s, {fmt(beats, 1)} heartbeats/s)",
                per_beat, f"{hb.services:.2f}", f"{hb.nats:.2f}", f"{hb.services / p.clusters * 1000:.2f}",
                ref_of(p.record), load_of(p.record),
            ])
        header = ["clusters", "measured % of one core", "services CPU ms per heartbeat", "services % at 3 min",
                  "nats-server % at 3 min", "services % per 1,000 clusters at 3 min", "raw publish_async msgs/s",
                  "load 1/5/15"]
        lines += table(header, rows)
        if notes:
            lines += ["", "Derived: the heartbeats were sent every "
                      + ", ".join(f"{f:g}" for f in sorted(notes))
                      + " s so that one window of that length sees every cluster report once; the 3-minute "
                      "figures are the measured CPU x frequency / 180 s, as if all of the window's CPU were "
                      "heartbeat work. The services' other work does not shrink with the heartbeat rate, so the "
                      "true 3-minute figure lies between the derived one and the measured one (an upper bound: "
                      "it had more heartbeats). Target: services under 20 % of one core at 10,000 clusters; "
                      "nats-server is reported beside them."]
        return [*lines, ""]

    def memory_section(self, memory: dict[str, list[Point]]) -> list[str]:
        lines = ["### Memory (resident set size, MiB)", "",
                 "Read once per run when its figures were taken: the rollout's 11 s after every Description was "
                 "Success, once each service has handed its freed heap pages back (glibc `malloc_trim` every 10 s, "
                 "runtime/heap.py), so it is what the fleet costs held, not the peak of writing it; the fleet's "
                 "after its heartbeat window. A service's peak during a rollout is higher. The slope per cluster is "
                 "what the target is about; the baseline is what the processes take with no cluster (interpreter, "
                 "libraries, connections).", ""]
        for source, points in memory.items():
            if not points:
                continue
            lines += [f"#### {MEMORY_TITLES[source]}", ""]
            rows = []
            for p in points:
                if not isinstance(p.value, dict):
                    rows.append([cluster_label(p.clusters), f"not measured: {p.missing}", "—", "—", "—", "—"])
                    continue
                services, nats = memory_split(p.value)
                detail = ", ".join(f"{k} {v:.0f}" for k, v in sorted(p.value.items()))
                rows.append([cluster_label(p.clusters), detail, f"{services:.0f}", f"{nats:.0f}",
                             f"{services / p.clusters * 1024:.0f}", load_of(p.record)])
            header = ["clusters", "per process", "services", "nats-server", "services KiB per cluster (total)",
                      "load 1/5/15"]
            lines += table(header, rows)
            measured = [p for p in points if isinstance(p.value, dict)]
            lines += [""]
            for name, index in (("hub-side services", 0), ("nats-server", 1)):
                data = [(p.clusters, memory_split(p.value)[index]) for p in measured if isinstance(p.value, dict)]
                line = fit([float(n) for n, _ in data], [v for _, v in data])
                if line:
                    steps = ", ".join(
                        f"{cluster_label(a[0])}→{cluster_label(b[0])}: {(b[1] - a[1]) / (b[0] - a[0]) * 1024:.1f}"
                        for a, b in itertools.pairwise(data)
                    )
                    lines += [f"- {name}: slope {line[0] * 1024:.1f} KiB per cluster (least squares), fixed baseline "
                              f"{line[1]:.0f} MiB; between sizes (KiB/cluster): {steps}"]
                else:
                    lines += [f"- {name}: slope not measured (fewer than two sizes)"]
            lines += [""]
        if not any(memory.values()):
            lines += ["Not measured: no bench reported memory.", ""]
        return lines

    def runs_section(self) -> list[str]:
        rows = []
        latest = {id(run) for run in self.outcome.runs.values()}
        for run in sorted(self.outcome.history, key=lambda r: (r.clusters, r.bench, r.started_at)):
            bench, n = run.bench, run.clusters
            superseded = "" if id(run) in latest else "an earlier attempt, run again later"
            scripts = sorted({
                part[part.index("bench/"):] for cmd in run.others_running for part in cmd.split()
                if "bench/" in part and part.endswith(".py")
            })
            others = f"other benches running beside it: {', '.join(scripts)}" if scripts else ""
            rows.append([
                bench, cluster_label(n), run.status, f"{run.elapsed_s:.0f}" if run.elapsed_s else "—",
                " ".join(f"{x:.2f}" for x in run.load_before),
                "; ".join(x for x in (superseded, run.reason, others) if x),
            ])
        return ["## Runs", "", "Every run, in order; where a size was run again, the figures are from the last "
                "attempt and the earlier one stays listed. A target (a time, the Description rate) lists every "
                "finished run of its size that measured the code of that attempt (libs/, services/, bench/ but this "
                "report's renderer, and pyproject.toml as at its commit: commits that changed only the docs ran the "
                "same code), and counts as met only if each run met it.", "",
                *table(["bench", "clusters", "status", "seconds", "load before", "notes"], rows), ""]

    def notes_section(self) -> list[str]:
        notes = []
        for (bench, n), records in sorted(self.outcome.records.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            for record in records:
                for figure, note in record.notes.items():
                    notes.append(f"- {bench} at {cluster_label(n)}: `{figure}`: {note}")
        return ["## Notes from the benches", "", *dict.fromkeys(notes), ""] if notes else []


# ---------------------------------------------------------------------------------------------
# Plots


def plots(outcome: Outcome, docs: Path) -> list[Path]:
    """docs/scale-time.png, scale-throughput.png, scale-cpu.png, scale-memory.png: each figure
    against the cluster count (log x), the targets as dashed lines, missing sizes named in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    sizes = sorted({*outcome.sizes, *DEFAULT_CLUSTERS})  # the targets sit at 1,000 and 10,000
    written = []

    def figure(name: str, ylabel: str, draw: Callable[[Axes], None], log_y: bool = False, title: str = "") -> None:
        fig, ax = plt.subplots(figsize=(8, 5))
        draw(ax)
        ax.set_title(title, fontsize="medium")
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
        ax.set_xlabel("managed clusters")
        ax.set_ylabel(ylabel)
        ax.set_xticks(sizes, [cluster_label(n) for n in sizes])
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = docs / f"scale-{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    def value_of(p: Point) -> float | None:
        return p.value if isinstance(p.value, float) else None

    def line(
        ax: Axes, points: list[Point], label: str, value: Callable[[Point], float | None] = value_of,
        **style: Any,
    ) -> None:
        data = [(p.clusters, v) for p in points if (v := value(p)) is not None]
        missing = [cluster_label(p.clusters) for p in points if value(p) is None]
        if missing:
            label += f" (not measured at {', '.join(missing)})"
        ax.plot([d[0] for d in data], [d[1] for d in data], marker="o", label=label, **style)

    def target(ax: Axes, y: float, label: str, color: str, at_clusters: int | None = None) -> None:
        ax.axhline(y, linestyle="--", color=color, linewidth=1, label=label)
        if at_clusters:
            ax.plot([at_clusters], [y], marker="*", markersize=12, color=color)

    def time_plot(ax: Axes) -> None:
        line(ax, REGISTRATION.points(outcome), "registration → Ready")
        for s in APPLY:
            line(ax, APPLY[s].points(outcome), f"apply {s} → all Success")
        line(ax, GLOBALIZATION.points(outcome), "Globalization change → all updated")
        target(ax, 3, "target: apply, 1,000 clusters < 3 s", "black", 1000)
        target(ax, 20, "target: apply, 10,000 clusters < 20 s", "dimgrey", 10000)
        target(ax, 60, "target: registration, 10,000 clusters < 60 s", "darkred", 10000)

    def throughput_plot(ax: Axes) -> None:
        for s in WRITE_RATE:
            line(ax, WRITE_RATE[s].points(outcome), f"Descriptions/s, {s} rollout")
        line(ax, GLOBAL_RATE.points(outcome), "Descriptions/s, Globalization update")
        line(ax, [p for p in WRITE_RATE["Replication"].points(outcome) if p.record],
             "target: 0.15 x raw publish_async of the run",
             lambda p: 0.15 * p.record.reference_msgs_per_s if p.record else None, linestyle=":", color="grey")
        target(ax, 2000, "target: 2,000 Descriptions/s", "darkred")

    def cpu_plot(ax: Axes) -> None:
        points = HEARTBEAT_CPU.points(outcome, mapping)
        line(ax, points, "services (hub, scheduler, deployer, predictor)",
             lambda p: (hb.services if (hb := cpu_at_default(p)) else None))
        line(ax, points, "nats-server", lambda p: (hb.nats if (hb := cpu_at_default(p)) else None))
        derived = [p for p in points if (hb := cpu_at_default(p)) and hb.derived]
        if derived:
            line(ax, derived, "services, upper bound (as measured, more frequent heartbeats)",
                 lambda p: (hb.services_bound if (hb := cpu_at_default(p)) else None), linestyle=":")
        target(ax, 20, "target: services < 20 % at 10,000 clusters", "darkred", 10000)

    source = "rollout"
    points = MEMORY[source].points(outcome, mapping)
    if not any(isinstance(p.value, dict) for p in points):
        source = "fleet"
        points = MEMORY[source].points(outcome, mapping)

    def memory_plot(ax: Axes) -> None:
        def service(name: str) -> Callable[[Point], float | None]:
            """A service's MiB, its replicas added up."""
            return lambda p: (
                sum(v for k, v in p.value.items() if k.split("-")[0] == name) or None
                if isinstance(p.value, dict) else None
            )

        for name in HUB_SERVICES:
            line(ax, points, name, service(name), linewidth=0.8)
        line(ax, points, "hub-side services, total",
             lambda p: (memory_split(p.value)[0] if isinstance(p.value, dict) else None), linewidth=2)
        line(ax, points, "nats-server", lambda p: (memory_split(p.value)[1] if isinstance(p.value, dict) else None))
        data = [(p.clusters, memory_split(p.value)[0]) for p in points if isinstance(p.value, dict)]
        fitted = fit([float(n) for n, _ in data], [v for _, v in data])
        if fitted:
            low, high = math.log10(sizes[0]), math.log10(sizes[-1])
            xs = [10 ** (low + i * (high - low) / 50) for i in range(51)]
            ax.plot(xs, [fitted[1] + 50 / 1024 * x for x in xs], linestyle="--", color="darkred",
                    label=f"target: services' {fitted[1]:.0f} MiB baseline + 50 KiB per cluster")

    figure("time", "seconds", time_plot, log_y=True, title="Registration, rollout and update times")
    figure("throughput", "Descriptions per second", throughput_plot, log_y=True,
           title="Descriptions written per second, beside the raw bus rate")
    figure("cpu", "% of one core", cpu_plot, title="Heartbeat CPU of the hub side at the 3-minute status frequency")
    figure("memory", "resident MiB", memory_plot, title=f"Memory {MEMORY_TITLES[source]}")
    return written


def render(results: Path, docs: Path) -> Path:
    """docs/scale.md and its plots from what `results` holds."""
    outcome = load(results)
    docs.mkdir(parents=True, exist_ok=True)
    sizes = ",".join(str(n) for n in outcome.sizes or DEFAULT_CLUSTERS)
    command = f".venv/bin/python bench/scale.py --clusters {sizes}"
    text = Report(outcome, results, command).markdown()
    images = plots(outcome, docs)
    text += "\n## Plots\n\n" + "\n".join(f"![{p.stem}]({p.name})" for p in images) + "\n"
    target = docs / "scale.md"
    target.write_text(text, encoding="utf-8")
    return target


def sizes_arg(value: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--clusters: {value!r} is not a comma-separated list of numbers") from exc
    if not sizes or any(n <= 0 for n in sizes):
        raise argparse.ArgumentTypeError(f"--clusters: {value!r} needs positive cluster counts")
    return list(dict.fromkeys(sizes))  # in the order given: the most wanted size first if time is short


RENDER_MARGIN_S = 60.0
MIN_RUN_S = 60.0


def deadline_arg(value: str) -> datetime.datetime:
    """Today's (or, if past, tomorrow's) HH:MM in UTC."""
    try:
        hour, minute = (int(x) for x in value.split(":"))
        clock = datetime.time(hour, minute, tzinfo=datetime.UTC)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--deadline: {value!r} is not HH:MM (UTC)") from exc
    today = datetime.datetime.now(datetime.UTC)
    at = datetime.datetime.combine(today.date(), clock)
    return at if at > today else at + datetime.timedelta(days=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=sizes_arg, default=list(DEFAULT_CLUSTERS),
                        help="e.g. 100,1000,5000,10000, run in this order")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="raw JSON results and logs")
    parser.add_argument("--docs", type=Path, default=DOCS, help="where scale.md and scale-*.png go")
    parser.add_argument("--report-only", action="store_true", help="render from the saved results, run nothing")
    parser.add_argument("--benches", default=",".join(b.name for b in BENCHES), help="which benches to run")
    parser.add_argument("--timeout-base", type=float, default=180.0, help="seconds each run gets, plus ...")
    parser.add_argument("--timeout-per-cluster", type=float, default=0.06, help="... seconds per cluster")
    parser.add_argument("--deadline", type=deadline_arg, help="HH:MM UTC: no run goes past it (the report still "
                        "gets written); runs cut short or not started say so")
    args = parser.parse_args()

    args.results.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        # Bytecode written once: with PYTHONDONTWRITEBYTECODE set (as some CI images do), every
        # process started, `cnet apply` among them, would compile its modules again inside a figure.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "libs"), str(REPO / "services")],
                       check=False)
        chosen = [b for b in BENCHES if b.name in args.benches.split(",")]
        unknown = set(args.benches.split(",")) - {b.name for b in BENCHES}
        if unknown:
            parser.error(f"--benches: unknown {sorted(unknown)}; known: {[b.name for b in BENCHES]}")
        for n in args.clusters:
            for bench in chosen:
                timeout = args.timeout_base + bench.fixed_s + args.timeout_per_cluster * n
                cut = ""
                if args.deadline:
                    left = (args.deadline - datetime.datetime.now(datetime.UTC)).total_seconds() - RENDER_MARGIN_S
                    why = f"the deadline {args.deadline:%H:%M} UTC"
                    if left < MIN_RUN_S:
                        run = Run(bench.name, n, "not run", started_at=now(), reason=f"no time left before {why}")
                        record_run(args.results, run)
                        continue
                    if left < timeout:
                        timeout, cut = left, f", cut short by {why}"
                record_run(args.results, run_one(bench, n, args.results, timeout, cut))
    path = render(args.results, args.docs)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
