"""FleetConfig: load with positions, validate, plan (pure), render, apply through the API."""
