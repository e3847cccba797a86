"""Measuring autogemm against its peers (cuBLAS, CLBlast, numpy) in the same run."""
