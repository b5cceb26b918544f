"""The ProviderImpl seam: Hetzner Cloud over httpx, and a local fake server speaking its JSON."""
