"""Server configuration for the Galata tests (a temporary root folder, no token).

playwright.config.js puts demo/jupyter-path on JUPYTER_PATH, so besides the
ordinary python3 kernel (CPU torch: "torch without CUDA") the tests get the
kernel "cuda-memdiff-replay", which replays the demo notebook's session
recorded on an H200: badges show real GPU figures on a machine without a GPU.
"""

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821

# CI and the development machines run as root.
c.ServerApp.allow_root = True  # noqa: F821
