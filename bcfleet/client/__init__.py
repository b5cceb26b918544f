"""The HTTP API from the outside: one client that the dashboard, the host agent and scripts share."""
