"""The hub's intake: where registered clusters' writes arrive, are checked, and are stored.

Clusters publish into no stream (api/intake.py says why). Each write is a request on
`clusternet.intake.<namespace>.<verb>`; NATS permissions prove the namespace, and the intake
checks the rest before it writes with the hub's own credentials: the reply subject is the
cluster's own inbox (a message the server delivered there on someone else's behalf carries no
such reply), the key is the cluster's and of a kind it may write (admission.py), the body is a
valid record of bounded size, and the cluster stays within its rate (ratelimit.py).
"""

from clusternet_nats.hub.intake.service import Intake

__all__ = ["Intake"]
