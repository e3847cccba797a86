"""The package's version, one place for the package, its metadata, profiles and benchmark results."""

__version__ = "0.1.0"
