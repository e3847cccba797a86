"""The tuner: generator (each family's ``space``) -> evaluator -> search strategy, with checkpoints, the
FMA micro-benchmark, and the device profile as its product."""

from .budget import Budget
from .evaluator import Evaluator
from .objective import BudgetSpent, Objective
from .records import Outcome, Record
from .strategies import DEFAULT_STRATEGY, STRATEGIES, get_strategy
from .tuner import SizeClass, TuneListener, default_budget, size_classes, supported_dtypes, tune

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Budget", "BudgetSpent", "Evaluator", "Objective", "Outcome", "Record",
           "SizeClass", "TuneListener", "default_budget", "get_strategy", "size_classes", "supported_dtypes", "tune"]
