"""HelmChart status: whether each chart is in its repository, as Clusternet's deployer reports it."""

from clusternet_nats.hub.helmcharts.controller import HelmChartController

__all__ = ["HelmChartController"]
