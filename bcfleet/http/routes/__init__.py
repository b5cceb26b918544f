"""The route modules of the HTTP API, one per area; each exports OPERATIONS and SCHEMAS."""
