"""log_search: a budgeted MCP toolset over one incident's log store (SQLite + FTS5).

`log_search.store` builds and reads the stores (host side); `log_search.toolset` is the MCP server,
launched by verifiers as `python -m log_search.toolset`. Nothing is re-exported here, so that
launch does not import the server module twice. In that launch this init runs first, and defers
verifiers' re-export inits (`arena_kit.lazy_init`): the server imports only what it serves with.
"""

from arena_kit.verifiers_seam.package_inits import defer_for_server

defer_for_server(f"{__name__}.toolset")

__all__: list[str] = []
