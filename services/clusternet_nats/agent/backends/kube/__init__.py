"""The Kubernetes backend: the agent applying to, and reporting on, a real child cluster."""

from clusternet_nats.agent.backends.kube.cluster import KubeCluster

__all__ = ["KubeCluster"]
