"""The HTTP API (`fleet serve`) over the same service layer."""
