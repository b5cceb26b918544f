"""The service layer: one module per area; every call authorizes, then runs in one transaction."""
