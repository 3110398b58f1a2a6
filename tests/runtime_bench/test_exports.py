"""The package's public surface is deliberate: `__all__` names exactly what it exports."""

import runtime_bench


def test_the_package_exports_exactly_its_public_api():
    assert sorted(runtime_bench.__all__) == [
        "BenchConfig",
        "Combo",
        "Plan",
        "build_report",
        "render_markdown",
        "render_plot",
        "run_bench",
        "write_report",
    ]
    assert all(hasattr(runtime_bench, name) for name in runtime_bench.__all__)
