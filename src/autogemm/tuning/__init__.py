"""The tuner: generator (each family's ``space``) -> evaluator -> search strategy, with checkpoints, the
FMA micro-benchmark, and the device profile as its product."""

from .budget import Budget
from .evaluation import Evaluator, GemmEvaluator, GemvEvaluator
from .objective import BudgetSpent, Objective
from .records import Outcome, Record
from .scope import SizeClass, default_budget, size_classes, supported_dtypes
from .strategies import DEFAULT_STRATEGY, STRATEGIES, get_strategy
from .tuner import TuneListener, tune

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Budget", "BudgetSpent", "Evaluator", "GemmEvaluator", "GemvEvaluator",
           "Objective", "Outcome", "Record", "SizeClass", "TuneListener", "default_budget", "get_strategy",
           "size_classes", "supported_dtypes", "tune"]
