"""Capacity in SQL: guarded claims, GPU bookings and the preemption transaction."""
