"""Helm charts without Helm's Go code: where a chart is (repo index, OCI tags) and what it renders.

Used by the hub (HelmChart status) and the agent's simulated clusters (`helm template`, cached).
"""
