"""Tables of the compute area (defined by the compute work; empty until then)."""
