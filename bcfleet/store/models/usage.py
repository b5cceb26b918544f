"""Tables of the usage area (defined by the usage work; empty until then)."""
