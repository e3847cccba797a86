"""Evaluation: how a configuration's rate is measured, behind one interface (``Evaluator``): on a device
in this process (``GemmEvaluator``, ``GemvEvaluator``), in a worker process that a crashing or hanging
candidate cannot take the tuner down with (``IsolatedEvaluator`` over ``WorkerProcess``, spoken to in
the typed ``requests``), or from a finished checkpoint's records (``SimulatedEvaluator``). Beside them:
the float64 reference kept on the device, and the verification of finalists on awkward shapes."""

from .gemm import GemmEvaluator
from .gemv import GemvEvaluator
from .interface import Evaluator, discard_plan
from .isolated import IsolatedEvaluator, WorkerProcess
from .requests import EvaluatorSpec
from .simulated import SimulatedEvaluator

__all__ = ["Evaluator", "EvaluatorSpec", "GemmEvaluator", "GemvEvaluator", "IsolatedEvaluator", "SimulatedEvaluator",
           "WorkerProcess", "discard_plan"]
