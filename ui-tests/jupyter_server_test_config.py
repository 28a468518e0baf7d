"""Server configuration for the Galata tests (a temporary root folder, no token)."""
from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821

# CI and the development machines run as root.
c.ServerApp.allow_root = True  # noqa: F821
