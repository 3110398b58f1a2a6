"""Schema migration (tier 3): migrate a real SQLite database; graded on held-out rows outside the container."""

from arena_kit.contract import Environment

ENVIRONMENT = Environment(
    id="schema-migration",
    taskset="schema_migration.taskset:SchemaMigrationTaskset",
    policies="schema_migration.policies:POLICIES",
    adversaries={
        "wrong_migrations": "schema_migration.adversaries:wrong_migrations",
        "mutation_survivors": "schema_migration.adversaries:mutation_survivors",
    },
)
"""Everything Arena wires this environment from (`arena_kit.contract.spec.Environment`): the hardened
box with no opt-out, and no grader terms besides the package itself (the toolset `sqlite_sandbox`
holds no graded material: the grader and the held-out rows are this package's)."""

__all__ = ["LeanEnv", "SchemaMigrationTaskset"]
"""What verifiers resolves: `ENVIRONMENT.exports()` (the preflight holds the two equal)."""


def __getattr__(name: str) -> object:
    # The taskset and the lean env pull in verifiers (~4 s); the model server and the grader import only
    # their own modules of this package, so both load when verifiers asks for them.
    return ENVIRONMENT.export(name)
