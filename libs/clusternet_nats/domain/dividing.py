"""How Clusternet divides a feed's replicas over clusters, as pure arithmetic.

Static dividing splits by subscriber weights; dynamic dividing (`strategy: Spread`) splits the
*deviation* (desired minus what is already placed) over what each cluster can still take, and
merges it into the existing placement, so replicas already running stay where they are.
Go's integer division truncates toward zero and dynamic scale-down divides a negative
deviation, so `_go_div` reproduces it; Python's `//` would floor and give other numbers.

Beyond Clusternet (its API declares these, its scheduler never implemented them): `Binpack`
(fewest clusters, best fit), `minClusters`/`maxClusters`, `preferredClusters` (fill the most
preferred group first) and topology spread across cluster labels; see `plan_scale_up`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

FeedReplicas = list[int | None]
"""Per feed of a FeedInventory (in `finv.spec.feeds` order), the replicas a cluster can still
accept; None means no limit is known."""

MIN_FEASIBLE_CLUSTERS_TO_FIND = 100
MIN_FEASIBLE_CLUSTERS_PERCENTAGE_TO_FIND = 5


@dataclass
class TargetClusters:
    """Clusternet's TargetClusters: the clusters bound and, per feed key, replicas in that order.

    A feed key mapped to [] is a feed that is not divided (not a workload with replicas)."""

    binding_clusters: list[str] = field(default_factory=list)
    replicas: dict[str, list[int]] = field(default_factory=dict)

    def copy(self) -> TargetClusters:
        return TargetClusters(list(self.binding_clusters), {k: list(v) for k, v in self.replicas.items()})

    def placed(self, feed: str) -> dict[str, int]:
        """The feed's replicas per cluster (clusters with none included); {} when not divided."""
        replicas = self.replicas.get(feed) or []
        if len(replicas) != len(self.binding_clusters):
            return {}
        return dict(zip(self.binding_clusters, replicas, strict=True))


