"""The package's compiled parts, both optional (without a C compiler autogemm runs without them): host
copies on native threads (``autogemm.shares.native``), a plain C library loaded with ctypes; and the
plainest call's host route in C (``autogemm.engine.routes._plain``), built against Python's limited API.
Each build serves every Python (3.10 on)."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("autogemm.shares.native._copier", ["src/autogemm/shares/native/copier.c"],
              extra_compile_args=["-O2", "-std=c11", "-pthread"], extra_link_args=["-pthread"], optional=True),
    Extension("autogemm.engine.routes._plain", ["src/autogemm/engine/routes/_plain.c"],
              extra_compile_args=["-O2"], py_limited_api=True, optional=True),
], options={"bdist_wheel": {"py_limited_api": "cp310"}})   # (the copier uses no Python API at all)
