"""What every integration shares: imported lazily, and result lines that name the scenario's category."""

from __future__ import annotations

import subprocess
import sys

from simworld import NoopAgent, load_suite, run_one

HEAVY = ("inspect_ai", "gymnasium", "verifiers")


class TestLazyImports:
    def test_import_simworld_and_the_cli_load_no_integration(self) -> None:
        """`import simworld`, its CLI and `simworld --help` import none of inspect_ai, gymnasium or verifiers."""
        code = ("import sys\n"
                "import simworld, simworld.cli\n"
                "from typer.testing import CliRunner\n"
                "result = CliRunner().invoke(simworld.cli.app, ['--help'])\n"
                "assert result.exit_code == 0, result.output\n"
                "assert 'run' in result.output\n"
                f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]"

    def test_help_command_runs_without_the_extras(self) -> None:
        """`simworld --help` runs with every integration's package made unimportable."""
        code = ("import sys\n"
                f"for name in {HEAVY!r}: sys.modules[name] = None\n"
                "sys.argv = ['simworld', '--help']\n"
                "from simworld.cli import main\n"
                "try:\n    main()\nexcept SystemExit as exc:\n    sys.exit(exc.code)\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "Usage" in done.stdout

    def test_a_missing_extra_is_one_line_naming_the_install(self) -> None:
        """Importing an integration without its package raises MissingDependency naming pip install 'simworld[x]'."""
        for module, package, extra in (("simworld.inspect", "inspect_ai", "inspect"),
                                       ("simworld.gym", "gymnasium", "gym"),
                                       ("simworld.verifiers", "verifiers", "verifiers")):
            code = (f"import sys\nsys.modules[{package!r}] = None\n"
                    "from simworld.errors import MissingDependency\n"
                    f"try:\n    import {module}\nexcept MissingDependency as exc:\n    print(exc)\n")
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == (f"{module} requires the optional dependency {package}. "
                                           f"Install with: pip install 'simworld[{extra}]'")


class TestCategory:
    def test_result_lines_carry_the_category(self) -> None:
        """Every result line names its scenario's category, so consumers can group by it."""
        for scenario in load_suite(None, ["waive-small-fee", "recover-payment-after-crash"]):
            _, line = run_one(scenario, 0, NoopAgent)
            assert line["category"] == scenario.category
