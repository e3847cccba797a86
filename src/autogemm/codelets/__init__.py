"""Kernel generators. Each family has a frozen parameter dataclass, ``space``, ``check`` and
``render``; helper kernels (pack, merge, scale) live in ``helpers``."""
