"""The root command's table of lazily imported commands matches what the command modules define."""

from __future__ import annotations

import pkgutil

import bcfleet.cli
from bcfleet.cli.main import COMMAND_MODULES, COMMANDS, module_commands

NOT_COMMAND_MODULES = {"main", "common", "demo_background", "demo_workloads"}


def test_every_command_module_is_in_the_table() -> None:
    modules = {m.name for m in pkgutil.iter_modules(bcfleet.cli.__path__)}
    assert set(COMMAND_MODULES) == modules - NOT_COMMAND_MODULES


def test_each_name_leads_to_the_command_its_module_defines() -> None:
    defined = {
        name: module_name
        for module_name in COMMAND_MODULES
        for name in module_commands(module_name)
    }
    assert defined == COMMANDS
