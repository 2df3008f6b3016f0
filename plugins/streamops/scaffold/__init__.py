"""``streamops new-job NAME``: a job of one's own, ready to run, test and deploy.

Writes ``<dir>/<name>/``: ``code/<module>.py`` (the job: ``build(ctx)`` with two stages),
``<name>.yaml`` (its spec, ``code: code``), ``<name>-deployment.yaml`` (a deployment to
``streamops apply -f``) and ``test_<module>.py`` (the job on a local Spark over a folder of
JSON files, its tables checked). The templates are under ``templates/``; ``docs/jobs.md``
explains what they promise.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from streamops.exceptions import ConfigError
from streamops_contract.names import check_name

TEMPLATES = Path(__file__).parent / "templates"


def module_name(name: str) -> str:
    """The job's Python module: its name with ``-`` as ``_``."""
    module = name.replace("-", "_")
    if not module.isidentifier() or module[0].isdigit():
        raise ConfigError(f"job name {name!r} does not make a Python module name; use "
                          "letters, digits, '-' and '_', starting with a letter")  # fmt: skip
    return module


def files(name: str, folder: Path) -> dict[Path, str]:
    """What ``create`` writes: path → text."""
    check_name("job", name)
    module = module_name(name)
    values = {"name": name, "module": module, "folder": str(folder)}

    def render(template: str) -> str:
        return Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(values)

    return {
        folder / "code" / f"{module}.py": render("job.py.tmpl"),
        folder / f"{name}.yaml": render("spec.yaml.tmpl"),
        folder / f"{name}-deployment.yaml": render("deployment.yaml.tmpl"),
        folder / f"test_{module}.py": render("test_job.py.tmpl"),
    }


def create(name: str, folder: Path, force: bool = False) -> list[Path]:
    """Write the job's files into ``folder``; refused if one exists (unless ``force``)."""
    planned = files(name, folder)
    existing = [p for p in planned if p.exists()]
    if existing and not force:
        raise ConfigError(f"not written: {', '.join(map(str, existing))} already exist(s) "
                          "(--force overwrites)")  # fmt: skip
    for path, text in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(planned)
