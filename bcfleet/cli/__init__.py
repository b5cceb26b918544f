"""The `fleet` command line: parse input, call the API, render text or JSON."""
