"""The cluster's service and pod CIDRs, found as Clusternet's status controller finds them
(pkg/controllers/clusters/clusterstatus/network.go): in the command lines of the control plane's
pods, else in the agent's environment.

* serviceCIDR: `--service-cluster-ip-range` of a pod labelled `component` or
  `app.kubernetes.io/component` = `kube-apiserver`, then `kube-controller-manager`; else the
  agent's `SERVICE_CIDR`.
* clusterCIDR: `--cluster-cidr` of such a `kube-controller-manager` pod, then of a pod labelled
  `k8s-app=kube-proxy`; else the agent's `CLUSTER_CIDR`.

A container's command is read before its args, and a word of a shell line (`/bin/sh -c "exec
kube-apiserver --service-cluster-ip-range=..."`) counts as an argument, as in Clusternet. Beyond
it: the flag's value may also be the next argument (`--cluster-cidr 10.244.0.0/16`, which pflag
accepts and Clusternet's parser cannot read), and a flag is matched whole, not by prefix. Neither
found: None, and the status leaves the field out, as Clusternet's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SERVICE_CIDR_FLAG = "--service-cluster-ip-range"
CLUSTER_CIDR_FLAG = "--cluster-cidr"
SERVICE_CIDR_ENV = "SERVICE_CIDR"
CLUSTER_CIDR_ENV = "CLUSTER_CIDR"

_COMPONENT_KEYS = ("component", "app.kubernetes.io/component")
_KUBE_PROXY = {"k8s-app": "kube-proxy"}


def parameter_value(args: Sequence[str], parameter: str) -> str:
    """The value of `parameter` (`--flag=value` or `--flag value`) in a command line, "" if absent."""
    words = [word for arg in args for word in (arg.split() if " " in arg else [arg])]
    for i, word in enumerate(words):
        if word.startswith(parameter + "="):
            return word[len(parameter) + 1 :]
        if word == parameter and i + 1 < len(words) and not words[i + 1].startswith("-"):
            return words[i + 1]
    return ""


def _selected(pod: Mapping[str, Any], selector: Mapping[str, str]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


def command_parameter(pods: Iterable[Mapping[str, Any]], selector: Mapping[str, str], parameter: str) -> str:
    """The first non-empty value of `parameter` in the command, then the args, of the containers of
    the pods `selector` (label equality) picks; "" when none has it."""
    for pod in pods:
        if not _selected(pod, selector):
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            for part in ("command", "args"):
                value = parameter_value([str(a) for a in container.get(part) or []], parameter)
                if value:
                    return value
    return ""


def _from_components(pods: Sequence[Mapping[str, Any]], components: Sequence[str], parameter: str) -> str:
    for component in components:
        for key in _COMPONENT_KEYS:
            value = command_parameter(pods, {key: component}, parameter)
            if value:
                return value
    return ""


def find_service_cidr(pods: Sequence[Mapping[str, Any]], env: Mapping[str, str]) -> str | None:
    """The service CIDR: kube-apiserver's, then kube-controller-manager's, then `SERVICE_CIDR`."""
    found = _from_components(pods, ("kube-apiserver", "kube-controller-manager"), SERVICE_CIDR_FLAG)
    return found or env.get(SERVICE_CIDR_ENV) or None


def find_cluster_cidr(pods: Sequence[Mapping[str, Any]], env: Mapping[str, str]) -> str | None:
    """The pod CIDR: kube-controller-manager's, then kube-proxy's, then `CLUSTER_CIDR`."""
    found = _from_components(pods, ("kube-controller-manager",), CLUSTER_CIDR_FLAG)
    found = found or command_parameter(pods, _KUBE_PROXY, CLUSTER_CIDR_FLAG)
    return found or env.get(CLUSTER_CIDR_ENV) or None
