"""`python -m clusternet_nats.scheduler` / `clusternet-scheduler`: run the scheduler."""

from pathlib import Path
from typing import Annotated

import typer
from clusternet_nats.runtime.options import with_common_options, with_replica_options
from clusternet_nats.runtime.service import CommonOptions, run
from clusternet_nats.scheduler.config import CONFIG_ENV, ConfigError, SchedulerConfiguration, parse_config
from clusternet_nats.scheduler.profiles import check_config
from clusternet_nats.scheduler.service import builder

app = typer.Typer(add_completion=False)


def read_config(path: Path | None) -> SchedulerConfiguration:
    """The file's configuration, or Clusternet's default profile when there is none."""
    if path is None:
        return SchedulerConfiguration()
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    return parse_config(text, str(path))


@app.command()
@with_common_options
@with_replica_options
def scheduler(
    common: CommonOptions,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            envvar=CONFIG_ENV,
            help="SchedulerConfiguration YAML: profiles by schedulerName, plugins enabled/disabled, score weights.",
        ),
    ] = None,
) -> None:
    """Binds Subscriptions to clusters and divides their replicas."""
    source = str(config or "default configuration")
    try:
        configuration = read_config(config)
        check_config(configuration, source=source)
    except ConfigError as err:
        raise typer.BadParameter(str(err), param_hint="--config") from None
    run("clusternet-scheduler", common, builder(configuration, source))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
