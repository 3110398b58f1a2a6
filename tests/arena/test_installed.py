"""Arena finds environments by their verifiers ids (entry points), never by importing them."""

import sys

from arena.installed import environment_ids


def test_installed_environments_are_found_by_id_without_importing_them():
    assert environment_ids() == ["fault-localisation", "schema-migration"]
    assert all("-" in env for env in environment_ids())
