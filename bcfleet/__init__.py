"""bcfleet: a compute-fleet control plane and declarative reconciler."""

__version__ = "0.1.0"
