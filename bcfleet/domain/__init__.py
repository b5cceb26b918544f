"""Pure deciders: shapes, fit math, placement, preemption, sizes, usage windows, policies. No I/O, no clock."""
