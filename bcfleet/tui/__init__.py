"""The operator dashboard (`fleet tui`), reading through the API in thread workers."""
