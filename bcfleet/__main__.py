"""`python -m bcfleet` runs the fleet CLI."""

from bcfleet.cli.main import main

main()
