"""Downstream evaluation: POS tagging, NER and sentiment with fixed probes on frozen vectors.

Needs scikit-learn (the ``downstream`` extra) besides numpy and scipy; never torch.
"""

from ctx2static.eval.downstream.data import Task
from ctx2static.eval.downstream.probes import ProbeConfig
from ctx2static.eval.downstream.tasks import DownstreamTask, evaluate_downstream, load_downstream

__all__ = ["DownstreamTask", "ProbeConfig", "Task", "evaluate_downstream", "load_downstream"]
