"""The scheduling framework: extension-point interfaces and the profile that runs plugins."""

from clusternet_nats.scheduler.framework.interfaces import MAX_SCORE, FilterPlugin, ScorePlugin, Status
from clusternet_nats.scheduler.framework.runtime import Diagnosis, Framework

__all__ = ["MAX_SCORE", "Diagnosis", "FilterPlugin", "Framework", "ScorePlugin", "Status"]
