"""Kernel-side helper of jupyterlab-cuda-memdiff.

This package runs inside the user's kernel (standard library only, torch when
present). It is the single source of the helper code: the frontend build
embeds it, and ``%load_ext cuda_memdiff_kernel`` loads it where it is
installed. Capture arrives with the capture issue; the package exists now so
the layout, packaging and tests have their place.
"""

__version__ = "0.1.0"
