"""Answers ClusterRegistrationRequests: records the request, approves it, creates the cluster.

The callout has already checked the bootstrap token (only its holder can publish here), so a
request is approved unless another agent holds the cluster id: the credential is created with a
compare-and-set, and a second claimant with a different secret is denied. A repeated request with
the same secret (an agent retrying after a lost reply) gets the same answer again.

A cluster it creates gets its first status too, written just before it, holding the ClusterInit
condition the hub's controller would write first (hub/clusterinit), and the answer carries both
with their revisions: the agent's first heartbeat builds on them. Were the controller to write the condition after
the registration, every new cluster's first report, created unread, would be refused once: in a
registration storm, one more request to the hub's intake per cluster.
"""

from __future__ import annotations

import contextlib

import structlog
from clusternet_nats.api import labels as known
from clusternet_nats.api.clusters import (
    ClusterRegistrationRequest,
    ClusterRegistrationRequestSpec,
    ClusterRegistrationRequestStatus,
    ManagedCluster,
    ManagedClusterSpec,
    ManagedClusterStatus,
)
from clusternet_nats.api.registration import (
    APPROVED,
    DENIED,
    PENDING,
    RegistrationReply,
    RegistrationRequest,
    registering_inbox_prefix,
)
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.subjects import REGISTRATION
from clusternet_nats.domain import clusterinit as init
from clusternet_nats.domain.names import dedicated_namespace, registration_request_name
from clusternet_nats.hub.registration.records import ClusterCredential, credential_store
from clusternet_nats.runtime.metrics import REGISTRATIONS
from clusternet_nats.runtime.responder import Failure, Responder, Unanswerable
from clusternet_nats.store import AlreadyExistsError, ObjectStore, StatusStore, Versioned
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from pydantic import ValidationError

QUEUE = "clusternet-registrar"
log = structlog.get_logger(__name__)


def placement(spec: ClusterRegistrationRequestSpec) -> tuple[str, str]:
    """The dedicated namespace and ManagedCluster name a request gets."""
    return dedicated_namespace(spec.cluster_id), spec.cluster_name or spec.cluster_id


def _encode(reply: RegistrationReply) -> bytes:
    return reply.model_dump_json(by_alias=True, exclude_none=True).encode()


def approved(namespace: str, name: str) -> ClusterRegistrationRequestStatus:
    return ClusterRegistrationRequestStatus(result=APPROVED, dedicated_namespace=namespace, managed_cluster_name=name)