def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def static_divide(replicas: int, weights: Sequence[int]) -> list[int]:
    """Clusternet's staticDivideReplicas: floors of the weighted shares, then one each of the
    leftovers to the clusters of highest weight (ties to the earlier cluster). A negative count
    (refused at admission, but one stored before that rule) divides as none, never as negative shares."""
    replicas = max(replicas, 0)
    total = sum(weights)
    shares = [weight * replicas // total for weight in weights]
    remain = replicas - sum(shares)
    by_weight = sorted(range(len(weights)), key=lambda i: -weights[i])
    for i in by_weight[:remain]:
        shares[i] += 1
    return shares


def dynamic_divide(desired: int, available: Sequence[int]) -> list[int]:
    """Clusternet's dynamicDivideReplicas: `desired` (negative when scaling down) in proportion
    to `available`, truncated, then the remainder one each by descending fractional part (ties
    to the earlier cluster). When more is desired than is available, everything available."""
    total = sum(available)
    if total == 0 or desired > total:
        return list(available)
    shares = [_go_div(weight * desired, total) for weight in available]
    remain = desired - sum(shares)
    fractions = [abs(weight * desired / total - share) for weight, share in zip(available, shares, strict=True)]
    order = sorted(range(len(available)), key=lambda i: -fractions[i])
    step = 1 if remain > 0 else -1
    for i in order[: abs(remain)]:
        shares[i] += step
    return shares


def merge_feed(target: TargetClusters, feed: str, clusters: Sequence[str], replicas: Sequence[int] | None) -> None:
    """Clusternet's MergeOneFeed: add one feed's per-cluster deviation to a placement, appending
    clusters the placement lacks (other divided feeds get 0 there). `replicas` None: not divided."""
    if not clusters:
        return
    if replicas is None:
        target.replicas.setdefault(feed, [])
        return
    current = target.replicas.get(feed)
    if current is None or len(current) != len(target.binding_clusters):
        target.replicas[feed] = [0] * len(target.binding_clusters)
    index = {cluster: i for i, cluster in enumerate(target.binding_clusters)}
    for cluster, count in zip(clusters, replicas, strict=True):
        if cluster in index:
            target.replicas[feed][index[cluster]] += count
            continue
        index[cluster] = len(target.binding_clusters)
        target.binding_clusters.append(cluster)
        for other, values in target.replicas.items():
            if other != feed and values:
                values.append(0)
        target.replicas[feed].append(count)


def num_feasible_clusters_to_find(num_all: int, percentage: int = 0) -> int:
    """Clusternet's numFeasibleClustersToFind for dividing: all clusters up to 100, else an
    adaptive share (50% minus 1% per 125 clusters, at least 5%) but never fewer than 100."""
    if num_all < MIN_FEASIBLE_CLUSTERS_TO_FIND or percentage >= 100:
        return num_all
    adaptive = percentage
    if adaptive <= 0:
        adaptive = max(50 - num_all // 125, MIN_FEASIBLE_CLUSTERS_PERCENTAGE_TO_FIND)
    return max(num_all * adaptive // 100, MIN_FEASIBLE_CLUSTERS_TO_FIND)


def merge_feed_replicas(a: FeedReplicas, b: FeedReplicas) -> FeedReplicas:
    """Two predictors' answers for one cluster: the smaller per feed. None is "no limit known",
    so it yields to a number (Clusternet's nil is "unknown" and wins; see the docs)."""
    if len(a) < len(b):
        a, b = b, a
    merged: FeedReplicas = []
    for i, x in enumerate(a):
        y = b[i] if i < len(b) else None
        merged.append(x if y is None else y if x is None else min(x, y))
    return merged


def normalize_scores(scores: Mapping[str, int], max_score: int, reverse: bool) -> dict[str, int]:
    """Clusternet's DefaultNormalizeScore: scale to 0..max_score by the highest; `reverse` flips."""
    most = max(scores.values(), default=0)
    if most == 0:
        return {k: max_score if reverse else v for k, v in scores.items()}
    scaled = {k: max_score * v // most for k, v in scores.items()}
    return {k: max_score - v for k, v in scaled.items()} if reverse else scaled


# ---------------------------------------------------------------------------------------------
# Dynamic dividing of one feed's deviation, with the rules Clusternet declares but never built


@dataclass(frozen=True)
class SpreadConstraint:
    """A topologySpreadConstraint over clusters: each cluster's domain is its value of the
    topology key (None: the cluster lacks the key)."""

    max_skew: int
    domains: Mapping[str, str | None]
    hard: bool
    """DoNotSchedule; ScheduleAnyway only prefers the least loaded domain."""
    min_domains: int | None = None
    """With fewer eligible domains than this, the least loaded counts as 0 (Kubernetes' minDomains)."""


@dataclass(frozen=True)
class DividingRules:
    binpack: bool = False
    min_clusters: int | None = None
    max_clusters: int | None = None
    preference: Mapping[str, int] = field(default_factory=dict)
    """Per cluster, the summed weights of the preferredClusters terms it matches."""
    spread: Sequence[SpreadConstraint] = ()

    @property
    def clusternet_spread(self) -> bool:
        """Nothing beyond what Clusternet implements: its exact arithmetic applies."""
        return not (self.binpack or self.min_clusters or self.max_clusters or self.preference or self.spread)


@dataclass
class FeedPlan:
    """Replicas to add (or, negative, remove) per cluster, and what could not be placed."""

    clusters: list[str]
    deltas: list[int]
    unscheduled: int = 0
    reason: str | None = None


def plan_scale_down(deviation: int, held: Mapping[str, int], binpack: bool) -> FeedPlan:
    """Remove -deviation replicas: Spread in proportion to what each cluster holds (Clusternet's
    spreadScaleDown); Binpack from the clusters holding fewest first, so clusters empty out."""
    clusters = list(held)
    if not binpack:
        return FeedPlan(clusters, dynamic_divide(deviation, [held[c] for c in clusters]))
    remove = -deviation
    deltas = dict.fromkeys(clusters, 0)
    order = sorted(range(len(clusters)), key=lambda i: (held[clusters[i]], -i))
    for i in order:
        take = min(remove, held[clusters[i]])
        deltas[clusters[i]] -= take
        remove -= take
    return FeedPlan(clusters, [deltas[c] for c in clusters])


def plan_scale_up(
    deviation: int, held: Mapping[str, int], available: Mapping[str, int | None], rules: DividingRules
) -> FeedPlan:
    """Place `deviation` more replicas over `available` (cluster -> what it can still take, in
    priority order; None: no known limit), given what each cluster already `held`."""
    clusters = list(available)
    caps = {c: deviation if available[c] is None else max(available[c] or 0, 0) for c in clusters}
    if rules.clusternet_spread:
        divided = dynamic_divide(deviation, [caps[c] for c in clusters])
        return FeedPlan(clusters, divided, max(deviation - sum(divided), 0))
    deltas = dict.fromkeys(clusters, 0)
    holders = [c for c, n in held.items() if n > 0]
    rank = {c: i for i, c in enumerate(clusters)}
    newcomers = sorted(
        (c for c in clusters if c not in holders and caps[c] > 0),
        key=lambda c: (-rules.preference.get(c, 0), rank[c]),
    )
    if rules.max_clusters:
        newcomers = newcomers[: max(rules.max_clusters - len(holders), 0)]
    allowed = [c for c in clusters if c in holders or c in newcomers]
    remaining = deviation
    if rules.min_clusters and len(holders) < rules.min_clusters:
        need = rules.min_clusters - len(holders)
        if len(newcomers) < need or remaining < need:
            can = len(holders) + len(newcomers)
            short = f"only {can} cluster(s) can take replicas" if len(newcomers) < need else f"{deviation} to place"
            reason = f"minClusters is {rules.min_clusters} but {short}"
            return FeedPlan(clusters, [0] * len(clusters), deviation, reason)
        for c in newcomers[:need]:
            deltas[c] += 1
            caps[c] -= 1
        remaining -= need
    if rules.spread:
        remaining = _place_by_topology(remaining, allowed, caps, held, deltas, rules)
    else:
        for weight in sorted({rules.preference.get(c, 0) for c in allowed}, reverse=True):
            group = [c for c in allowed if rules.preference.get(c, 0) == weight]
            take = min(remaining, sum(caps[c] for c in group))
            if rules.binpack:
                _binpack_fill(take, group, caps, held, deltas)
            else:
                for c, n in zip(group, dynamic_divide(take, [caps[c] for c in group]), strict=True):
                    deltas[c] += n
            remaining -= take
    return FeedPlan(clusters, [deltas[c] for c in clusters], remaining)


def _binpack_fill(
    count: int, group: Sequence[str], caps: dict[str, int], held: Mapping[str, int], deltas: dict[str, int]
) -> None:
    """Fill clusters already holding replicas (most first), then the fewest new ones: the
    smallest that takes all that is left (best fit), else the largest, and again."""
    for c in sorted((c for c in group if held.get(c, 0) + deltas[c] > 0), key=lambda c: -(held.get(c, 0) + deltas[c])):
        take = min(count, caps[c])
        deltas[c] += take
        caps[c] -= take
        count -= take
    fresh = [c for c in group if held.get(c, 0) + deltas[c] == 0 and caps[c] > 0]
    while count > 0 and fresh:
        fits = [c for c in fresh if caps[c] >= count]
        pick = min(fits, key=lambda c: caps[c]) if fits else max(fresh, key=lambda c: caps[c])
        take = min(count, caps[pick])
        deltas[pick] += take
        caps[pick] -= take
        count -= take
        fresh.remove(pick)


def _place_by_topology(
    count: int,
    allowed: Sequence[str],
    caps: dict[str, int],
    held: Mapping[str, int],
    deltas: dict[str, int],
    rules: DividingRules,
) -> int:
    """One replica at a time to the best cluster that keeps every DoNotSchedule constraint's skew
    (replicas in the domain after placing, minus the least loaded eligible domain) within
    maxSkew; ScheduleAnyway constraints and the preference only order the choice. Returns what
    could not be placed."""
    counts: list[dict[str, int]] = []
    for con in rules.spread:
        per_domain = dict.fromkeys((d for d in con.domains.values() if d is not None), 0)
        for c, n in held.items():
            domain = con.domains.get(c)
            if domain is not None:
                per_domain[domain] += n
        for c, n in deltas.items():
            domain = con.domains.get(c)
            if domain is not None:
                per_domain[domain] += n
        counts.append(per_domain)
    order = {c: i for i, c in enumerate(allowed)}
    while count > 0:
        floors = [
            0 if con.min_domains and len(per_domain) < con.min_domains else min(per_domain.values(), default=0)
            for con, per_domain in zip(rules.spread, counts, strict=True)
        ]
        best: tuple[object, ...] | None = None
        pick = None
        for c in allowed:
            if caps[c] <= 0:
                continue
            penalty = 0
            fits = True
            for con, per_domain, floor in zip(rules.spread, counts, floors, strict=True):
                domain = con.domains.get(c)
                if domain is None:
                    fits = not con.hard
                    if not fits:
                        break
                    continue
                skew = per_domain[domain] + 1 - floor
                if con.hard and skew > con.max_skew:
                    fits = False
                    break
                penalty += skew
            if not fits:
                continue
            placed = held.get(c, 0) + deltas[c]
            fill = (0 if placed > 0 else 1, caps[c]) if rules.binpack else (placed, -caps[c])
            key = (-rules.preference.get(c, 0), penalty, fill, order[c])
            if best is None or key < best:
                best, pick = key, c
        if pick is None:
            break
        deltas[pick] += 1
        caps[pick] -= 1
        count -= 1
        for con, per_domain in zip(rules.spread, counts, strict=True):
            domain = con.domains.get(pick)
            if domain is not None:
                per_domain[domain] += 1
    return count
