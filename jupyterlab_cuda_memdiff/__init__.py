"""jupyterlab-cuda-memdiff: the JupyterLab extension's Python distribution.

It ships the prebuilt labextension; the kernel-side helper lives in
kernel-helpers/ (the ``cuda_memdiff_kernel`` package).
"""

try:
    from ._version import __version__
except ImportError:  # running from a source tree that was never built
    import warnings

    warnings.warn("Importing 'jupyterlab_cuda_memdiff' outside a proper installation.", stacklevel=2)
    __version__ = "dev"


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyterlab-cuda-memdiff"}]