class Registrar:
    def __init__(
        self,
        nc: NATS,
        js: JetStreamContext,
        manual_approval: bool = False,
        concurrency: int = 64,
        cluster_init: bool = False,
    ) -> None:
        # A registration storm is answered concurrently; the compare-and-set on the cluster id
        # keeps two requests for one id apart.
        subject = REGISTRATION.filter()
        self.responder = Responder(nc, subject, self, name="the hub's registrar", queue=QUEUE, concurrency=concurrency)
        self.manual_approval = manual_approval
        self.cluster_init = cluster_init
        """The ClusterInit gate: a new cluster is tainted until its init Base succeeds (hub/clusterinit)."""
        self.credentials = credential_store(js)
        info = by_kind("ClusterRegistrationRequest")
        self.requests: ObjectStore[ClusterRegistrationRequest] = ObjectStore(js, info)
        self.request_status = StatusStore(js, info.status_bucket or "", ClusterRegistrationRequestStatus)
        cluster_info = by_kind(ManagedCluster.KIND)
        self.clusters: ObjectStore[ManagedCluster] = ObjectStore(js, cluster_info)
        self.cluster_statuses = StatusStore(js, cluster_info.status_bucket or "", ManagedClusterStatus)

    async def start(self) -> None:
        await self.responder.start()

    def accept(self, msg: Msg) -> tuple[str, bytes]:
        """(cluster id, body) of a request asked by a holder of this id's registration prefix."""
        cluster_id = msg.subject.rsplit(".", 1)[-1]
        if not msg.reply.startswith(registering_inbox_prefix(cluster_id) + "."):
            # The server delivering someone else's message here (NATS does not check reply
            # subjects): answering would write into whatever the reply names.
            raise Unanswerable(f"the reply is not under cluster {cluster_id}'s registering prefix")
        return cluster_id, msg.data

    async def answer(self, request: tuple[str, bytes]) -> bytes:
        cluster_id, data = request
        try:
            wire = RegistrationRequest.model_validate_json(data)
            if wire.request.spec.cluster_id != cluster_id:
                raise ValueError(f"spec.clusterId {wire.request.spec.cluster_id!r} is not {cluster_id!r}")
            reply = await self.register(wire)
        except (ValidationError, ValueError) as err:
            reply = RegistrationReply(result=DENIED, error_message=f"invalid ClusterRegistrationRequest: {err}")
        log.info("registration.answered", cluster_id=cluster_id, result=reply.result, error=reply.error_message)
        REGISTRATIONS.labels(str(reply.result)).inc()
        return _encode(reply)

    def failed(self, request: tuple[str, bytes], failure: Failure) -> bytes:
        """Pending, so the agent asks again: the request may be recorded once the store is back."""
        REGISTRATIONS.labels("failed").inc()
        return _encode(RegistrationReply(result=PENDING, error_message=failure.reason))

    async def register(self, wire: RegistrationRequest) -> RegistrationReply:
        spec = wire.request.spec
        namespace, name = placement(spec)
        claim = ClusterCredential(
            cluster_id=spec.cluster_id, namespace=namespace, name=name, secret_hash=wire.credential_hash
        )
        try:
            revision = await self.credentials.put(spec.cluster_id, claim, 0)
        except AlreadyExistsError:
            held = await self.credentials.get(spec.cluster_id)
            if held is None or held.value.secret_hash != wire.credential_hash:
                return RegistrationReply(
                    result=DENIED, error_message=f"cluster id {spec.cluster_id} is already registered by another agent"
                )
            claim, revision = held.value, held.revision
        status = await self._record_request(wire.request, claim)
        if status.result == DENIED:
            return RegistrationReply(result=DENIED, error_message=status.error_message or "denied by an administrator")
        if status.result != APPROVED:
            return RegistrationReply(result=PENDING)
        cluster = self._new_cluster(wire.request, claim)
        # The status first: the hub's ClusterInit controller, seeing the cluster, finds its
        # condition there (after it, a quarter of the controller's creates were refused by it).
        first = await self._first_status(cluster)
        created = await self._ensure_cluster(cluster)
        if not claim.approved:
            await self.credentials.put(spec.cluster_id, claim.model_copy(update={"approved": True}), revision)
        return RegistrationReply(
            result=APPROVED,
            dedicated_namespace=claim.namespace,
            managed_cluster_name=claim.name,
            managed_cluster=created,
            managed_cluster_status=first.value if first else None,
            managed_cluster_status_revision=first.revision if first else None,
        )

    async def _record_request(
        self, request: ClusterRegistrationRequest, claim: ClusterCredential
    ) -> ClusterRegistrationRequestStatus:
        """Creates the request (Approved, or Pending under --manual-approval); its current status."""
        name = registration_request_name(claim.cluster_id)
        key = self.requests.key(None, name)
        status = ClusterRegistrationRequestStatus(result=PENDING)
        if not self.manual_approval:
            status = approved(claim.namespace, claim.name)
        with contextlib.suppress(AlreadyExistsError):
            await self.requests.create(
                ClusterRegistrationRequest.new(registration_request_name(claim.cluster_id), spec=request.spec)
            )
        try:
            await self.request_status.put(key, status, 0)
            return status  # a new request: its status is the one just written, no read needed
        except AlreadyExistsError:
            current = await self.request_status.get(key)  # asked before: approved, denied or pending
        return current.value if current else status

    def _new_cluster(self, request: ClusterRegistrationRequest, claim: ClusterCredential) -> ManagedCluster:
        spec = request.spec
        cluster = ManagedCluster.new(
            claim.name,
            claim.namespace,
            spec=ManagedClusterSpec(
                cluster_id=spec.cluster_id,
                sync_mode=spec.sync_mode,
                cluster_type=spec.cluster_type,
                taints=[init.waiting_taint()] if self.cluster_init else None,
            ),
        )
        cluster.metadata.labels = {
            **(spec.cluster_labels or {}),
            known.CLUSTER_ID: spec.cluster_id,
            known.CLUSTER_NAME: claim.name,
        }
        return cluster

    async def _ensure_cluster(self, cluster: ManagedCluster) -> ManagedCluster | None:
        """Creates the ManagedCluster unless it exists (one compare-and-set, no read first: in a
        registration storm nearly every cluster is new); the one created, if it was."""
        try:
            return await self.clusters.create(cluster)
        except AlreadyExistsError:
            return None

    async def _first_status(self, cluster: ManagedCluster) -> Versioned[ManagedClusterStatus] | None:
        """Creates the cluster's status with its ClusterInit condition, as the controller
        computes it for a cluster with no init Base chosen yet; None if a status exists."""
        condition = init.init_condition(self.cluster_init, cluster, init.Progress(None))
        status = ManagedClusterStatus(conditions=[condition])
        try:
            revision = await self.cluster_statuses.put(self.clusters.key(cluster.namespace, cluster.name), status, 0)
        except AlreadyExistsError:
            return None
        return Versioned(status, revision)
