"""Tables of the jobs area (defined by the jobs work; empty until then)."""
