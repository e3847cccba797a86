"""The OpenCL backend: the objects and commands the layers above use (``commands``, the only door to
pyopencl), its devices and their stable fingerprints (``device``, ``discovery``), one context and
in-order queue per device with its built programs (``context``), kernel arguments set only where they
changed (``arguments``), device buffers kept between calls (``buffer_pool``), builds in child processes
(``build_pool``, ``compile_worker``), memory checks (``memory``) and event timing (``timing``)."""
