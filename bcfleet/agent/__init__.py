"""The host agent: real inventory from sysfs and procfs, and a simulated agent for demos and tests."""
