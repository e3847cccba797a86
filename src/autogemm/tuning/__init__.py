"""The tuner: generator (the codelet space) -> evaluator -> search strategy, with checkpoints, the FMA
micro-benchmark, and the device profile as its product."""

from .budget import Budget
from .evaluator import Evaluator
from .objective import BudgetSpent, Objective
from .records import Outcome, Record
from .simt_space import simt_space
from .space import Knob, SearchSpace
from .strategies import DEFAULT_STRATEGY, STRATEGIES, get_strategy
from .tuner import SizeClass, TuneListener, default_budget, size_classes, supported_dtypes, tune

__all__ = ["Budget", "BudgetSpent", "DEFAULT_STRATEGY", "Evaluator", "Knob", "Objective", "Outcome", "Record",
           "STRATEGIES", "SearchSpace", "SizeClass", "TuneListener", "default_budget", "get_strategy",
           "simt_space", "size_classes", "supported_dtypes", "tune"]
