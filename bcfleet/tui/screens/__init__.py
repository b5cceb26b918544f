"""The dashboard's screens: one per view, the host drill-down, and the help and confirm panels."""
