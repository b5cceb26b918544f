"""Widgets the dashboard's screens share: the keyed table, bars, prompt and the on/off switch."""
