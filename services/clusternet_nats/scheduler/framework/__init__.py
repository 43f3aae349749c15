"""The scheduling framework: extension-point interfaces, the plugin registry and the profile
runtime that runs plugins."""

from clusternet_nats.scheduler.framework.interfaces import MAX_SCORE, FilterPlugin, ScorePlugin, Status
from clusternet_nats.scheduler.framework.runtime import Diagnosis, Framework

__all__ = ["MAX_SCORE", "Diagnosis", "FilterPlugin", "Framework", "ScorePlugin", "Status"]
