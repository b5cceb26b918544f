"""The ProviderImpl seam: Hetzner Cloud over httpx, and a local fake server that speaks the same JSON."""
