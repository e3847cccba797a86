"""The package's one compiled part, optional: host copies on native threads (``autogemm.shares.native``).
A plain C library loaded with ctypes, so one build serves every Python; where it cannot be built,
autogemm copies on Python threads."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("autogemm.shares.native._copier", ["src/autogemm/shares/native/copier.c"],
                             extra_compile_args=["-O2", "-std=c11", "-pthread"], extra_link_args=["-pthread"],
                             optional=True)])
